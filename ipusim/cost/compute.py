"""Cycles of one op on one IPU: its compute sets, the exchange that feeds them, and their syncs.

An op of the graph becomes what Poplar would compile it to:

- **Matrix products and convolutions** (``matmul``, ``batch_matmul``, ``conv2d`` and its two
  gradients) are planned on the AMP units by :mod:`ipusim.cost.amp`, the way poplin plans them:
  partition over tiles, AMP vertex cycles, exchange of inputs, weights and partials, reduction
  stages, rearrangements.
- **Vector work** (element-wise ops, reductions, normalisation, softmax, pooling, gathers,
  copies, optimizer updates) is costed by :mod:`ipusim.cost.vector` with popops / popnn's per-
  element figures and vertex overheads on the busiest tile.
- Every compute set ends with the on-chip sync, and every exchange phase pays a fixed setup
  (:data:`EXCHANGE_SETUP_CYCLES`); exchange moves 4 bytes per cycle per tile.

The result is one :class:`SuperstepCycles` per op: compute, exchange and sync cycles of the
busiest tile, summed over the op's compute sets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ipusim.cost import amp, rnn, vector
from ipusim.cost.conv_nd import CONV3D, RESIZES, conv3d_problem, resize_problem
from ipusim.cost.shapes import dims
from ipusim.errors import ConfigurationError
from ipusim.graph.op import OpCost
from ipusim.graph.spec import TensorSpec
from ipusim.hardware.specs import IPUSpec

#: Fixed cycles of an exchange phase (S: graphcore/poplibs ``lib/popnn/CTCLossPlan.cpp``: "a
#: fixed overhead which usually dominates the exchange cost", 100 cycles).
EXCHANGE_SETUP_CYCLES = 100

#: Ops that are views: no compute set (Poplar reshapes and slices tensors without copying).
VIEWS = frozenset(
    {"reshape", "reshape_like", "expand_dims", "squeeze", "identity", "stop_gradient", "slice"}
)

_BROADCASTS = frozenset(
    {
        "broadcast_to",
        "broadcast_like",
        "tile",
        "reduce_mean_grad",
        "reduce_max_grad",
        "global_avg_pool2d_grad",
    }
)
_COPIES = frozenset(
    {"concat", "pad", "unpad", "one_hot", "reverse", "random_crop", "random_crop_grad"}
)
_REDUCTIONS = frozenset(
    {
        "reduce_sum",
        "reduce_mean",
        "reduce_max",
        "sum_to_shape",
        "bias_add_grad",
        "global_avg_pool2d",
        "argmax",
    }
)
_SOFTMAX_FWD = frozenset(
    {
        "softmax",
        "log_softmax",
        "sparse_softmax_cross_entropy_with_logits",
        "softmax_cross_entropy_with_logits",
    }
)
_SOFTMAX_BWD = frozenset(
    {
        "softmax_grad",
        "log_softmax_grad",
        "sparse_softmax_cross_entropy_grad",
        "softmax_cross_entropy_grad",
    }
)
_POOLS = frozenset(
    {
        "max_pool2d",
        "avg_pool2d",
        "max_pool2d_grad",
        "avg_pool2d_grad",
        "max_pool3d",
        "avg_pool3d",
        "max_pool3d_grad",
        "avg_pool3d_grad",
    }
)
_AMP_OPS = (
    frozenset(
        {"matmul", "batch_matmul", "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter"}
    )
    | CONV3D
    | RESIZES
)
#: Convolutions whose channels split into groups (``Conv2D(groups=)``, depthwise), planned as
#: poplin plans them: one conv group per group, channels per group as the filters say.
_GROUPED_CONVS = {
    "grouped_conv2d": "conv2d",
    "grouped_conv2d_backprop_input": "conv2d_backprop_input",
    "grouped_conv2d_backprop_filter": "conv2d_backprop_filter",
    "depthwise_conv2d": "conv2d",
    "depthwise_conv2d_backprop_input": "conv2d_backprop_input",
    "depthwise_conv2d_backprop_filter": "conv2d_backprop_filter",
}


#: An op's (input specs, output specs).
_Specs = tuple[Sequence[TensorSpec], Sequence[TensorSpec]]


def _ungrouped(op: str, specs: _Specs, attrs: dict[str, Any]) -> tuple[str, int, _Specs]:
    """A grouped op as its plain counterpart on one group: (op, groups, per-group specs).

    ``specs`` are the op's (input specs, output specs) with the filters HWIO per group:
    grouped filters are ``(Kh, Kw, Cin/G, Cout)``; a depthwise filter ``(Kh, Kw, C, M)`` is C
    groups of one input channel and M outputs.
    """
    ins, outs = specs
    filt = outs[0] if op.endswith("filter") else ins[1]
    if op.startswith("depthwise"):
        kh, kw, groups, mult = dims(filt)
        per_group_filter = TensorSpec((kh, kw, 1, mult), filt.dtype)
    else:
        groups = int(attrs["groups"])
        kh, kw, cin_g, cout = dims(filt)
        per_group_filter = TensorSpec((kh, kw, cin_g, cout // groups), filt.dtype)

    def per_group(spec: TensorSpec) -> TensorSpec:
        shape = dims(spec)
        return TensorSpec((*shape[:3], shape[3] // groups), spec.dtype)

    plain = _GROUPED_CONVS[op]
    if plain != "conv2d_backprop_filter":  # the forward pass and the input gradient
        return plain, groups, ([per_group(ins[0]), per_group_filter], [per_group(outs[0])])
    return plain, groups, ([per_group(ins[0]), per_group(ins[1])], [per_group_filter])


@dataclass(frozen=True, slots=True)
class PlannerOptions:
    """The PopLibs options of matrix products and convolutions that change their plans.

    Attributes:
        conv_memory_proportion / matmul_memory_proportion: ``availableMemoryProportion``: share
            of a tile's memory an op's temporary data may use (PopLibs default 0.6).
        conv_partials / matmul_partials: ``partialsType`` (``"half"`` or ``"float"``), or None to
            follow the run's precision (``fp16.16`` half partials, ``fp16.32`` and ``fp32``
            float).
    """

    conv_memory_proportion: float = amp.DEFAULT_MEMORY_PROPORTION
    matmul_memory_proportion: float = amp.DEFAULT_MEMORY_PROPORTION
    conv_partials: str | None = None
    matmul_partials: str | None = None

    @classmethod
    def from_poplar_options(
        cls, convolutions: Mapping[str, Any] | None, matmuls: Mapping[str, Any] | None
    ) -> PlannerOptions:
        """Read ``IPUConfig.convolutions.poplar_options`` and ``IPUConfig.matmuls.poplar_options``
        (values may be strings, as PopLibs takes them)."""
        out: dict[str, Any] = {}
        for kind, options in (("conv", convolutions or {}), ("matmul", matmuls or {})):
            where = "convolutions" if kind == "conv" else "matmuls"
            if "availableMemoryProportion" in options:
                value = options["availableMemoryProportion"]
                try:
                    proportion = float(value)
                except (TypeError, ValueError):
                    proportion = math.nan
                if not 0 < proportion <= 1:
                    raise ConfigurationError(
                        f"IPUConfig.{where}.poplar_options['availableMemoryProportion'] = "
                        f"{value!r}; expected a number in (0, 1], e.g. '0.3'"
                    )
                out[f"{kind}_memory_proportion"] = proportion
            if "partialsType" in options:
                value = str(options["partialsType"]).lower()
                if value not in ("half", "float"):
                    raise ConfigurationError(
                        f"IPUConfig.{where}.poplar_options['partialsType'] = "
                        f"{options['partialsType']!r}; expected 'half' or 'float'"
                    )
                out[f"{kind}_partials"] = value
        return cls(**out)

    def for_op(self, op: str, precision: str) -> tuple[str, float]:
        """(precision the AMP runs at, memory proportion) of a matmul-like ``op``."""
        conv = op.startswith("conv") or op in _GROUPED_CONVS or op in RESIZES
        partials = self.conv_partials if conv else self.matmul_partials
        proportion = self.conv_memory_proportion if conv else self.matmul_memory_proportion
        if precision != "fp32" and partials is not None:
            precision = "fp16.16" if partials == "half" else "fp16.32"
        return precision, proportion


@dataclass(frozen=True, slots=True)
class SuperstepCycles:
    """Cycles of one op's compute sets, exchanges and syncs on the busiest tile.

    Attributes:
        compute: cycles of all its compute sets.
        exchange: cycles of the exchanges feeding them (setup included).
        sync: cycles of their syncs.
        tiles: tiles the op runs on.
        exchange_bytes: bytes the IPU's tiles receive in its exchanges (all tiles).
        compute_sets: compute sets the op compiles to.
        temp_bytes_per_tile: temporary memory the op needs on a tile while it runs.
    """

    compute: int
    exchange: int
    sync: int
    tiles: int
    exchange_bytes: int
    compute_sets: int = 1
    temp_bytes_per_tile: int = 0

    @property
    def total(self) -> int:
        return self.compute + self.exchange + self.sync


def _pair(value: int | Sequence[int]) -> tuple[int, int]:
    """A stride given as one int or as (rows, columns)."""
    if isinstance(value, int):
        return value, value
    return int(value[0]), int(value[1])


def conv_problem(
    op: str, in_specs: Sequence[TensorSpec], out_specs: Sequence[TensorSpec], attrs: dict[str, Any]
) -> amp.ConvProblem:
    """The planner's view of a forward or input-gradient convolution pass."""
    sh, sw = _pair(attrs.get("strides", 1))
    if op == "conv2d":
        n, h, w, cin = dims(in_specs[0])
        kh, kw, _, cout = dims(in_specs[1])
        _, ho, wo, _ = dims(out_specs[0])
        if kh == kw == 1 and sh == sw == 1:
            field = n * ho * wo
            return amp.ConvProblem(1, 1, field, 1, field, 1, 1, 1, cin, cout, flat=True)
        in_h, in_w = (ho - 1) * sh + kh, (wo - 1) * sw + kw  # with the padding the output needs
        return amp.ConvProblem(n, ho, wo, in_h, in_w, kh, kw, sh, cin, cout)
    if op == "conv2d_backprop_input":
        n, h, w, cin = dims(out_specs[0])
        _, ho, wo, cout = dims(in_specs[0])
        kh, kw = dims(in_specs[1])[:2]
        flipped = kh * kw * cin * cout  # the weights, transposed and flipped first
        if kh == kw == 1 and sh == sw == 1:
            field = n * h * w
            return amp.ConvProblem(
                1, 1, field, 1, field, 1, 1, 1, cout, cin, flat=True, transform_elements=flipped
            )
        # A strided forward conv's gradient is an input-dilated conv: each input position meets
        # about ⌈k / stride⌉ taps per dimension.
        th, tw = -(-kh // sh), -(-kw // sw)
        return amp.ConvProblem(
            n, h, w, h + th - 1, w + tw - 1, th, tw, 1, cout, cin, transform_elements=flipped
        )
    raise ValueError(f"{op} is not a convolution pass with a single problem")


def _filter_gradient(
    ins: Sequence[TensorSpec],
    outs: Sequence[TensorSpec],
    groups: int,
    target: amp.AmpTarget,
    memory_proportion: float,
) -> amp.ConvPlan:
    """A weight-update pass (2-D or 3-D; per conv group): a product over batch × field,
    ``[taps·cin, N·field] @ [., cout]``, after rearranging the activations and the gradients."""
    *taps, cout = dims(outs[0])
    *field, _ = dims(ins[1])
    rearranged = (ins[0].size + ins[1].size) * groups
    return amp.plan_matmul(
        math.prod(taps), cout, math.prod(field), target, groups, memory_proportion, rearranged
    )


def _grouped_filter_gradient(
    ins: Sequence[TensorSpec],
    outs: Sequence[TensorSpec],
    groups: int,
    target: amp.AmpTarget,
    memory_proportion: float,
) -> amp.ConvPlan:
    """A grouped convolution's weight-update pass: the product, or for one input channel per
    group the convolution poplin plans on the VMAC vertex, whichever is cheaper."""
    as_matmul = _filter_gradient(ins, outs, groups, target, memory_proportion)
    kh, kw, cin, cout = dims(outs[0])
    n, ho, wo, _ = dims(ins[1])
    # poplin's weight-update pass is a convolution whose field is the kernel, whose kernel is
    # the output field and whose input channels are the batch: with one channel in and out per
    # group (depthwise) the VMAC (or SLIC) vertex can run it.
    rearranged = (ins[0].size + ins[1].size) * groups
    as_conv = amp.ConvProblem(
        1, kh, kw, ho + kh - 1, wo + kw - 1, ho, wo, 1, n, cout, groups, False, rearranged
    )
    if cin == 1 and amp.vmac_applies(as_conv, target):
        return min(
            (as_matmul, amp.plan_conv(as_conv, target, memory_proportion)),
            key=lambda plan: (plan.cycles, plan.tiles),
        )
    return as_matmul


def amp_plan(
    op: str,
    in_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
    attrs: dict[str, Any],
    target: amp.AmpTarget,
    memory_proportion: float = amp.DEFAULT_MEMORY_PROPORTION,
) -> amp.ConvPlan:
    """The AMP plan of a matmul-like op (see :mod:`ipusim.cost.amp`)."""
    if op in _GROUPED_CONVS:
        plain, groups, (ins, outs) = _ungrouped(op, (in_specs, out_specs), attrs)
        if plain == "conv2d_backprop_filter":
            return _grouped_filter_gradient(ins, outs, groups, target, memory_proportion)
        problem = conv_problem(plain, ins, outs, attrs)
        transform = problem.transform_elements * groups
        return amp.plan_conv(
            replace(problem, groups=groups, transform_elements=transform),
            target,
            memory_proportion,
        )
    if op == "matmul":
        a = dims(in_specs[0])
        k = a[0] if attrs.get("transpose_a") else a[1]
        m, n = dims(out_specs[0])
        return amp.plan_matmul(m, n, k, target, 1, memory_proportion)
    if op == "batch_matmul":
        out = dims(out_specs[0])
        a = dims(in_specs[0])
        k = a[-2] if attrs.get("transpose_a") else a[-1]
        groups = math.prod(out[:-2])
        return amp.plan_matmul(out[-2], out[-1], k, target, groups, memory_proportion)
    if op in ("conv2d_backprop_filter", "conv3d_backprop_filter"):
        return _filter_gradient(in_specs, out_specs, 1, target, memory_proportion)
    if op in CONV3D:
        problem = conv3d_problem(op, in_specs, out_specs, attrs)
    elif op in RESIZES:
        problem = resize_problem(op, in_specs, out_specs, attrs)
    else:
        problem = conv_problem(op, in_specs, out_specs, attrs)
    return amp.plan_conv(problem, target, memory_proportion)


def _broadcastable(small: tuple[int | None, ...], big: tuple[int | None, ...]) -> bool:
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(reversed(small), reversed(big)))


def _operand_bytes(
    in_specs: Sequence[TensorSpec], out: TensorSpec, per_tile: int, used: int
) -> int:
    """Bytes a tile of an element-wise op receives: nothing for operands laid out like the
    output, its slice of a broadcast operand, its share of any other operand."""
    received = 0
    for spec in in_specs:
        if spec.shape == out.shape or spec.size == 0:
            continue
        if _broadcastable(spec.shape, out.shape):
            received += min(spec.size, per_tile) * spec.itemsize
        else:
            received += -(-spec.nbytes // used)
    return received


_NORMS = frozenset({"batch_norm", "batch_norm_grad", "layer_norm", "layer_norm_grad"})


def _normalisation(
    op: str, in_specs: Sequence[TensorSpec], attrs: dict[str, Any], ebytes: int, tiles: int
) -> vector.VectorWork:
    """The passes of a batch or layer normalisation (or its gradient) over its input."""
    x = in_specs[1] if op == "batch_norm_grad" else in_specs[0]
    axis = attrs.get("axis", -1)
    channels = dims(x)[axis] if op.startswith("batch") else x.size // dims(x)[-1]
    if op == "batch_norm" and not attrs.get("training", True):
        passes = (0.25 + 0.25, 1.0 + 1.0, 2)
        return vector.composite(passes, 0, x.size, channels, ebytes, tiles)
    forward = not op.endswith("_grad")
    passes = vector.BATCH_NORM_FWD if forward else vector.BATCH_NORM_BWD
    return vector.composite(passes, 2 if forward else 4, x.size, channels, ebytes, tiles)


def vector_work(
    op: str,
    cost: OpCost,
    in_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
    attrs: dict[str, Any],
    tiles: int,
) -> vector.VectorWork | None:
    """The vector-unit work of a non-AMP op, or None for a view."""
    if op in VIEWS or (cost.flops == 0 and cost.bytes_written == 0):
        return None
    out = out_specs[0] if out_specs else in_specs[0]
    ebytes = out.itemsize if out.dtype.startswith("float") else 4
    big = max((s for s in in_specs), key=lambda s: s.size, default=out)
    if op == "weight_update":
        return vector.weight_update(out.size, cost.flops // max(out.size, 1), tiles)
    if op == "rnn_zeros":  # a zero state or gradient: popops Fill
        return vector.elementwise("fill", out.size, ebytes, tiles)
    if op in rnn.CELL_OPS:
        state = min((*in_specs, *out_specs), key=lambda s: s.size)  # (batch, units)
        return rnn.cell_work(op, dims(state)[0], dims(state)[-1], ebytes, tiles)
    if op in _NORMS:
        return _normalisation(op, in_specs, attrs, ebytes, tiles)
    if op in _SOFTMAX_FWD or op in _SOFTMAX_BWD:
        rows = big.size // max(dims(big)[-1], 1)  # big: the logits
        if op in _SOFTMAX_FWD:
            return vector.composite(vector.SOFTMAX_FWD, 2, big.size, rows, ebytes, tiles)
        return vector.composite(vector.SOFTMAX_BWD, 1, big.size, rows, ebytes, tiles)
    if op in _REDUCTIONS:
        return vector.reduction(big.size, out.size, big.itemsize, tiles)
    if op in _POOLS:
        size = attrs.get("pool_size", 2)
        window = size * size if isinstance(size, int) else math.prod(int(v) for v in size)
        pooled = min((s for s in (*in_specs, *out_specs)), key=lambda s: s.size)
        # Rows of the pooled field (batch and every spatial axis but the innermost).
        shape = dims(pooled)
        rows = math.prod(shape[:-2]) if len(shape) >= 4 else pooled.size
        return vector.pooling(
            pooled.size, window, rows, ebytes, tiles, backward=op.endswith("_grad")
        )
    if op == "embedding_lookup":
        return vector.gather(out.size, ebytes, tiles, scatter=False)
    if op == "embedding_lookup_grad":
        dy = max(in_specs, key=lambda s: s.size)
        scatter = vector.gather(dy.size, dy.itemsize, tiles, scatter=True)
        zero = vector.elementwise("fill", out.size, ebytes, tiles)
        return vector.VectorWork(
            scatter.compute + zero.compute,
            scatter.exchange_bytes,
            2,
            max(scatter.tiles, zero.tiles),
        )
    if op == "image_transform":  # a gather of 4 taps per element (1 for nearest), then blends
        taps = 4 if attrs.get("interpolation") == "bilinear" else 1
        return vector.gather(out.size * taps, ebytes, tiles, scatter=False)
    if op in ("image_resize", "image_resize_grad"):  # gathers of the taps; the grad scatters
        taps = 4 if attrs.get("method") == "bilinear" else 1
        grad = op.endswith("_grad")
        return vector.gather(big.size * taps if grad else out.size * taps, ebytes, tiles, grad)
    if op == "transpose":
        return vector.transpose(out.size, ebytes, tiles)
    if op in _COPIES or op in _BROADCASTS:
        return vector.copy(out.size, ebytes, tiles)
    if op in ("gelu", "gelu_grad") and not attrs.get("approximate", False):
        op = op.replace("gelu", "gelu_erf")  # the exact form lowers to popops GELU_ERF
    work = vector.elementwise(op, out.size, ebytes, tiles)
    per_tile = -(-out.size // work.tiles)
    received = _operand_bytes(in_specs, out, per_tile, work.tiles)
    return vector.VectorWork(work.compute, received, work.compute_sets, work.tiles)


def op_plan(
    op: str,
    in_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
    attrs: dict[str, Any],
    ipu: IPUSpec,
    precision: str,
    planner: PlannerOptions | None = None,
) -> amp.ConvPlan | None:
    """The AMP plan of ``op`` on ``ipu`` under ``planner``'s options, or None when the op is not
    a matrix product or convolution (timing and the tile mapping read the same plan)."""
    if op not in _AMP_OPS and op not in _GROUPED_CONVS:
        return None
    amp_precision, proportion = (planner or PlannerOptions()).for_op(op, precision)
    # A product may carry its own availableMemoryProportion (PopnnLSTM's per-layer option).
    proportion = float(attrs.get("available_memory_proportion", proportion))
    target = amp.AmpTarget.for_chip(ipu, amp_precision)
    return amp_plan(op, in_specs, out_specs, attrs, target, proportion)


def superstep_cycles(
    op: str,
    cost: OpCost,
    in_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
    attrs: dict[str, Any],
    ipu: IPUSpec,
    precision: str,
    planner: PlannerOptions | None = None,
) -> SuperstepCycles | None:
    """Cycles of one op on one IPU, or None when the op does no work (a view).

    Args:
        op: op name.
        cost: the op's cost inputs (FLOPs, bytes, kind).
        in_specs / out_specs: fully defined specs at the run's precision.
        attrs: op attributes.
        ipu: an ``IPUSpec``.
        precision: ``"fp32"``, ``"fp16.16"`` or ``"fp16.32"``.
        planner: PopLibs options of matmuls and convolutions (defaults: PopLibs').
    """
    sync = ipu.onchip_sync_cycles
    plan = op_plan(op, in_specs, out_specs, attrs, ipu, precision, planner)
    if plan is not None:
        return SuperstepCycles(
            compute=plan.compute_cycles,
            exchange=plan.exchange_cycles + EXCHANGE_SETUP_CYCLES * plan.compute_sets,
            sync=sync * plan.compute_sets,
            tiles=plan.tiles,
            exchange_bytes=plan.exchange_bytes * plan.tiles,
            compute_sets=plan.compute_sets,
            temp_bytes_per_tile=plan.temp_bytes,
        )
    work = vector_work(op, cost, in_specs, out_specs, attrs, ipu.tiles)
    if work is None:
        return None
    exchange = 0
    if work.exchange_bytes:
        exchange = math.ceil(work.exchange_bytes / ipu.exchange_bytes_per_cycle_per_tile)
        exchange += EXCHANGE_SETUP_CYCLES
    return SuperstepCycles(
        compute=work.compute,
        exchange=exchange,
        sync=sync * work.compute_sets,
        tiles=work.tiles,
        exchange_bytes=work.exchange_bytes * work.tiles,
        compute_sets=work.compute_sets,
    )
