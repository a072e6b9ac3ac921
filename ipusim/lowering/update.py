"""The weight update's supersteps: gradient accumulation and the optimizer's apply, one per
trainable variable, each an element-wise pass over float32 arrays of the variable's shape.

Their costs are those of the update graph ops (:func:`ipusim.graph.ops.update.accumulate_cost`,
:func:`~ipusim.graph.ops.update.update_cost`), through the same superstep costing as every
other op."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ipusim.graph.op import OpCost
from ipusim.graph.ops.update import accumulate_cost, update_cost
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
    return _per_variable(trainable, ipu, precision, "accumulate", 2, accumulate_cost)


def update_steps(
    trainable: Sequence[Variable], ipu: IPUSpec, precision: str, optimizer: OptimizerCost
) -> dict[int, Superstep]:
    """variable id -> its optimizer-update superstep: it reads the variable, its gradient and
    the slots, and writes the variable and the slots."""
    slots = optimizer.slots_per_variable
    flops = optimizer.update_flops_per_element
    return _per_variable(
        trainable,
        ipu,
        precision,
        "weight_update",
        2 + slots,
        lambda shape: update_cost(shape, slots, flops),
    )


def _per_variable(
    trainable: Sequence[Variable],
    ipu: IPUSpec,
    precision: str,
    op: str,
    arrays: int,
    cost_of: Callable[[tuple[int | None, ...]], OpCost],
) -> dict[int, Superstep]:
    """variable id -> an element-wise superstep costing ``cost_of(shape)`` whose operands are
    ``arrays`` float32 arrays of the variable's shape (the accumulator or variable, the
    gradient, the optimizer's slots)."""
    name, phase = (
        ("accumulate", "accumulate") if op == "accumulate" else ("update", "weight-update")
    )
    out = {}
    for var in trainable:
        spec = TensorSpec(var.shape, "float32")
        cost = cost_of(var.shape)
        ins, outs = [spec] * arrays, [spec]
        label = (f"{var.name}/{name}", layer_of(var), op, phase)
        s = superstep(label, cost, ins, outs, {}, ipu, precision)
        if s is not None:
            out[id(var)] = s
    return out
