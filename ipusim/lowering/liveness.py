"""Liveness over the program: which buffers are alive at each program step, on which tiles.

A *program step* is one op of an IPU's program, in the order it runs (a pipelined IPU runs each
of its stages' forward ops, then their backward ops). Like PopVision's liveness report, what an
IPU holds splits into **always-live** memory (variables, optimizer state, gradient accumulators,
code and vertex state, exchange buffers: allocated for the whole program) and **not-always-live**
memory that changes from step to step: the working activations (a buffer lives from the op that
writes it to its last reader), the temporary memory of matmuls and convolutions while they run,
and the pipeline stash (the micro-batches in flight, held for the whole pipeline run; under
the Sequential schedule a stage's stash only from that stage on).

Per-tile memory at a step is the sum over what is live there of each item's bytes on that tile
(:mod:`ipusim.lowering.tile_mapping`); the IPU's worst point is the step and tile where that sum
is largest, which need not be the step where the IPU as a whole holds most.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ipusim.graph.graph import Node, Symbol
from ipusim.graph.variable import Variable
from ipusim.lowering.tile_mapping import Placement, TileMapper

#: Categories alive for the whole program.
ALWAYS_LIVE = ("weights", "optimizer-state", "gradient-accumulators", "code", "exchange-buffers")
#: Categories whose bytes change over the program.
NOT_ALWAYS_LIVE = ("stash", "activations", "temporaries")
LIVENESS_CATEGORIES = ALWAYS_LIVE + NOT_ALWAYS_LIVE

#: Ops whose output is a view of their first input (Poplar reshapes, slices and dimShuffles
#: tensors without copying): they allocate nothing and keep the input alive while they are used.
VIEW_OPS = frozenset(
    {
        "reshape",
        "reshape_like",
        "expand_dims",
        "squeeze",
        "identity",
        "recomputation_checkpoint",
        "stop_gradient",
        "slice",
        "transpose",
        "unstack_time",  # popnn slices the sequence in place (RnnSlice)
        "rnn_carry",
    }
)

#: Inputs ops read only for their shape (gradients of views and reductions): reading them
#: does not keep their data alive.
SHAPE_ONLY_INPUTS = {
    "reshape_like": (1,),
    "broadcast_like": (1,),
    "reduce_mean_grad": (1,),
    "rnn_zeros": (0,),
}

_NO_BUFFER = ("variable", "constant")

#: Last step of an item live to the end of the program.
TO_THE_END = 1 << 62


def _last_uses(nodes: Sequence[Node], fetches: Sequence[Symbol]) -> dict[tuple[int, int], int]:
    position = {node.id: i for i, node in enumerate(nodes)}
    last: dict[tuple[int, int], int] = {}
    for node in nodes:
        shape_only = SHAPE_ONLY_INPUTS.get(node.op.name, ())
        for k, sym in enumerate(node.inputs):
            if k in shape_only:
                continue
            key = (sym.node.id, sym.index)
            last[key] = max(last.get(key, -1), position[node.id])
    for sym in fetches:
        last[(sym.node.id, sym.index)] = len(nodes)
    return last


@dataclass(slots=True)
class Buffer:
    """One allocation of working memory.

    Attributes:
        name: the node that allocated it.
        bytes: its size.
        first / last: positions (in the node list) of its allocation and of its last reader.
        tiles: its tile mapping (None without one).
    """

    name: str
    bytes: int
    first: int
    last: int
    tiles: Placement | None = None


#: ``place(node, nbytes, input placements) -> placement`` of a new buffer.
Placer = Callable[[Node, int, Sequence[Placement | None]], Placement]


def buffer_lifetimes(
    nodes: Sequence[Node],
    fetches: Sequence[Symbol],
    bytes_of: dict[tuple[int, int], int],
    place: Placer | None = None,
    variable_tiles: Callable[[Variable], Placement] | None = None,
    external: dict[tuple[int, int], Placement] | None = None,
) -> list[Buffer]:
    """The buffers ``nodes`` allocate when run in order, with their lifetimes.

    A value lives in a buffer from the node that produces it until the last reader of the buffer
    has run; fetched values stay alive to the end. Views (:data:`VIEW_OPS`) share their input's
    buffer. An element-wise op writes in place over its first operand when that operand's buffer
    is read by nobody later and is large enough (Poplar's in-place rule: an op may overwrite
    operand 0 when every other user of it has already run). Variable reads and constants are
    not buffers (they are weights).

    Args:
        nodes: the nodes in program order.
        fetches: values kept to the end.
        bytes_of: (node id, output index) -> bytes.
        place: gives each new buffer its tile mapping (None: no mapping).
        variable_tiles: the tile mapping of a variable read (for ``place``'s inputs).
        external: tile mappings of values read from outside ``nodes`` (another stage's, the
            infeed's).
    """
    last = _last_uses(nodes, fetches)
    buffer: dict[tuple[int, int], int] = {}  # value -> buffer index
    out: list[Buffer] = []
    for i, node in enumerate(nodes):
        if node.op.name in _NO_BUFFER:
            continue
        first_in = node.inputs[0] if node.inputs else None
        source = buffer.get((first_in.node.id, first_in.index)) if first_in is not None else None
        for sym in node.outputs:
            key = (node.id, sym.index)
            nbytes = bytes_of.get(key, 0)
            value_end = last.get(key, i)
            if node.op.name in VIEW_OPS and source is not None:
                buffer[key] = source
                out[source].last = max(out[source].last, value_end)
                continue
            reuse = source is not None and (
                node.op.kind == "elementwise"
                and len(node.outputs) == 1
                and out[source].last == i
                and out[source].bytes >= nbytes
            )
            if reuse and source is not None:
                buffer[key] = source
                out[source].last = value_end
                continue
            tiles = None
            if place is not None:
                inputs = [
                    _input_tiles(s, buffer, out, variable_tiles, external) for s in node.inputs
                ]
                tiles = place(node, nbytes, inputs)
            buffer[key] = len(out)
            out.append(Buffer(node.name, nbytes, i, value_end, tiles))
    return out


def _input_tiles(
    sym: Symbol,
    buffer: dict[tuple[int, int], int],
    out: list[Buffer],
    variable_tiles: Callable[[Variable], Placement] | None,
    external: dict[tuple[int, int], Placement] | None = None,
) -> Placement | None:
    b = buffer.get((sym.node.id, sym.index))
    if b is not None:
        return out[b].tiles
    if external and (sym.node.id, sym.index) in external:
        return external[(sym.node.id, sym.index)]
    if sym.node.op.name == "variable" and variable_tiles is not None:
        return variable_tiles(sym.node.attrs["variable"])
    return None


def peak_live_bytes(
    nodes: Sequence[Node], fetches: Sequence[Symbol], bytes_of: dict[tuple[int, int], int]
) -> tuple[int, int]:
    """Peak bytes of buffers alive at once while ``nodes`` run in order, and the node at the
    peak (the rules of :func:`buffer_lifetimes`)."""
    live = np.zeros(len(nodes) + 1, dtype=np.int64)
    for b in buffer_lifetimes(nodes, fetches, bytes_of):
        live[b.first] += b.bytes
        live[min(b.last, len(nodes) - 1) + 1] -= b.bytes
    running = np.cumsum(live[: len(nodes)])
    if not len(running):
        return 0, 0
    at = int(np.argmax(running))
    return max(int(running[at]), 0), at


@dataclass(frozen=True, slots=True)
class LiveItem:
    """Something that occupies memory over a range of program steps.

    Attributes:
        name: what it is (a variable, a node's output, ``matmul temporaries``, ...).
        category: one of :data:`LIVENESS_CATEGORIES`.
        bytes: its size on the IPU.
        first / last: the program steps it is live over (inclusive); always-live items cover
            every step.
        tiles: where it lies (sums to ``bytes``).
    """

    name: str
    category: str
    bytes: int
    first: int
    last: int
    tiles: Placement


@dataclass(frozen=True, eq=False)
class IPULiveness:
    """Live memory of one IPU over its program, and its per-tile map at its worst point.

    Attributes:
        ipu: IPU index.
        step_names / step_phases / step_stages: each program step's op, trace phase and stage.
        by_category: category -> int64 bytes per program step (every category of
            :data:`LIVENESS_CATEGORIES`).
        peak_step: the step where the IPU holds most (-1 without steps).
        peak_items: what is live there (name, category, bytes), largest first.
        tile_bytes: bytes per tile at ``tile_peak_step`` (length = tiles).
        resident_tile_bytes: bytes per tile of what is live over the whole program.
        tile_peak_step: the step where some tile holds most.
        peak_tile: that tile.
        peak_tile_items: what that tile holds there (name, category, bytes on the tile),
            largest first.
    """

    ipu: int
    step_names: tuple[str, ...]
    step_phases: tuple[str, ...]
    step_stages: tuple[int, ...]
    by_category: dict[str, np.ndarray]
    peak_step: int
    peak_items: tuple[tuple[str, str, int], ...]
    tile_bytes: np.ndarray
    tile_peak_step: int
    peak_tile: int
    peak_tile_items: tuple[tuple[str, str, int], ...] = field(default=())
    resident_tile_bytes: np.ndarray | None = None

    @property
    def total(self) -> np.ndarray:
        """Live bytes per program step."""
        total: np.ndarray = np.sum([self.by_category[c] for c in LIVENESS_CATEGORIES], axis=0)
        return total

    def step_label(self, step: int) -> str:
        """``"<op> (step k, <phase>)"`` of a program step."""
        if not 0 <= step < len(self.step_names):
            return "program start"
        return f"{self.step_names[step]} (step {step}, {self.step_phases[step]})"


def analyse(
    ipu: int,
    steps: Sequence[tuple[str, str, int]],
    items: Sequence[LiveItem],
    tiles: int,
    keep: int = 10,
) -> IPULiveness:
    """Live bytes per step and category, and the per-tile map at the worst tile's worst step.

    Args:
        ipu: IPU index.
        steps: (op name, phase, stage) of each program step.
        items: everything the IPU holds, with the steps it is live over.
        tiles: tiles of the IPU.
        keep: how many items to list at the peaks.
    """
    n = len(steps)
    diff = {c: np.zeros(n + 1, dtype=np.int64) for c in LIVENESS_CATEGORIES}
    for item in items:
        first, last = max(item.first, 0), min(item.last, n - 1)
        if first <= last:
            diff[item.category][first] += item.bytes
            diff[item.category][last + 1] -= item.bytes
    by_category = {c: np.cumsum(d[:n]) for c, d in diff.items()}
    total = np.sum([by_category[c] for c in LIVENESS_CATEGORIES], axis=0) if n else np.zeros(0)
    peak_step = int(np.argmax(total)) if n else -1
    starting: dict[int, list[LiveItem]] = {}
    ending: dict[int, list[LiveItem]] = {}
    live = np.zeros(tiles, dtype=np.int64)
    for item in items:
        if item.last >= TO_THE_END:
            item.tiles.add_to(live, 1)
        elif item.first <= item.last and item.first < n:
            starting.setdefault(max(item.first, 0), []).append(item)
            ending.setdefault(min(item.last, n - 1), []).append(item)
    resident_tiles = live.copy()
    resident_tiles.setflags(write=False)
    best, best_step, best_tiles = int(live.max(initial=0)), -1, live.copy()
    for s in range(n):
        for item in starting.get(s, ()):
            item.tiles.add_to(live, 1)
        top = int(live.max(initial=0))
        if top > best or best_step < 0:
            best, best_step, best_tiles = top, s, live.copy()
        for item in ending.get(s, ()):
            item.tiles.add_to(live, -1)
    peak_tile = int(np.argmax(best_tiles)) if tiles else -1

    def live_at(step: int) -> list[LiveItem]:
        return [i for i in items if i.first <= step <= i.last]

    at_peak = sorted(live_at(peak_step), key=lambda i: (-i.bytes, i.name))
    on_tile = [
        (i.name, i.category, i.tiles.on(peak_tile, tiles))
        for i in live_at(best_step)
        if peak_tile >= 0 and i.tiles.on(peak_tile, tiles) > 0
    ]
    on_tile.sort(key=lambda t: (-t[2], t[0]))
    best_tiles.setflags(write=False)
    return IPULiveness(
        ipu=ipu,
        step_names=tuple(s[0] for s in steps),
        step_phases=tuple(s[1] for s in steps),
        step_stages=tuple(s[2] for s in steps),
        by_category=by_category,
        peak_step=peak_step,
        peak_items=tuple((i.name, i.category, i.bytes) for i in at_peak[:keep]),
        tile_bytes=best_tiles,
        tile_peak_step=best_step,
        peak_tile=peak_tile,
        peak_tile_items=tuple(on_tile[:keep]),
        resident_tile_bytes=resident_tiles,
    )


def resident(name: str, category: str, nbytes: int, tiles: Placement) -> LiveItem:
    """An item live over the whole program (``category`` as the liveness report names it)."""
    return LiveItem(name, category, int(nbytes), 0, TO_THE_END, tiles)


def live_from(name: str, category: str, nbytes: int, first: int, tiles: Placement) -> LiveItem:
    """An item live from program step ``first`` to the end (not resident: before ``first`` it
    holds nothing)."""
    return LiveItem(name, category, int(nbytes), first, TO_THE_END - 1, tiles)


def program_items(
    nodes: Sequence[Node],
    fetches: Sequence[Symbol],
    bytes_of: dict[tuple[int, int], int],
    mapper: TileMapper,
    phase_of: Callable[[Node], str],
    stage: int = 0,
    first_step: int = 0,
    external_bytes: Callable[[Symbol], int] | None = None,
) -> tuple[list[tuple[str, str, int]], list[LiveItem]]:
    """Program steps of ``nodes`` (run in order from step ``first_step``) and the working
    buffers and temporaries live over them.

    Args:
        nodes: the nodes in program order (sources included; variables and constants are not
            steps).
        fetches: values kept to the end.
        bytes_of: (node id, output index) -> bytes.
        mapper: a :class:`~ipusim.lowering.tile_mapping.TileMapper`.
        phase_of: the trace phase of a node.
        stage: the pipeline stage the nodes belong to.
        first_step: the step index of the first of them.
        external_bytes: bytes of a value read from outside ``nodes`` (default: ``bytes_of``).
    """
    position_step = np.full(len(nodes) + 1, -1, dtype=np.int64)
    steps: list[tuple[str, str, int]] = []
    items: list[LiveItem] = []
    for i, node in enumerate(nodes):
        if node.op.name in _NO_BUFFER:
            continue
        position_step[i] = first_step + len(steps)
        steps.append((node.name, phase_of(node), stage))
        temp = mapper.temporary(node)
        if temp is not None and temp.total:
            step = int(position_step[i])
            name = f"{node.name} temporaries"
            items.append(LiveItem(name, "temporaries", temp.total, step, step, temp))
    last_step = first_step + len(steps) - 1
    # A position without a step (a variable read) maps to the next step that has one.
    position_step[len(nodes)] = last_step
    for i in range(len(nodes) - 1, -1, -1):
        if position_step[i] < 0:
            position_step[i] = position_step[i + 1]
    # Values read from outside these nodes (the infeed, another stage's activations and
    # gradients) are received into buffers that live from their first reader to their last.
    inside = {node.id for node in nodes}
    readers: dict[tuple[int, int], list[int]] = {}
    symbols: dict[tuple[int, int], Symbol] = {}
    for i, node in enumerate(nodes):
        shape_only = SHAPE_ONLY_INPUTS.get(node.op.name, ())
        for k, sym in enumerate(node.inputs):
            if sym.node.id in inside or sym.node.op.name in _NO_BUFFER or k in shape_only:
                continue
            key = (sym.node.id, sym.index)
            readers.setdefault(key, []).append(i)
            symbols[key] = sym
    external: dict[tuple[int, int], Placement] = {}
    for key, at in readers.items():
        nbytes = int(external_bytes(symbols[key]) if external_bytes else bytes_of.get(key, 0))
        if nbytes <= 0:
            continue
        external[key] = mapper.linear(nbytes)
        first, last = int(position_step[min(at)]), int(position_step[max(at)])
        name = f"{symbols[key].node.name} (received)"
        items.append(LiveItem(name, "activations", nbytes, first, last, external[key]))
    lifetimes = buffer_lifetimes(nodes, fetches, bytes_of, mapper.value, mapper.variable, external)
    for b in lifetimes:
        if b.bytes <= 0:
            continue
        assert b.tiles is not None  # ``place`` maps every buffer
        first = int(position_step[min(b.first, len(nodes))])
        last = int(position_step[min(b.last, len(nodes))])
        items.append(LiveItem(b.name, "activations", b.bytes, first, max(first, last), b.tiles))
    return steps, items


def working_peak(items: Sequence[LiveItem], first_step: int, steps: int) -> int:
    """Most bytes of activations and temporaries live at one step of ``first_step ..
    first_step + steps - 1``."""
    if steps <= 0:
        return 0
    diff = np.zeros(steps + 1, dtype=np.int64)
    for item in items:
        if item.category in ("activations", "temporaries"):
            diff[item.first - first_step] += item.bytes
            diff[item.last - first_step + 1] -= item.bytes
    return int(np.cumsum(diff[:steps]).max(initial=0))
