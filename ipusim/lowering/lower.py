"""Lowering: a step graph, compile options and a system -> a :class:`Program`.

Every op node the step needs becomes one BSP superstep (:mod:`ipusim.lowering.supersteps`), the
weight update one per trainable variable (:mod:`ipusim.lowering.update`); the stage builder
(:mod:`ipusim.lowering.pipeline`) makes every Program, a single IPU being one stage, and checks
its memory plans, so a program that does not fit fails before anything runs.
"""

from __future__ import annotations

from ipusim.choices import PRECISIONS
from ipusim.cost.compute import PlannerOptions
from ipusim.errors import ConfigurationError
from ipusim.hardware.specs import SystemSpec
from ipusim.lowering.context import SOURCES, LoweringContext, PipelineSpec, StepDescription
from ipusim.lowering.distribution import Distribution, DistributionSpec, check_norm_group_pipeline
from ipusim.lowering.pipeline import build_program
from ipusim.lowering.program import Program
from ipusim.lowering.recompute import instruction_recomputation, resolve_recomputation
from ipusim.lowering.shards import check_system_fits, ipus_per_replica
from ipusim.lowering.supersteps import (
    add_host_embedding_traffic,
    add_norm_collectives,
    element_bytes,
    node_supersteps,
    value_bytes,
)
from ipusim.lowering.tile_mapping import TileMapper
from ipusim.lowering.update import OptimizerCost, accumulate_steps, update_steps

__all__ = ["OptimizerCost", "PipelineSpec", "StepDescription", "lower"]


def lower(
    step: StepDescription,
    system: SystemSpec,
    *,
    precision: str = "fp32",
    gradient_accumulation: int = 1,
    optimizer: OptimizerCost | None = None,
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
        optimizer: weight-update cost (training).
        check_memory: raise :class:`OutOfMemoryError` when the plan does not fit.
        pipeline: the stage layout when the model is pipelined.
        micro_batches: micro-batches per pipeline run (default: ``gradient_accumulation``).
        distribution: replication and Streaming Memory offloading (default: one replica, the
            default offloading rules).
        planner: PopLibs options of matmuls and convolutions (availableMemoryProportion,
            partialsType); default PopLibs'.
        recompute: ``IPUConfig.allow_recompute`` for an unpipelined training step: the
            Conv->Norm(->NonLinearity) patterns are recomputed in the backward pass
            (:func:`ipusim.lowering.recompute.instruction_recomputation`); a pipelined step
            takes it from ``pipeline.recompute``.
    """
    if precision not in PRECISIONS:
        raise ConfigurationError(f"precision must be one of {PRECISIONS}, received {precision!r}")
    if gradient_accumulation < 1:
        raise ConfigurationError(
            f"gradient_accumulation must be >= 1, received {gradient_accumulation}"
        )
    ipu = system.ipu
    optimizer = optimizer or OptimizerCost()
    training = step.kind == "train"
    element = element_bytes(precision)
    all_nodes = tuple(step.graph.nodes_between(list(step.fetches)))
    nodes = [n for n in all_nodes if n.op.name not in SOURCES]
    by_node = node_supersteps(nodes, ipu, precision, planner)
    accumulate = accumulate_steps(step.trainable, ipu, precision) if training else {}
    update = update_steps(step.trainable, ipu, precision, optimizer) if training else {}
    spec = distribution or DistributionSpec()
    mapping = pipeline.device_mapping if pipeline is not None else None
    check_system_fits(mapping, spec.replicas, system.num_ipus)
    dist = None
    if training:
        accumulating = gradient_accumulation > 1
        per_replica = ipus_per_replica(mapping)
        dist = Distribution.resolve(spec, system, per_replica, accumulating, pipeline is not None)
    add_host_embedding_traffic(by_node, nodes, system, spec.replicas)
    if dist is not None and pipeline is not None:
        check_norm_group_pipeline(spec.batch_norm_group, pipeline.device_mapping, nodes)
    without_norm_collectives = {}
    if dist is not None and spec.batch_norm_group > 1:
        without_norm_collectives = add_norm_collectives(by_node, nodes, dist, element)
    mapper = TileMapper(all_nodes, ipu, precision, planner)
    strategy, instructions = "", None
    if pipeline is not None and pipeline.recompute and training:
        strategy = resolve_recomputation(pipeline.recomputation_mode, pipeline.schedule)
    if pipeline is None and recompute and training:
        sizes = value_bytes(all_nodes, precision)
        instructions = instruction_recomputation(all_nodes, step.fetches, sizes)
    if pipeline is not None:
        runs = micro_batches or gradient_accumulation
    else:
        runs = gradient_accumulation if training else 1
    return build_program(
        LoweringContext(
            step=step,
            system=system,
            precision=precision,
            element=element,
            optimizer=optimizer,
            nodes=all_nodes,
            supersteps=by_node,
            without_norm_collectives=without_norm_collectives,
            accumulate=accumulate,
            update=update,
            dist=dist,
            replicas=spec.replicas,
            mapper=mapper,
            check_memory=check_memory,
            pipeline=pipeline,
            micro_batches=runs,
            recompute=strategy,
            instructions=instructions,
            gradient_accumulation=gradient_accumulation,
        )
    )
