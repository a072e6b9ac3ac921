"""Lowering: a step graph, compile options and a system -> a :class:`Program`.

Every op node the step needs becomes one BSP superstep (:mod:`ipusim.lowering.supersteps`), the
weight update one per trainable variable from the step's update nodes
(:mod:`ipusim.lowering.update`); the stage builder
(:mod:`ipusim.lowering.pipeline`) makes every Program, a single IPU being one stage, and checks
its memory plans, so a program that does not fit fails before anything runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from ipusim.choices import PRECISIONS
from ipusim.cost.compute import PlannerOptions
from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Node
from ipusim.hardware.specs import SystemSpec
from ipusim.lowering.context import SOURCES, LoweringContext, PipelineSpec, StepDescription
from ipusim.lowering.distribution import Distribution, DistributionSpec, check_norm_group_pipeline
from ipusim.lowering.pipeline import build_program
from ipusim.lowering.program import Program
from ipusim.lowering.recompute import instruction_recomputation, resolve_recomputation
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
    by_node = node_supersteps(nodes, system, precision, planner, spec.replicas)
    dist = _distribution(step, system, spec, pipeline, gradient_accumulation > 1, nodes)
    # Distributed batch norm's all-reduces (none unless its replica groups are larger than 1).
    without_norm_collectives = {}
    if dist is not None:
        without_norm_collectives = add_norm_collectives(
            by_node, nodes, dist, element_bytes(precision)
        )
    mapper = TileMapper(all_nodes, system.ipu, precision, planner)
    strategy, instructions = "", None
    if pipeline is not None and pipeline.recompute and training:
        strategy = resolve_recomputation(pipeline.recomputation_mode, pipeline.schedule)
    if pipeline is None and recompute and training:
        sizes = value_bytes(all_nodes, precision)
        instructions = instruction_recomputation(all_nodes, step.fetches, sizes)
    single_runs = gradient_accumulation if training else 1
    update = update_phase(step.graph, system.ipu, precision) if training else UpdatePhase()
    return build_program(
        LoweringContext(
            step=step,
            system=system,
            precision=precision,
            update=update,
            nodes=all_nodes,
            supersteps=by_node,
            without_norm_collectives=without_norm_collectives,
            dist=dist,
            replicas=spec.replicas,
            mapper=mapper,
            check_memory=check_memory,
            pipeline=pipeline,
            micro_batches=(micro_batches or gradient_accumulation) if pipeline else single_runs,
            recompute=strategy,
            instructions=instructions,
            gradient_accumulation=gradient_accumulation,
        )
    )


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
