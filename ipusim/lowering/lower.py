"""Lowering: a step graph, compile options and a system -> a :class:`Program`.

Every op node the step needs becomes one BSP superstep whose cycles come from the cost model;
gradient accumulation and the optimizer's weight update add one superstep per trainable variable;
stream copies for infeed and outfeed frame each step. The memory plan is built and checked here,
so a program that does not fit fails before anything runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ipusim.choices import PRECISIONS
from ipusim.cost.compute import PlannerOptions, superstep_cycles
from ipusim.cost.host_embedding import HOST_EMBEDDING_OPS, host_embedding_traffic
from ipusim.cost.units import cycles_to_ps
from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Graph, Symbol
from ipusim.graph.op import OpCost
from ipusim.graph.spec import FLOAT_DTYPES, TensorSpec
from ipusim.lowering.distribution import (
    Distribution,
    DistributionSpec,
    check_norm_group_pipeline,
)
from ipusim.lowering.liveness import analyse, program_items, resident, working_peak
from ipusim.lowering.memory import (
    build_plan,
    check_fits,
    code_tiles,
    exchange_tiles,
)
from ipusim.lowering.program import (
    Block,
    MemoryItem,
    PipelineProgram,
    Program,
    StageProgram,
    Superstep,
)
from ipusim.lowering.shards import check_system_fits, ipus_per_replica
from ipusim.lowering.tile_mapping import TileMapper, at_start

_GRAPH_PHASE_TO_TRACE = {"fwd": "fwd", "loss": "fwd", "bwd": "bwd", "update": "fwd"}


@dataclass(frozen=True)
class OptimizerCost:
    """What the weight update costs per trainable element.

    Attributes:
        slots_per_variable: arrays of the variable's shape the optimizer keeps (Adam: 2).
        update_flops_per_element: FLOPs of one element's update.
    """

    slots_per_variable: int = 0
    update_flops_per_element: int = 2


@dataclass(frozen=True)
class StepDescription:
    """What lowering needs to know about one kind of step.

    Attributes:
        kind: ``"train"``, ``"test"`` or ``"predict"``.
        graph: the traced step graph.
        fetches: the values the step produces (restricts the nodes lowered).
        batch_size: samples per step.
        infeed_bytes: bytes of one infeed element (inputs and targets of a micro-batch).
        outfeed_bytes: bytes of one outfeed element.
        outfeed_copies: stream copies of one outfeed element (one per tensor outfed).
        trainable: trainable variables (updated by the optimizer), training only.
        weights: every variable the model holds (for memory and read-back).
    """

    kind: str
    graph: Graph
    fetches: tuple[Symbol, ...]
    batch_size: int
    infeed_bytes: int
    outfeed_bytes: int
    trainable: tuple[Any, ...] = ()
    outfeed_copies: int = 1
    weights: tuple[Any, ...] = ()


def _as_precision(spec: TensorSpec, precision: str) -> TensorSpec:
    if precision != "fp32" and spec.dtype in FLOAT_DTYPES:
        return spec.with_dtype("float16")
    return spec


def _element_bytes(precision: str) -> int:
    return 4 if precision == "fp32" else 2


def _superstep(
    name: str,
    layer: str,
    op: str,
    phase: str,
    cost: OpCost,
    in_specs: Sequence,
    out_specs: Sequence,
    attrs: dict,
    ipu: Any,
    precision: str,
    planner: PlannerOptions | None = None,
) -> Superstep | None:
    cycles = superstep_cycles(op, cost, in_specs, out_specs, attrs, ipu, precision, planner)
    if cycles is None:
        return None
    clock = ipu.clock_hz
    return Superstep(
        name=name,
        layer=layer,
        op=op,
        phase=phase,
        compute_ps=cycles_to_ps(cycles.compute, clock),
        exchange_ps=cycles_to_ps(cycles.exchange, clock),
        sync_ps=cycles_to_ps(cycles.sync, clock),
        flops=cost.flops,
        exchange_bytes=cycles.exchange_bytes,
        tiles=cycles.tiles,
        compute_sets=cycles.compute_sets,
    )


def _add_norm_collectives(
    by_node: dict[int, Superstep], nodes: Sequence[Any], dist: Distribution, element: int
) -> dict[int, Superstep]:
    """Add distributed batch norm's statistics all-reduces to the training batch norms' supersteps
    in place; return the supersteps as they were (a recomputation that reuses the statistics).

    Bytes per all-reduce: the mean in the activations' type and the power in float (one
    multi-tensor all-reduce, or two with stable statistics), and the two float gradient sums of
    the backward pass (poplibs ``poplin/Norms.cpp``).
    """
    before: dict[int, Superstep] = {}
    for node in nodes:
        s = by_node.get(node.id)
        count = dist.norm_all_reduces(node.op.name)
        if s is None or count == 0:
            continue
        if node.op.name == "batch_norm" and not node.attrs.get("training", True):
            continue
        x = node.in_specs[1] if node.op.name == "batch_norm_grad" else node.in_specs[0]
        channels = x.shape[node.attrs.get("axis", -1)]
        if node.op.name == "batch_norm_grad":
            sizes = [2 * channels * 4]
        elif count == 2:
            sizes = [channels * element, channels * 4]
        else:
            sizes = [channels * (element + 4)]
        parts = [dist.group_all_reduce(size) for size in sizes]
        before[node.id] = s
        by_node[node.id] = replace(
            s,
            sync_ps=s.sync_ps + sum(latency for latency, _ in parts),
            exchange_ps=s.exchange_ps + sum(transfer for _, transfer in parts),
            exchange_bytes=s.exchange_bytes + sum(sizes),
        )
    return before


def _add_host_embedding_traffic(
    by_node: dict[int, Superstep], nodes: Sequence[Any], system: Any, replicas: int
) -> None:
    """Give each host embedding lookup / update the host round trip it waits for, in place.

    The rows stream in (or the scaled gradients out) by stream copies, Poplar's exchange
    programs, so the round trip is the superstep's exchange and its link bytes the exchange
    bytes (:mod:`ipusim.cost.host_embedding`); the op computes nothing on the tiles.
    """
    for node in nodes:
        if node.op.name not in HOST_EMBEDDING_OPS:
            continue
        rows = node.out_specs[0] if node.op.name == "host_embedding_lookup" else node.in_specs[0]
        count, width = rows.shape
        traffic = host_embedding_traffic(
            node.op.name, count, width, rows.itemsize, system.host, replicas
        )
        base = by_node.get(node.id)
        by_node[node.id] = Superstep(
            name=node.name,
            layer=node.layer or "",
            op=node.op.name,
            phase=_GRAPH_PHASE_TO_TRACE.get(node.phase, "fwd"),
            compute_ps=0,
            exchange_ps=traffic.duration_ps,
            sync_ps=base.sync_ps if base is not None else 0,
            exchange_bytes=traffic.bytes,
        )


@dataclass(frozen=True)
class PipelineSpec:
    """How a pipelined model maps onto IPUs (from the Keras stage assignment and options).

    Attributes:
        invocation_stage: top-level layer-call index of the step graph -> pipeline stage.
        device_mapping: IPU of each stage.
        schedule: ``"grouped"``, ``"interleaved"`` or ``"sequential"``.
        recompute: recompute forward activations in the backward pass (smaller stash):
            ``IPUConfig.allow_recompute``.
        recomputation_mode: the :class:`~ipusim.pipelining.RecomputationMode` name
            (``"Auto"``, ``"RecomputeThenBackpropagate"``,
            ``"RecomputeAndBackpropagateInterleaved"``); used when ``recompute`` is on.
        groups: the stage groups (concurrent stages): the stages of each logical stage of the
            schedule; empty means one stage per logical stage.
    """

    invocation_stage: dict[int, int]
    device_mapping: tuple[int, ...]
    schedule: str = "grouped"
    recompute: bool = False
    groups: tuple[tuple[int, ...], ...] = ()
    recomputation_mode: str = "Auto"


def lower(
    step: StepDescription,
    system: Any,
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
        system: a ``SystemSpec`` (its ``ipu`` chip is used).
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
    element = _element_bytes(precision)
    all_nodes = step.graph.nodes_between(list(step.fetches))
    nodes = [n for n in all_nodes if n.op.name not in ("placeholder", "variable", "constant")]
    by_node: dict[int, Superstep] = {}
    for node in nodes:
        in_specs = [_as_precision(s, precision) for s in node.in_specs]
        out_specs = [_as_precision(s, precision) for s in node.out_specs]
        cost = node.op.cost(in_specs, out_specs, **node.attrs)
        s = _superstep(
            node.name,
            node.layer or "",
            node.op.name,
            _GRAPH_PHASE_TO_TRACE.get(node.phase, "fwd"),
            cost,
            in_specs,
            out_specs,
            node.attrs,
            ipu,
            precision,
            planner,
        )
        if s is not None:
            by_node[node.id] = s
    accumulate = _accumulate_steps(step, ipu, precision) if training else {}
    update = _update_steps(step, ipu, precision, optimizer) if training else {}
    spec = distribution or DistributionSpec()
    mapping = pipeline.device_mapping if pipeline is not None else None
    check_system_fits(mapping, spec.replicas, system.num_ipus)
    dist = (
        Distribution.resolve(
            spec, system, ipus_per_replica(mapping), gradient_accumulation > 1, pipeline is not None
        )
        if training
        else None
    )
    _add_host_embedding_traffic(by_node, nodes, system, spec.replicas)
    without_norm_collectives: dict[int, Superstep] = {}
    if dist is not None and pipeline is not None:
        norms = [
            n.layer or n.name
            for n in nodes
            if n.op.name == "batch_norm" and n.attrs.get("training", True)
        ]
        check_norm_group_pipeline(spec.batch_norm_group, mapping, norms)
    if dist is not None and spec.batch_norm_group > 1:
        without_norm_collectives = _add_norm_collectives(by_node, nodes, dist, element)
    mapper = TileMapper(all_nodes, ipu, precision, planner)
    if pipeline is not None:
        from ipusim.lowering.pipeline import lower_pipeline
        from ipusim.lowering.recompute import resolve_recomputation

        strategy = (
            resolve_recomputation(pipeline.recomputation_mode, pipeline.schedule)
            if pipeline.recompute and training
            else ""
        )
        return lower_pipeline(
            step,
            system,
            by_node,
            pipeline.invocation_stage,
            pipeline.device_mapping,
            pipeline.schedule,
            micro_batches or gradient_accumulation,
            strategy,
            training,
            precision,
            element,
            optimizer,
            accumulate,
            update,
            check_memory,
            dist,
            spec.replicas,
            pipeline.groups,
            mapper=mapper,
            without_norm_collectives=without_norm_collectives,
        )
    recomputation = None
    if recompute and training:
        from ipusim.lowering.recompute import instruction_recomputation

        recomputation = instruction_recomputation(
            all_nodes, step.fetches, _value_bytes(all_nodes, precision)
        )
    supersteps = []
    for node in nodes:
        if recomputation is not None:
            supersteps += [
                replace(by_node[n.id], name=f"recompute {by_node[n.id].name}", phase="fwd")
                for n in recomputation.before.get(node.id, ())
                if n.id in by_node
            ]
        if node.id in by_node:
            supersteps.append(by_node[node.id])
    if gradient_accumulation > 1:
        supersteps += list(accumulate.values())
    accumulator_bytes = sum(v.spec.size * element for v in step.trainable)
    offload_acc = (
        dist is not None
        and gradient_accumulation > 1
        and dist.spec.offload_gradient_accumulation_buffers
    )
    before_forward: tuple[Any, ...] = ()
    after_forward: tuple[Any, ...] = ()
    if offload_acc:
        before_forward = (dist.remote("load accumulators", accumulator_bytes, "accumulate"),)
        after_forward = (dist.remote("store accumulators", accumulator_bytes, "accumulate"),)
    update_before: tuple[Any, ...] = ()
    update_after: tuple[Any, ...] = ()
    if update:
        update_before, update_after = dist.update_instructions(
            accumulator_bytes,
            optimizer.slots_per_variable * sum(v.spec.size * 4 for v in step.trainable),
            sum(_float_bytes(v, element) for v in step.trainable),
        )
    # A single-IPU step is a pipeline of one stage whose forward pass is the whole step.
    stage = StageProgram(
        stage=0,
        ipu=0,
        forward=Block(tuple(supersteps), f"{step.kind} step"),
        weight_update=Block(tuple(update.values()), "weight update"),
        update_before=tuple(t for t in update_before if t is not None),
        update_after=tuple(t for t in update_after if t is not None),
        after_forward=tuple(t for t in after_forward if t is not None),
        before_forward=tuple(t for t in before_forward if t is not None),
    )
    single = PipelineProgram(
        stages=(stage,),
        schedule="sequential",
        micro_batches=gradient_accumulation if training else 1,
        training=training,
        infeed_bytes=step.infeed_bytes,
        outfeed_bytes=step.outfeed_bytes,
        outfeed_copies=step.outfeed_copies,
    )

    items, liveness = _memory_items(
        step,
        all_nodes,
        precision,
        element,
        gradient_accumulation,
        optimizer,
        supersteps,
        [*supersteps, *update.values()],
        dist,
        mapper,
        recomputation,
    )
    plan = build_plan(0, items, ipu.tiles, ipu.sram_bytes_per_tile, liveness)
    if check_memory:
        check_fits(plan)
    return Program(
        kind=step.kind,
        pipeline=single,
        batch_size=step.batch_size,
        replicas=spec.replicas,
        gradient_accumulation=gradient_accumulation if training else 1,
        # Weights stay on the device between executions; the host reads them only when it asks
        # (get_weights, checkpoints), which the run does not model.
        readback_bytes=0,
        memory=(plan,),
        system_name=getattr(system, "name", ""),
    )


def _value_bytes(nodes: Sequence[Any], precision: str) -> dict[tuple[int, int], int]:
    """Bytes of every value the nodes make, at the run's precision."""
    return {
        (n.id, s.index): _as_precision(s.spec, precision).nbytes for n in nodes for s in n.outputs
    }


def _accumulate_steps(step: StepDescription, ipu: Any, precision: str) -> dict[int, Superstep]:
    """variable id -> the superstep adding one micro-batch's gradient into its accumulator."""
    out = {}
    for var in step.trainable:
        spec = TensorSpec(var.shape, "float32")
        cost = OpCost(spec.size, 2 * spec.nbytes, spec.nbytes, "elementwise")
        s = _superstep(
            f"{var.name}/accumulate",
            _layer_of(var),
            "accumulate",
            "accumulate",
            cost,
            [spec, spec],
            [spec],
            {},
            ipu,
            precision,
        )
        if s is not None:
            out[id(var)] = s
    return out


def _update_steps(
    step: StepDescription, ipu: Any, precision: str, optimizer: OptimizerCost
) -> dict[int, Superstep]:
    """variable id -> its optimizer-update superstep."""
    out = {}
    for var in step.trainable:
        spec = TensorSpec(var.shape, "float32")
        arrays = 2 + optimizer.slots_per_variable  # variable, gradient and slots
        cost = OpCost(
            optimizer.update_flops_per_element * spec.size,
            arrays * spec.nbytes,
            (1 + optimizer.slots_per_variable) * spec.nbytes,
            "elementwise",
        )
        s = _superstep(
            f"{var.name}/update",
            _layer_of(var),
            "weight_update",
            "weight-update",
            cost,
            [spec] * arrays,
            [spec],
            {},
            ipu,
            precision,
        )
        if s is not None:
            out[id(var)] = s
    return out


def _float_bytes(variable: Any, element: int) -> int:
    """Bytes of a variable at the run's precision (floats) or its own itemsize."""
    size = variable.spec.size
    return size * (element if variable.dtype in FLOAT_DTYPES else variable.spec.itemsize)


def _layer_of(variable: Any) -> str:
    return variable.name.rsplit("/", 1)[0] if "/" in variable.name else ""


def _memory_items(
    step: StepDescription,
    all_nodes: Sequence[Any],
    precision: str,
    element: int,
    gradient_accumulation: int,
    optimizer: OptimizerCost,
    supersteps: Sequence[Superstep],
    coded: Sequence[Superstep],
    dist: Distribution | None,
    mapper: TileMapper,
    recomputation: Any = None,
) -> tuple[list[MemoryItem], Any]:
    """The IPU's memory items and its liveness over the step's program."""
    tiles = mapper.tiles
    items: list[MemoryItem] = []
    live = []

    def add(item: MemoryItem, placement: Any, category: str | None = None) -> None:
        items.append(item)
        live.append(resident(item.name, category or item.category, item.bytes, placement))

    for var in step.weights:
        size = var.spec.size * (element if var.dtype in FLOAT_DTYPES else var.spec.itemsize)
        add(MemoryItem(var.name, "weights", size), mapper.variable(var))
    if step.kind == "train":
        for var in step.trainable:
            state = optimizer.slots_per_variable * var.spec.size * 4
            if dist is not None:
                state = dist.on_chip_optimizer_state(state)
            if state:
                name = f"{var.name} optimizer state"
                add(MemoryItem(name, "optimizer-state", state), mapper.variable(var, state))
            offloaded = dist is not None and dist.spec.offload_gradient_accumulation_buffers
            if gradient_accumulation > 1 and not offloaded:
                size = var.spec.size * element
                item = MemoryItem(f"{var.name} accumulator", "gradient-accumulators", size)
                add(item, mapper.variable(var, size))
    # The receive buffers of the largest exchange, in which the operand slices of matmuls and
    # convolutions arrive (TileMapper.temporary).
    exchange = exchange_tiles(supersteps, tiles)
    mapper.receive_per_tile = int(exchange.max(initial=0))
    if recomputation is not None:
        all_nodes, bytes_of = list(recomputation.liveness_order), recomputation.sizes
    else:
        bytes_of = _value_bytes(all_nodes, precision)
    steps, working = program_items(
        all_nodes,
        step.fetches,
        bytes_of,
        mapper,
        lambda node: _GRAPH_PHASE_TO_TRACE.get(node.phase, "fwd"),
    )
    code = code_tiles(coded, tiles)
    add(MemoryItem("code and vertex state (outlined)", "code", int(code.sum())), at_start(code))
    add(
        MemoryItem("exchange buffers (largest exchange)", "exchange-buffers", int(exchange.sum())),
        at_start(exchange),
    )
    liveness = analyse(0, steps, [*live, *working], tiles)
    peak = working_peak(working, 0, len(steps))
    where = liveness.step_names[liveness.peak_step] if liveness.peak_step >= 0 else ""
    items.insert(
        len(items) - 2,
        MemoryItem(f"peak live activations (at {where})", "activations", peak),
    )
    return items, liveness
