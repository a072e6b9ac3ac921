"""Lowering: a step graph, compile options and a system -> a :class:`Program`.

Every op node the step needs becomes one BSP superstep (:mod:`ipusim.lowering.supersteps`), the
weight update one per trainable variable from the step's update nodes
(:mod:`ipusim.lowering.update`); the stage builder
(:mod:`ipusim.lowering.pipeline`) makes every Program, a single IPU being one stage, and checks
its memory plans, so a program that does not fit fails before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ipusim.choices import PRECISIONS
from ipusim.cost.compute import PlannerOptions
from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Node
from ipusim.graph.variable import Variable
from ipusim.hardware.specs import IPUSpec, SystemSpec
from ipusim.lowering.context import (
    SOURCES,
    LoweringContext,
    PipelineSpec,
    StageLayout,
    StepDescription,
    compute_system,
)
from ipusim.lowering.distribution import Distribution, DistributionSpec, check_norm_group_pipeline
from ipusim.lowering.pipeline import assign_stages, build_program
from ipusim.lowering.program import Program, Superstep
from ipusim.lowering.recompute import (
    InstructionRecomputation,
    instruction_recomputation,
    resolve_recomputation,
)
from ipusim.lowering.shards import check_system_fits, ipus_per_replica
from ipusim.lowering.supersteps import (
    add_norm_collectives,
    element_bytes,
    node_supersteps,
    value_bytes,
)
from ipusim.lowering.tile_mapping import TileMapper
from ipusim.lowering.update import UPDATE_OPS, OptimizerCost, UpdatePhase, update_phase

__all__ = ["OptimizerCost", "PipelineSpec", "StepDescription", "lower"]

_T = TypeVar("_T")
#: The chip of a node's or a variable's IPU, as its compute graph sees it.
_ChipOf = Callable[[_T], IPUSpec]


def lower(
    step: StepDescription,
    system: SystemSpec,
    *,
    precision: str = "fp32",
    gradient_accumulation: int = 1,
    check_memory: bool = True,
    pipeline: PipelineSpec | None = None,
    micro_batches: int | None = None,
    distribution: DistributionSpec | None = None,
    planner: PlannerOptions | None = None,
    recompute: bool = False,
    io_tiles: int = 0,
) -> Program:
    """Lower one step graph onto ``system``: one IPU, or the IPUs of a pipeline.

    Args:
        step: the step to lower.
        system: the system (its ``ipu`` chip is used).
        precision: ``"fp32"``, ``"fp16.16"`` or ``"fp16.32"``; decides AMP rates and bytes.
        gradient_accumulation: micro-batch steps per weight update.
        check_memory: raise :class:`OutOfMemoryError` when the plan does not fit.
        pipeline: the stage layout when the model is pipelined.
        micro_batches: micro-batches per pipeline run (default: ``gradient_accumulation``).
        distribution: replication and Streaming Memory offloading (default: one replica, the
            default offloading rules).
        planner: PopLibs options of matmuls and convolutions (availableMemoryProportion,
            partialsType); default PopLibs'.
        recompute: ``IPUConfig.allow_recompute`` for an unpipelined training step (its
            Conv->Norm(->NonLinearity) patterns, :mod:`ipusim.lowering.recompute`); a pipelined
            step takes it from ``pipeline.recompute``.
        io_tiles: I/O tiles of each IPU with host I/O (an unpipelined step's IPU, a pipeline's
            :attr:`~PipelineSpec.io_ipus`), whose nodes are lowered on its other tiles.
    """
    if precision not in PRECISIONS:
        raise ConfigurationError(f"precision must be one of {PRECISIONS}, received {precision!r}")
    if gradient_accumulation < 1:
        raise ConfigurationError(
            f"gradient_accumulation must be >= 1, received {gradient_accumulation}"
        )
    training = step.kind == "train"
    # The update nodes become the update phase's supersteps, one per variable, never ordinary ones.
    between = step.graph.nodes_between(list(step.fetches))
    all_nodes = tuple(n for n in between if n.op.name not in UPDATE_OPS)
    nodes = [n for n in all_nodes if n.op.name not in SOURCES]
    spec = distribution or DistributionSpec()
    dist = _distribution(step, system, spec, pipeline, gradient_accumulation > 1, nodes)
    layout = _layout(step, all_nodes, pipeline)
    mappers, chip_of, var_of = _ipus(system, pipeline, layout, nodes, precision, planner, io_tiles)
    by_node = node_supersteps(nodes, system, precision, planner, spec.replicas, chip_of)
    # Distributed batch norm's all-reduces (none unless its replica groups are larger than 1).
    plain: dict[int, Superstep] = {}
    if dist is not None:
        plain = add_norm_collectives(by_node, nodes, dist, element_bytes(precision))
    strategy, instructions = _recomputation(step, all_nodes, pipeline, recompute, precision)
    single_runs = gradient_accumulation if training else 1
    update = UpdatePhase()
    if training:
        update = update_phase(step.graph, system.ipu, precision, var_of)
    return build_program(
        LoweringContext(
            step=step,
            system=system,
            precision=precision,
            update=update,
            nodes=all_nodes,
            supersteps=by_node,
            without_norm_collectives=plain,
            dist=dist,
            replicas=spec.replicas,
            layout=layout,
            mappers=mappers,
            check_memory=check_memory,
            pipeline=pipeline,
            micro_batches=(micro_batches or gradient_accumulation) if pipeline else single_runs,
            recompute=strategy,
            instructions=instructions,
            gradient_accumulation=gradient_accumulation,
        )
    )


def _layout(
    step: StepDescription, nodes: Sequence[Node], pipeline: PipelineSpec | None
) -> StageLayout:
    """Where each node runs: :func:`assign_stages`, or a single IPU's one stage."""
    if pipeline is None:
        return StageLayout({n.id: 0 for n in nodes if n.op.name not in SOURCES}, {}, 1)
    stages = len(pipeline.device_mapping)
    return assign_stages(step.graph, nodes, pipeline.invocation_stage, stages)


def _ipus(
    system: SystemSpec,
    pipeline: PipelineSpec | None,
    layout: StageLayout,
    nodes: Sequence[Node],
    precision: str,
    planner: PlannerOptions | None,
    io_tiles: int,
) -> tuple[dict[int, TileMapper], _ChipOf[Node], _ChipOf[Variable]]:
    """Each IPU's chip as its compute graph sees it (the IPUs with host I/O without their
    ``io_tiles``) and the tile mapping of its nodes, with its own linear-mapping
    cursor (S: graphcore/tensorflow ``poplar/driver/tools/mapping_helper.h``: the
    ``linear_mapping_state`` is a ``LinearMapperState``, the next tile per ``poplar::Graph*``,
    and each IPU's virtual graph is a graph of its own); the chip of each node's and each
    variable's IPU."""
    mapping = pipeline.device_mapping if pipeline is not None else (0,)
    reduced = compute_system(system, io_tiles).ipu
    io_ipus = pipeline.io_ipus if pipeline is not None else frozenset(mapping)
    chips = {ipu: reduced if ipu in io_ipus else system.ipu for ipu in sorted(set(mapping))}
    ipu_of = {node.id: mapping[layout.node_stage[node.id]] for node in nodes}
    mappers = {
        ipu: TileMapper([n for n in nodes if ipu_of[n.id] == ipu], chip, precision, planner)
        for ipu, chip in chips.items()
    }
    last = layout.num_stages - 1

    def variable_chip(variable: Variable) -> IPUSpec:
        return chips[mapping[layout.variable_stage.get(id(variable), last)]]

    return mappers, lambda node: chips[ipu_of[node.id]], variable_chip


def _recomputation(
    step: StepDescription,
    nodes: Sequence[Node],
    pipeline: PipelineSpec | None,
    recompute: bool,
    precision: str,
) -> tuple[str, InstructionRecomputation | None]:
    """A training pipeline's recomputation strategy, or an unpipelined training step's
    instruction recomputation (``recompute``), if any."""
    if step.kind != "train" or not (pipeline.recompute if pipeline is not None else recompute):
        return "", None
    if pipeline is not None:
        return resolve_recomputation(pipeline.recomputation_mode, pipeline.schedule), None
    return "", instruction_recomputation(nodes, step.fetches, value_bytes(nodes, precision))


def _distribution(
    step: StepDescription,
    system: SystemSpec,
    spec: DistributionSpec,
    pipeline: PipelineSpec | None,
    accumulating: bool,
    nodes: Sequence[Node],
) -> Distribution | None:
    """The training step's replication and offloading, resolved against ``system``."""
    mapping = pipeline.device_mapping if pipeline is not None else None
    check_system_fits(mapping, spec.replicas, system.num_ipus)
    if step.kind != "train":
        return None
    per_replica = ipus_per_replica(mapping)
    dist = Distribution.resolve(spec, system, per_replica, accumulating, pipeline is not None)
    if mapping is not None:
        check_norm_group_pipeline(spec.batch_norm_group, mapping, nodes)
    return dist
