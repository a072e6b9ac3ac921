"""The weight update's supersteps (synthetic, not graph ops): gradient accumulation and the
optimizer's apply, one per trainable variable, each an element-wise pass over float32 arrays of
the variable's shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ipusim.graph.op import OpCost
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.hardware.specs import IPUSpec
from ipusim.lowering.program import Superstep
from ipusim.lowering.supersteps import superstep


@dataclass(frozen=True)
class OptimizerCost:
    """What the weight update costs per trainable element.

    Attributes:
        slots_per_variable: arrays of the variable's shape the optimizer keeps (Adam: 2).
        update_flops_per_element: FLOPs of one element's update.
    """

    slots_per_variable: int = 0
    update_flops_per_element: int = 2


def layer_of(variable: Variable) -> str:
    """The layer a variable belongs to (its name up to the last ``/``)."""
    return variable.name.rsplit("/", 1)[0] if "/" in variable.name else ""


def accumulate_steps(
    trainable: Sequence[Variable], ipu: IPUSpec, precision: str
) -> dict[int, Superstep]:
    """variable id -> the superstep adding one micro-batch's gradient into its accumulator."""
    return _per_variable(trainable, ipu, precision, "accumulate", 0, 1, 1)


def update_steps(
    trainable: Sequence[Variable], ipu: IPUSpec, precision: str, optimizer: OptimizerCost
) -> dict[int, Superstep]:
    """variable id -> its optimizer-update superstep: it reads the variable, its gradient and
    the slots, and writes the variable and the slots."""
    slots = optimizer.slots_per_variable
    flops = optimizer.update_flops_per_element
    return _per_variable(trainable, ipu, precision, "weight_update", slots, flops, 1 + slots)


def _per_variable(
    trainable: Sequence[Variable],
    ipu: IPUSpec,
    precision: str,
    op: str,
    slots: int,
    flops_per_element: int,
    written: int,
) -> dict[int, Superstep]:
    """variable id -> an element-wise superstep over float32 arrays of its shape: it reads
    ``2 + slots`` of them (the accumulator or variable, the gradient, the slots), writes
    ``written`` and does ``flops_per_element`` FLOPs per element."""
    name, phase = (
        ("accumulate", "accumulate") if op == "accumulate" else ("update", "weight-update")
    )
    out = {}
    for var in trainable:
        spec = TensorSpec(var.shape, "float32")
        arrays = 2 + slots
        cost = OpCost(
            flops_per_element * spec.size,
            arrays * spec.nbytes,
            written * spec.nbytes,
            "elementwise",
        )
        ins, outs = [spec] * arrays, [spec]
        label = (f"{var.name}/{name}", layer_of(var), op, phase)
        s = superstep(label, cost, ins, outs, {}, ipu, precision)
        if s is not None:
            out[id(var)] = s
    return out
