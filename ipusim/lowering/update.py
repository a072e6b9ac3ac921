"""The weight update's supersteps, from the step graph's update nodes.

A training step's graph carries the update phase as ops (:func:`ipusim.graph.ops.update.add_update`):
``accumulate_gradients`` and ``apply_gradients``, owned by the optimizer (the ``optimizer``
attribute says its slots and FLOPs per element). Lowering keeps them out of the step's own
supersteps and makes one superstep per trainable variable from each: accumulation (timed only
when the run accumulates) and the optimizer's apply, each an element-wise pass over float32
arrays of the variable's shape, costed by the ops' cost functions
(:func:`~ipusim.graph.ops.update.accumulate_cost`, :func:`~ipusim.graph.ops.update.update_cost`)
through the same superstep costing as every other op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ipusim.graph.graph import Graph, Node
from ipusim.graph.op import OpCost
from ipusim.graph.ops.update import accumulate_cost, update_cost
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.hardware.specs import IPUSpec
from ipusim.lowering.program import Superstep
from ipusim.lowering.supersteps import superstep

#: The update-phase ops: lowered per variable here, never as ordinary nodes.
UPDATE_OPS = ("accumulate_gradients", "apply_gradients")


@dataclass(frozen=True)
class OptimizerCost:
    """What the weight update costs per trainable element.

    Attributes:
        slots_per_variable: arrays of the variable's shape the optimizer keeps (Adam: 2).
        update_flops_per_element: FLOPs of one element's update.
    """

    slots_per_variable: int = 0
    update_flops_per_element: int = 2

    @classmethod
    def of(cls, optimizer: Any) -> OptimizerCost:
        """The cost an optimizer declares (defaults for what it does not say)."""
        return cls(
            getattr(optimizer, "slots_per_variable", 0),
            getattr(optimizer, "update_flops_per_element", 2),
        )


@dataclass(frozen=True)
class UpdatePhase:
    """The weight update of a training step, as its graph's update nodes describe it.

    Attributes:
        variables: the trainable variables, in the order the optimizer updates them.
        optimizer: the optimizer's cost per element.
        accumulate / update: variable id -> its accumulation / optimizer-update superstep.
    """

    variables: tuple[Variable, ...] = ()
    optimizer: OptimizerCost = OptimizerCost()
    accumulate: dict[int, Superstep] = field(default_factory=dict)
    update: dict[int, Superstep] = field(default_factory=dict)


def update_nodes(graph: Graph) -> list[Node]:
    """The step graph's update-phase nodes, in graph order."""
    return [n for n in graph.nodes if n.op.name in UPDATE_OPS]


def layer_of(variable: Variable) -> str:
    """The layer a variable belongs to (its name up to the last ``/``)."""
    return variable.name.rsplit("/", 1)[0] if "/" in variable.name else ""


def update_phase(graph: Graph, ipu: IPUSpec, precision: str) -> UpdatePhase:
    """The update phase of ``graph`` (empty when it has no ``apply_gradients`` node)."""
    nodes = update_nodes(graph)
    applies = [n for n in nodes if n.op.name == "apply_gradients"]
    if not applies:
        return UpdatePhase()
    optimizer = OptimizerCost.of(applies[0].attrs["optimizer"])
    slots, flops = optimizer.slots_per_variable, optimizer.update_flops_per_element
    accumulate: dict[int, Superstep] = {}
    update: dict[int, Superstep] = {}
    for node in nodes:
        if node.op.name == "accumulate_gradients":
            accumulate.update(_per_variable(node, ipu, precision, "accumulate", 2, accumulate_cost))
        else:
            update.update(
                _per_variable(
                    node,
                    ipu,
                    precision,
                    "weight_update",
                    2 + slots,
                    lambda shape: update_cost(shape, slots, flops),
                )
            )
    variables: dict[int, Variable] = {}
    for node in applies:
        for variable in node.attrs["variables"]:
            variables.setdefault(id(variable), variable)
    return UpdatePhase(tuple(variables.values()), optimizer, accumulate, update)


def _per_variable(
    node: Node,
    ipu: IPUSpec,
    precision: str,
    op: str,
    arrays: int,
    cost_of: Callable[[tuple[int | None, ...]], OpCost],
) -> dict[int, Superstep]:
    """variable id -> an element-wise superstep of ``node``'s work on that variable, costing
    ``cost_of(shape)``, whose operands are ``arrays`` float32 arrays of the variable's shape
    (the accumulator or variable, the gradient, the optimizer's slots)."""
    name, phase = (
        ("accumulate", "accumulate") if op == "accumulate" else ("update", "weight-update")
    )
    variables: Sequence[Variable] = node.attrs["variables"]
    out: dict[int, Superstep] = {}
    for var in variables:
        spec = TensorSpec(var.shape, "float32")
        cost = cost_of(var.shape)
        ins, outs = [spec] * arrays, [spec]
        label = (f"{var.name}/{name}", layer_of(var), op, phase)
        s = superstep(label, cost, ins, outs, {}, ipu, precision)
        if s is not None:
            out.setdefault(id(var), s)
    return out
