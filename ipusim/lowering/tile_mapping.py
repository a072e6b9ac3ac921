"""Where each tensor lies on an IPU's tiles, as Poplar's planners and mapping helpers place it.

A placement is a vector of bytes per tile over tiles ``0 .. len - 1`` (every mapping starts at
tile 0: poplin's start tile is 0 unless ``startTileMultiplier`` is set, which it is not by
default, and ``mapTensorLinearly`` fills tiles from tile 0; S: graphcore/poplibs
``lib/poplin/ConvPlan.cpp`` ``getStartTile``, ``lib/poputil/TileMapping.cpp``). The rules:

- **Matmuls and convolutions** (:func:`planned_output`): the output is cut by the planner's
  partition (batch, field rows, field columns, output channels and conv groups, ceil-sized
  pieces) into one block per tile group; a group is the ``kernel-rows x input-channel`` splits
  that made partial sums of that block, and the reduced block is spread over those tiles.
  Variables first read by a planned op are mapped linearly over the plan's tiles; the plan's
  temporary memory (operand slices and partials, bounded by ``availableMemoryProportion``) is
  held on each of its tiles while the op runs.
- **Element-wise ops** clone their operand's mapping (same tiles; the output spread linearly
  over them when its size differs).
- **Embedding tables** are mapped by rows (whole rows per tile, ``mapTensorLinearly`` with a
  row as the grain); other tensors (inputs, reductions, gathers, copies, biases) linearly from
  tile 0 with a grain of :data:`~ipusim.cost.constants.TILE_MAPPING_GRAIN_BYTES`.
- Optimizer state and gradient accumulators follow their variable's tiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ipusim.cost import amp
from ipusim.cost import constants as C
from ipusim.cost.compute import PlannerOptions, op_plan
from ipusim.graph.graph import Node
from ipusim.graph.spec import FLOAT_DTYPES, TensorSpec
from ipusim.graph.variable import Variable
from ipusim.hardware.specs import IPUSpec

#: Ops whose output takes its operand's mapping (Poplar clones the operand for the output).
_FOLLOWS_INPUT = frozenset({"elementwise"})
_EMBEDDING_OPS = frozenset({"embedding_lookup"})


@dataclass(frozen=True, slots=True, eq=False)
class Placement:
    """Bytes per tile of one tensor: ``bytes_per_tile[i]`` on tile ``(start + i) % tiles``.

    Attributes:
        start: the first tile.
        bytes_per_tile: read-only int64 bytes on each tile from ``start`` (at most ``tiles``).
    """

    start: int
    bytes_per_tile: np.ndarray

    @property
    def total(self) -> int:
        return int(self.bytes_per_tile.sum())

    @property
    def width(self) -> int:
        """Tiles holding some of the tensor."""
        return int(np.count_nonzero(self.bytes_per_tile))

    def add_to(self, live: np.ndarray, sign: int = 1) -> None:
        """Add (``sign`` 1) or remove (-1) the tensor's bytes in ``live`` (bytes per tile)."""
        vec = self.bytes_per_tile
        tiles = len(live)
        k = min(len(vec), tiles)
        head = min(k, tiles - self.start)
        live[self.start : self.start + head] += sign * vec[:head]
        if head < k:
            live[: k - head] += sign * vec[head:k]

    def on(self, tile: int, tiles: int) -> int:
        """Bytes on ``tile`` of an IPU of ``tiles`` tiles."""
        i = (tile - self.start) % tiles
        return int(self.bytes_per_tile[i]) if i < len(self.bytes_per_tile) else 0


def _frozen(vector: np.ndarray) -> np.ndarray:
    vector.setflags(write=False)
    return vector


@lru_cache(maxsize=16384)
def linear(nbytes: int, tiles: int, grain: int = C.TILE_MAPPING_GRAIN_BYTES) -> np.ndarray:
    """``mapTensorLinearly``: ``nbytes`` in grains of ``grain`` bytes, the same whole number of
    grains per tile (the fewest that cover the tensor with ``tiles`` tiles) from tile 0.

    Returns:
        Read-only int64 bytes per tile (length ``tiles``); it sums to ``nbytes``.
    """
    if tiles <= 0 or grain <= 0:
        raise ValueError(f"tiles ({tiles}) and grain ({grain}) must be positive")
    out = np.zeros(tiles, dtype=np.int64)
    if nbytes > 0:
        grains = -(-nbytes // grain)
        per_tile = -(-grains // tiles) * grain
        full, rest = divmod(nbytes, per_tile)
        out[:full] = per_tile
        if rest:
            out[full] = rest
    return _frozen(out)


@lru_cache(maxsize=4096)
def uniform(bytes_per_tile: int, tiles: int) -> np.ndarray:
    """``bytes_per_tile`` on each of ``tiles`` tiles (temporaries, code, receive buffers)."""
    return _frozen(np.full(max(tiles, 0), max(bytes_per_tile, 0), dtype=np.int64))


def pieces(size: int, splits: int) -> np.ndarray:
    """Sizes of ``splits`` ceil-sized pieces of ``size`` (the last ones shorter or empty)."""
    step = -(-size // splits)
    return np.clip(size - step * np.arange(splits), 0, step)


@lru_cache(maxsize=8192)
def planned_output(plan: amp.ConvPlan, element_bytes: int) -> np.ndarray:
    """Bytes per tile of a planned op's output (see the module docstring).

    The tiles of a plan are numbered with the reduction splits (kernel rows x input channels)
    innermost, then field columns, rows, batch, output channels and conv groups.

    Args:
        plan: the planner's choice (its ``problem`` gives the dimensions).
        element_bytes: bytes of one output element.

    Returns:
        Read-only int64 bytes per tile (length ``plan.tiles``).
    """
    problem = plan.problem
    if problem is None:
        raise ValueError("the plan carries no problem; it was not made by amp.plan_conv")
    bs, hs, ws, ks, ics, ocs, gs = plan.splits
    group = plan.out_chans_per_group
    groups_of_channels = -(-problem.cout // group)
    channels_per_split = -(-groups_of_channels // ocs) * group
    channels = np.clip(problem.cout - channels_per_split * np.arange(ocs), 0, channels_per_split)
    blocks = np.einsum(
        "g,o,b,h,w->gobhw",
        pieces(problem.groups, gs),
        channels,
        pieces(problem.batch, bs),
        pieces(problem.out_h, hs),
        pieces(problem.out_w, ws),
    ).ravel()
    depth = ks * ics
    base, extra = np.divmod(blocks, depth)
    per_tile = base[:, None] + (np.arange(depth)[None, :] < extra[:, None])
    return _frozen(per_tile.ravel().astype(np.int64) * element_bytes)


def as_precision(spec: TensorSpec, precision: str) -> TensorSpec:
    """``spec`` as the run holds it: floats in half precision unless the run is fp32."""
    if precision != "fp32" and spec.dtype in FLOAT_DTYPES:
        return spec.with_dtype("float16")
    return spec


def bytes_at(spec: TensorSpec, precision: str) -> int:
    """Bytes of ``spec`` at the run's precision (floats at 2 bytes below fp32)."""
    return as_precision(spec, precision).nbytes


class TileMapper:
    """The tile mapping of one step graph on one IPU type: plans of its matmul-like ops and the
    placement of every variable and value.

    Args:
        nodes: the step's nodes in program order (sources included).
        ipu: the ``IPUSpec``.
        precision: the run's precision.
        planner: the PopLibs options of matmuls and convolutions.
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        ipu: IPUSpec,
        precision: str,
        planner: PlannerOptions | None = None,
    ) -> None:
        self.chip = ipu
        self.tiles = int(ipu.tiles)
        self.precision = precision
        self.plans: dict[int, amp.ConvPlan] = {}
        #: Receive-buffer bytes per tile the IPU reserves for exchanges (lowering sets it).
        self.receive_per_tile = 0
        self._temp_bound: dict[int, int] = {}
        options = planner or PlannerOptions()
        for node in nodes:
            if node.op.name in ("placeholder", "variable", "constant"):
                continue
            ins = [as_precision(s, precision) for s in node.in_specs]
            outs = [as_precision(s, precision) for s in node.out_specs]
            plan = op_plan(node.op.name, ins, outs, node.attrs, ipu, precision, planner)
            if plan is not None:
                self.plans[node.id] = plan
                proportion = options.for_op(node.op.name, precision)[1]
                self._temp_bound[node.id] = int(proportion * ipu.sram_bytes_per_tile)
        self._next_tile = 0
        self._variables: dict[int, Placement] = {}
        for node in nodes:
            for k, sym in enumerate(node.inputs):
                if sym.node.op.name == "variable":
                    var = sym.node.attrs["variable"]
                    if id(var) not in self._variables:
                        self._variables[id(var)] = self._variable_placement(node, k, var)

    def linear(self, nbytes: int, grain: int = C.TILE_MAPPING_GRAIN_BYTES) -> Placement:
        """A tensor mapped linearly by IPU TensorFlow: ``mapTensorLinearly``, rotated to start
        where the previous such tensor ended unless it covers every tile (S:
        graphcore/tensorflow ``poplar/driver/tools/mapping_helper.cc``, ``MapTensorLinearly``
        with the graph's ``linear_mapping_state``)."""
        vector = linear(nbytes, self.tiles, grain)
        width = int(np.count_nonzero(vector))
        if width >= self.tiles or width == 0:
            return Placement(0, vector)
        start = self._next_tile
        self._next_tile = (start + width) % self.tiles
        return Placement(start, vector)

    def _variable_placement(self, consumer: Node, index: int, variable: Variable) -> Placement:
        nbytes = bytes_at(variable.spec, self.precision)
        plan = self.plans.get(consumer.id)
        if plan is not None:
            return Placement(0, linear(nbytes, plan.tiles))
        shape = variable.spec.shape
        if consumer.op.name in _EMBEDDING_OPS and index == 0 and len(shape) >= 1 and shape[0]:
            return self.linear(nbytes, max(nbytes // shape[0], 1))
        return self.linear(nbytes)

    def variable(self, variable: Variable, nbytes: int | None = None) -> Placement:
        """Placement of a variable (or of ``nbytes`` on its tiles: its optimizer state, its
        accumulator)."""
        own = self._variables.get(id(variable))
        full = bytes_at(variable.spec, self.precision)
        if own is None:
            own = self.linear(full)
            self._variables[id(variable)] = own
        if nbytes is None or nbytes == full:
            return own
        return Placement(own.start, linear(nbytes, max(own.width, 1)))

    def _plan_of(self, node: Node) -> amp.ConvPlan | None:
        # A recomputed clone (lowering/recompute.py) has id -(original id) - 1 and its plan.
        return self.plans.get(node.id if node.id >= 0 else -node.id - 1)

    def value(self, node: Node, nbytes: int, inputs: Sequence[Placement | None]) -> Placement:
        """Placement of an output of ``node`` of ``nbytes`` bytes, given its inputs'."""
        plan = self._plan_of(node)
        if plan is not None and node.outputs:
            size = node.outputs[0].spec.size
            return Placement(0, planned_output(plan, max(nbytes // size, 1) if size else 1))
        if node.op.kind in _FOLLOWS_INPUT:
            known = [v for v in inputs if v is not None]
            same = next((v for v in known if v.total == nbytes), None)
            if same is not None:
                return same
            largest = max(known, key=lambda v: v.total, default=None)
            if largest is not None and largest.total >= nbytes:  # a narrowing cast
                return Placement(largest.start, linear(nbytes, max(largest.width, 1)))
        return self.linear(nbytes)  # a broadcast or a new layout: mapped linearly

    def temporary(self, node: Node) -> Placement | None:
        """The planned op's temporary memory per tile while it runs (None for other ops).

        It is the plan's temporary bytes per tile, at most ``availableMemoryProportion`` of the
        tile: poplin holds that bound per tile; our planner's estimate of a plan can pass it
        after the planner's retries, and the excess is counted as what it is, an estimate's
        approximation, not memory (E).
        """
        plan = self._plan_of(node)
        if plan is None:
            return None
        bound = self._temp_bound[node.id if node.id >= 0 else -node.id - 1]
        held = min(plan.temp_bytes, bound)
        # The operand slices a tile receives for this op land in these temporaries: Poplar's
        # exchange writes straight into the destination variables, whose space the IPU's
        # exchange-buffer item (its largest exchange's receive buffers, ``receive_per_tile`` a
        # tile, set by lowering) already holds. Count them once (E).
        received = min(plan.exchange_bytes, self.receive_per_tile)
        return Placement(0, uniform(max(held - received, 0), plan.tiles))
