"""The weight update's supersteps, from the step graph's update nodes.

A training step's graph carries the update phase as ops (:func:`ipusim.graph.ops.update.add_update`):
``cross_replica_mean``, ``accumulate_gradients`` and ``apply_gradients``, the last owned by the
optimizer (the ``optimizer`` attribute says its slots and FLOPs per element). Lowering keeps them
out of the step's own supersteps. The mean is the all-reduce of the replicas' gradients
(:mod:`ipusim.lowering.distribution` reads its bytes from the node); from each of the other two
it makes one superstep per trainable variable: accumulation (timed only when the run
accumulates) and the optimizer's apply, each an element-wise pass over float32 arrays of the
variable's shape, costed by the op itself (its ``variable_cost``, the per-variable share of its
``cost``) through the same superstep costing as every other op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ipusim.graph.graph import Graph, Node
from ipusim.graph.ops.update import DEFAULT_SLOTS, DEFAULT_UPDATE_FLOPS, UpdateOp, optimizer_cost
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.hardware.specs import IPUSpec
from ipusim.lowering.program import Superstep
from ipusim.lowering.supersteps import superstep

#: The update-phase ops, never lowered as ordinary nodes: the cross-replica mean is the
#: all-reduce (:func:`ipusim.lowering.distribution.all_reduce_bytes`), the others are lowered
#: per variable here.
UPDATE_OPS = ("cross_replica_mean", "accumulate_gradients", "apply_gradients")
#: The ops lowered one superstep per variable.
_PER_VARIABLE = UPDATE_OPS[1:]
#: Per update op: the suffix of a variable's superstep name, its trace kind and phase.
_LABELS = {
    "accumulate_gradients": ("accumulate", "accumulate", "accumulate"),
    "apply_gradients": ("update", "weight_update", "weight-update"),
}


@dataclass(frozen=True)
class OptimizerCost:
    """What the weight update costs per trainable element.

    Attributes:
        slots_per_variable: arrays of the variable's shape the optimizer keeps (Adam: 2).
        update_flops_per_element: FLOPs of one element's update.
    """

    slots_per_variable: int = DEFAULT_SLOTS
    update_flops_per_element: int = DEFAULT_UPDATE_FLOPS

    @classmethod
    def of(cls, optimizer: object) -> OptimizerCost:
        """The cost an optimizer declares (:func:`~ipusim.graph.ops.update.optimizer_cost`)."""
        return cls(*optimizer_cost(optimizer))


@dataclass(frozen=True)
class UpdatePhase:
    """The weight update of a training step, as its graph's update nodes describe it.

    Attributes:
        variables: the trainable variables, in the order the optimizer updates them.
        optimizer: the optimizer's cost per element.
        accumulate / update: variable id -> its accumulation / optimizer-update superstep.
        reductions: the ``cross_replica_mean`` nodes, whose gradients the all-reduce combines.
    """

    variables: tuple[Variable, ...] = ()
    optimizer: OptimizerCost = OptimizerCost()
    accumulate: dict[int, Superstep] = field(default_factory=dict)
    update: dict[int, Superstep] = field(default_factory=dict)
    reductions: tuple[Node, ...] = ()


def update_nodes(graph: Graph) -> list[Node]:
    """The step graph's update-phase nodes, in graph order."""
    return [n for n in graph.nodes if n.op.name in UPDATE_OPS]


def layer_of(variable: Variable) -> str:
    """The layer a variable belongs to (its name up to the last ``/``)."""
    return variable.name.rsplit("/", 1)[0] if "/" in variable.name else ""


def update_phase(
    graph: Graph,
    ipu: IPUSpec,
    precision: str,
    chip_of: Callable[[Variable], IPUSpec] | None = None,
) -> UpdatePhase:
    """The update phase of ``graph`` (empty when it has no ``apply_gradients`` node): per
    variable, a superstep whose operands are float32 arrays of its shape (accumulation: the
    accumulator and the gradient; apply: the variable, the gradient and the slots) on
    ``chip_of(variable)`` (its IPU's chip; default ``ipu``), and the ``cross_replica_mean``
    nodes the gradient all-reduce reads."""
    nodes = update_nodes(graph)
    applies = [n for n in nodes if n.op.name == "apply_gradients"]
    if not applies:
        return UpdatePhase()
    optimizer = OptimizerCost.of(applies[0].attrs["optimizer"])
    steps: dict[str, dict[int, Superstep]] = {name: {} for name in _PER_VARIABLE}
    reductions = tuple(n for n in nodes if n.op.name == "cross_replica_mean")
    for node in (n for n in nodes if n.op.name in _PER_VARIABLE):
        op, (suffix, kind, phase) = node.op, _LABELS[node.op.name]
        assert isinstance(op, UpdateOp), op  # the registry maps _PER_VARIABLE to UpdateOps
        for var in node.attrs["variables"]:
            label = (f"{var.name}/{suffix}", layer_of(var), kind, phase)
            cost, arrays = op.variable_cost(var.shape, **node.attrs)
            spec = TensorSpec(var.shape, "float32")
            chip = chip_of(var) if chip_of is not None else ipu
            step = superstep(label, cost, [spec] * arrays, [spec], {}, chip, precision)
            if step is not None:
                steps[node.op.name].setdefault(id(var), step)
    # first-seen order (a key seen again keeps its place)
    variables = {id(v): v for node in applies for v in node.attrs["variables"]}
    return UpdatePhase(
        tuple(variables.values()),
        optimizer,
        accumulate=steps["accumulate_gradients"],
        update=steps["apply_gradients"],
        reductions=reductions,
    )
