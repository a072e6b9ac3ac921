"""The stage builder: nodes to stages, stages to IPUs, copies, stashes, transfers and memory.

A single IPU is one fused stage whose forward block is the whole step; a pipelined step has one
stage per pipeline stage, each with its blocks, accumulation and weight update
(:mod:`ipusim.lowering.update`), collectives and offloading (:mod:`ipusim.lowering.distribution`),
and each IPU its memory plan (:mod:`ipusim.lowering.memory`). Each node belongs to the stage of the top-level layer call that created it (backward nodes carry
the call of the forward node they differentiate). Nodes outside any layer (the loss, the
gradients that combine contributions) take the latest stage among the values they read, or the
last stage. A value read in a later stage crosses every stage boundary in between (inputs and
targets too: the first stage reads the infeed, the last stage needs the targets); a gradient read
in an earlier stage crosses them backwards. Values a stage's backward pass reads from its own
forward pass are its stash, held for every micro-batch in flight. With recomputation
(:mod:`ipusim.lowering.recompute`) the stash shrinks to the stage's inputs (and checkpoints) and
the backward block re-runs forward supersteps, all first (RecomputeThenBackpropagate) or as the
backward pass needs them (RecomputeAndBackpropagateInterleaved).

**Stage groups** (concurrent stages: a list of functions in one slot of ``pipeline()``, a list of
IPUs in its ``device_mapping`` entry): each member is a physical stage on its own IPU with its own
blocks, memory and Streaming Memory traffic; the schedule runs over the logical stages (a group
is one stage), so a group takes as long as its slowest member; after a forward pass each member
sends the values the following logical stages read from it to every IPU of the next group (after a
backward pass, the gradients to every IPU of the previous group); a member's stash is held for as
many micro-batches as its group keeps in flight, and the depth rule counts logical stages. Not
modelled: a value read by only one member of the next group is still copied to all of them (an
upper bound on link traffic), and the infeed is read by the first physical stage only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ipusim.cost.sync import cross_ipu_sync_ps
from ipusim.cost.units import seconds_to_ps
from ipusim.errors import PipelineConfigurationError
from ipusim.graph.graph import Graph, Node, Symbol
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.lowering.context import SOURCES, LoweringContext, StageLayout, StagePlan, is_forward
from ipusim.lowering.distribution import all_reduce_bytes
from ipusim.lowering.liveness import SHAPE_ONLY_INPUTS
from ipusim.lowering.memory import check_fits, ipu_plan
from ipusim.lowering.program import Block, PipelineProgram, Program, StageProgram, Superstep, Timed
from ipusim.lowering.recompute import (
    CHECKPOINT_OP,
    RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED,
    plan_stage,
)
from ipusim.lowering.schedules import SCHEDULES, depth_multiple
from ipusim.lowering.shards import ipus_per_replica
from ipusim.lowering.supersteps import in_order, recomputed

#: Bytes of a value from its TensorSpec, at the run's precision.
Nbytes = Callable[[TensorSpec], int]


def _top_invocation(graph: Graph, index: int) -> int:
    parent = graph.invocations[index].parent
    while parent is not None:
        index, parent = parent, graph.invocations[parent].parent
    return index


def assign_stages(
    graph: Graph, nodes: Sequence[Node], invocation_stage: dict[int, int], num_stages: int
) -> StageLayout:
    """The stage of every node in ``nodes`` (and of every variable they read)."""
    stage: dict[int, int] = {}
    last = num_stages - 1
    for node in nodes:
        if node.op.name in SOURCES:
            continue
        if node.invocation is not None:
            top = _top_invocation(graph, node.invocation)
            if top not in invocation_stage:
                raise PipelineConfigurationError(
                    f"layer call {graph.invocations[top].name!r} has no pipeline stage"
                )
            stage[node.id] = invocation_stage[top]
            continue
        producers = [stage[s.node.id] for s in node.inputs if s.node.id in stage]
        stage[node.id] = max(producers) if producers else last
    variable_stage: dict[int, int] = {}
    for node in nodes:
        for sym in node.inputs:
            if sym.node.op.name == "variable" and node.id in stage:
                var = sym.node.attrs["variable"]
                variable_stage.setdefault(id(var), stage[node.id])
    return StageLayout(stage, variable_stage, num_stages)


def _through_checkpoints(sym: Symbol) -> Symbol:
    """The value a recomputation checkpoint passes on (it holds no buffer of its own)."""
    while sym.node.op.name == CHECKPOINT_OP:
        sym = sym.node.inputs[0]
    return sym


def crossings(
    nodes: Sequence[Node], layout: StageLayout, precision_bytes: Nbytes
) -> tuple[list[int], list[int], list[int]]:
    """Bytes crossing each stage boundary forwards and backwards, and each stage's stash."""
    s_count = layout.num_stages
    forward, backward, stash = [0] * s_count, [0] * s_count, [0] * s_count
    seen: set[tuple[int, int, int]] = set()
    stashed: set[tuple[int, int, int]] = set()
    for node in nodes:
        if node.id not in layout.node_stage:
            continue
        consumer = layout.node_stage[node.id]
        for k, sym in enumerate(node.inputs):
            producer_node = sym.node
            if producer_node.op.name in ("variable", "constant"):
                continue
            size = precision_bytes(sym.spec)
            producer = (
                0
                if producer_node.op.name == "placeholder"
                else layout.node_stage.get(producer_node.id, consumer)
            )
            key = (producer_node.id, sym.index, consumer)
            from_forward = producer_node.op.name == "placeholder" or is_forward(producer_node)
            shape_only = k in SHAPE_ONLY_INPUTS.get(node.op.name, ())
            if not is_forward(node) and from_forward and producer <= consumer and not shape_only:
                # Read by the backward pass: kept while in flight (a checkpoint is its input).
                kept = _through_checkpoints(sym)
                if (kept.node.id, kept.index, consumer) not in stashed:
                    stashed.add((kept.node.id, kept.index, consumer))
                    stash[consumer] += size
            if key in seen:
                continue
            seen.add(key)
            if producer < consumer:
                for s in range(producer, consumer):
                    forward[s] += size
            elif producer > consumer:
                for s in range(consumer + 1, producer + 1):
                    backward[s] += size
    return forward, backward, stash


def group_crossings(
    nodes: Sequence[Node],
    layout: StageLayout,
    groups: Sequence[Sequence[int]],
    nbytes: Nbytes,
) -> tuple[list[int], list[int]]:
    """Bytes each physical stage sends after its forward and its backward pass, with stage
    groups: a value crosses each group boundary once, sent by its producer at the first
    boundary and by the first member of each group it passes through after that."""
    physical = layout.num_stages
    group_of = {p: g for g, members in enumerate(groups) for p in members}
    forward, backward = [0] * physical, [0] * physical
    sent: set[tuple[int, int, int]] = set()
    for node in nodes:
        if node.id not in layout.node_stage:
            continue
        consumer = group_of[layout.node_stage[node.id]]
        for sym in node.inputs:
            producer_node = sym.node
            if producer_node.op.name in ("variable", "constant"):
                continue
            producer_stage = (
                0
                if producer_node.op.name == "placeholder"
                else layout.node_stage.get(producer_node.id)
            )
            if producer_stage is None:
                continue
            producer = group_of[producer_stage]
            if producer == consumer:
                continue
            size = nbytes(sym.spec)
            step = 1 if producer < consumer else -1
            for boundary in range(producer, consumer, step):
                key = (producer_node.id, sym.index, boundary)
                if key in sent:
                    continue
                sent.add(key)
                sender = producer_stage if boundary == producer else groups[boundary][0]
                (forward if producer < consumer else backward)[sender] += size
    return forward, backward


def _check_pipeline(ctx: LoweringContext, logical: int) -> None:
    """Raise unless the schedule can run this pipeline of ``logical`` stages this deep."""
    schedule, device_mapping, micro_batches = ctx.schedule, ctx.device_mapping, ctx.micro_batches
    training = ctx.training
    if schedule not in SCHEDULES:
        raise PipelineConfigurationError(f"unknown pipeline schedule {schedule!r}")
    ipus = sorted(set(device_mapping))
    if training and schedule == "interleaved" and len(ipus) < len(device_mapping):
        raise PipelineConfigurationError(
            "The Interleaved schedule cannot train with several pipeline stages on the same "
            f"IPU (device_mapping {list(device_mapping)}); use the Grouped or Sequential "
            "schedule."
        )
    multiple = depth_multiple(schedule, logical, training, len(ipus))
    if micro_batches % multiple or micro_batches < multiple:
        what = "gradient_accumulation_steps_per_replica" if training else "steps_per_execution"
        raise PipelineConfigurationError(
            f"A {schedule} pipeline of {logical} stages on {len(ipus)} IPUs needs a depth "
            f"that is a multiple of {multiple} and at least {multiple}, but {what} is "
            f"{micro_batches}. Set {what} to a multiple of {multiple}."
        )


def build_program(ctx: LoweringContext) -> Program:
    """The Program of a lowered step (see the module docstring)."""
    mapping = ctx.device_mapping
    given = ctx.pipeline.groups if ctx.pipeline is not None else ()
    groups = tuple(tuple(g) for g in given) or tuple((s,) for s in range(len(mapping)))
    if not ctx.fused:
        _check_pipeline(ctx, len(groups))
    layout = ctx.layout  # a single IPU runs every node in its one stage
    plans = _stage_plans(ctx, layout, groups)
    pipeline = PipelineProgram(
        stages=tuple(_stage_program(ctx, s, plan) for s, plan in enumerate(plans)),
        schedule=ctx.schedule,
        micro_batches=ctx.micro_batches,
        training=ctx.training,
        infeed_bytes=ctx.step.infeed_bytes,
        outfeed_bytes=ctx.step.outfeed_bytes,
        outfeed_copies=ctx.step.outfeed_copies,
        groups=groups,
    )
    if not ctx.fused:  # a single IPU crosses no IPU-Links
        link = ctx.system.ipu_link
        pipeline = replace(
            pipeline,
            sync_ps=cross_ipu_sync_ps(ctx.system, ctx.replicas * ipus_per_replica(mapping)),
            link_bytes_per_s=link.neighbour_bandwidth_bytes_per_s,
            pair_link_bytes_per_s=link.pair_bandwidth_bytes_per_s,
            link_latency_ps=seconds_to_ps(link.latency_s),
        )
    memory = tuple(ipu_plan(ctx.on_ipu(i), layout, pipeline, plans) for i in pipeline.ipus)
    if ctx.check_memory:
        for plan in memory:
            check_fits(plan)
    return Program(
        kind=ctx.step.kind,
        pipeline=pipeline,
        replicas=ctx.replicas,
        ipus_per_replica=ipus_per_replica(mapping),
        batch_size=ctx.step.batch_size,
        gradient_accumulation=ctx.micro_batches if ctx.training else 1,
        # Weights stay on the device between executions; the host reads them only when it asks
        # (get_weights, checkpoints), which the run does not model.
        readback_bytes=0,
        memory=memory,
        system_name=ctx.system.name,
    )


def _stage_plans(
    ctx: LoweringContext, layout: StageLayout, groups: Sequence[Sequence[int]]
) -> list[StagePlan]:
    """Each stage's nodes, variables, recomputation, stash and copies."""
    count = layout.num_stages
    group_of = {p: g for g, members in enumerate(groups) for p in members}
    nbytes = ctx.nbytes
    fwd_bytes, bwd_bytes, stash = crossings(ctx.nodes, layout, nbytes)
    if any(len(g) > 1 for g in groups):
        fwd_bytes, bwd_bytes = group_crossings(ctx.nodes, layout, groups, nbytes)
    forward: list[list[Node]] = [[] for _ in range(count)]
    backward: list[list[Node]] = [[] for _ in range(count)]
    for node in ctx.nodes:
        if node.id in layout.node_stage:
            passes = forward if ctx.fused or is_forward(node) else backward
            passes[layout.node_stage[node.id]].append(node)
    variables: list[list[Variable]] = [[] for _ in range(count)]
    for var in ctx.update.variables:
        variables[layout.variable_stage.get(id(var), count - 1)].append(var)
    accumulate, update = ctx.update.accumulate, ctx.update.update
    plans = []
    for s in range(count):
        plan = None
        if ctx.recompute and ctx.training:
            last = s in groups[-1]
            plan = plan_stage(ctx.recompute, forward[s], backward[s], last, nbytes)
        stash_bytes = (plan.stash_bytes if plan is not None else stash[s]) if ctx.training else 0
        plans.append(
            StagePlan(
                forward=tuple(forward[s]),
                backward=tuple(backward[s]),
                variables=tuple(variables[s]),
                accumulate=tuple(accumulate[id(v)] for v in variables[s] if id(v) in accumulate),
                update=tuple(update[id(v)] for v in variables[s] if id(v) in update),
                recomputation=plan,
                stash_bytes=0 if ctx.fused else stash_bytes,
                send_forward_bytes=fwd_bytes[s] if group_of[s] < len(groups) - 1 else 0,
                send_backward_bytes=bwd_bytes[s] if ctx.training and group_of[s] > 0 else 0,
            )
        )
    return plans


def _forward_block(ctx: LoweringContext, plan: StagePlan) -> list[Superstep]:
    """The forward block: the stage's forward pass, or the whole step of a fused stage (each
    backward op after the forward ops its instruction recomputation re-runs)."""
    by_node = ctx.supersteps
    if ctx.instructions is None:
        return in_order(plan.forward, by_node)
    out: list[Superstep] = []
    for node in plan.forward:
        again = ctx.instructions.before.get(node.id, ())
        out += [recomputed(s) for s in in_order(again, by_node)]
        out += in_order([node], by_node)
    return out


def _backward_block(ctx: LoweringContext, plan: StagePlan) -> list[Superstep]:
    """The backward pass, with the forward supersteps the recomputation runs again."""
    by_node = ctx.supersteps
    recomputation = plan.recomputation
    if recomputation is None:
        return in_order(plan.backward, by_node)
    # RecomputeAndBackpropagateInterleaved reuses distributed batch norms' statistics.
    recomputed_as = by_node
    if ctx.without_norm_collectives and ctx.recompute == RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED:
        recomputed_as = {**by_node, **ctx.without_norm_collectives}
    again = {n.id for n in recomputation.recomputed}
    return [
        recomputed(recomputed_as[n.id]) if n.id in again else by_node[n.id]
        for n in recomputation.backward_order
        if n.id in by_node
    ]


def _stage_program(ctx: LoweringContext, s: int, plan: StagePlan) -> StageProgram:
    """One stage's blocks and transfers."""
    forward = _forward_block(ctx, plan)
    backward = _backward_block(ctx, plan)
    if ctx.accumulates:
        (forward if ctx.fused else backward).extend(plan.accumulate)
    labels = (
        (f"{ctx.step.kind} step", "", "weight update")
        if ctx.fused
        else (f"stage {s} fwd", f"stage {s} bwd", f"stage {s} weight update")
    )
    transfers = _transfers(ctx, plan)
    return StageProgram(
        stage=s,
        ipu=ctx.device_mapping[s],
        forward=Block(tuple(forward), labels[0]),
        backward=Block(tuple(backward), labels[1]),
        weight_update=Block(plan.update, labels[2]),
        send_forward_bytes=plan.send_forward_bytes,
        send_backward_bytes=plan.send_backward_bytes,
        stash_bytes=plan.stash_bytes,
        **transfers,
    )


def _transfers(ctx: LoweringContext, plan: StagePlan) -> dict[str, tuple[Timed, ...]]:
    """Collectives and Streaming Memory traffic of one stage: around its weight update, after
    each forward pass and before each backward pass (around the fused block of one IPU)."""
    dist = ctx.dist
    if not ctx.training or dist is None:
        return {}
    variables = plan.variables
    grads = sum(v.spec.size * ctx.element for v in variables)
    state = ctx.optimizer.slots_per_variable * sum(v.spec.size * 4 for v in variables)
    weights = sum(ctx.nbytes(v.spec) for v in variables) if ctx.fused else grads
    reduced = all_reduce_bytes(ctx.update.reductions, variables, ctx.nbytes)
    before, after = dist.update_instructions(reduced, state, weights)
    out = {"update_before": before, "update_after": after}
    # Offloaded stashes and accumulators (a transfer of no bytes is none).
    stash = plan.stash_bytes if dist.spec.offload_activations else 0
    offload = dist.spec.offload_gradient_accumulation_buffers and ctx.accumulates
    load = dist.remote("load accumulators", grads if offload else 0, "accumulate")
    store = dist.remote("store accumulators", grads if offload else 0, "accumulate")
    if ctx.fused:
        out["before_forward"], out["after_forward"] = _present([load]), _present([store])
    else:
        out["after_forward"] = _present([dist.remote("store stash", stash, "fwd")])
        out["before_backward"] = _present([dist.remote("load stash", stash, "bwd"), load, store])
    return out


def _present(transfers: Sequence[Timed | None]) -> tuple[Timed, ...]:
    return tuple(t for t in transfers if t is not None)
