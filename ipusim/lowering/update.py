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

from dataclasses import dataclass, field
from typing import Any

from ipusim.graph.graph import Graph, Node
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
    """The update phase of ``graph`` (empty when it has no ``apply_gradients`` node): per
    variable, a superstep whose operands are float32 arrays of its shape (accumulation: the
    accumulator and the gradient; apply: the variable, the gradient and the slots)."""
    nodes = update_nodes(graph)
    applies = [n for n in nodes if n.op.name == "apply_gradients"]
    if not applies:
        return UpdatePhase()
    optimizer = OptimizerCost.of(applies[0].attrs["optimizer"])
    slots, flops = optimizer.slots_per_variable, optimizer.update_flops_per_element
    steps: dict[str, dict[int, Superstep]] = {name: {} for name in UPDATE_OPS}
    for node in nodes:
        for var in node.attrs["variables"]:
            if node.op.name == "accumulate_gradients":
                label = (f"{var.name}/accumulate", layer_of(var), "accumulate", "accumulate")
                arrays, cost = 2, accumulate_cost(var.shape)
            else:
                label = (f"{var.name}/update", layer_of(var), "weight_update", "weight-update")
                arrays, cost = 2 + slots, update_cost(var.shape, slots, flops)
            spec = TensorSpec(var.shape, "float32")
            step = superstep(label, cost, [spec] * arrays, [spec], {}, ipu, precision)
            if step is not None:
                steps[node.op.name].setdefault(id(var), step)
    # first-seen order (a key seen again keeps its place)
    variables = {id(v): v for node in applies for v in node.attrs["variables"]}
    return UpdatePhase(tuple(variables.values()), optimizer, *(steps[name] for name in UPDATE_OPS))
