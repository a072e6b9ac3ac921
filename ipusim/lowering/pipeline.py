"""Lowering a pipelined step: nodes to stages, stages to IPUs, copies, stashes and memory.

Each node belongs to the stage of the top-level layer call that created it (backward nodes carry
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

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ipusim.cost.sync import cross_ipu_sync_ps
from ipusim.cost.units import seconds_to_ps
from ipusim.errors import PipelineConfigurationError
from ipusim.graph.graph import Graph, Node
from ipusim.graph.spec import FLOAT_DTYPES, TensorSpec
from ipusim.lowering.liveness import (
    SHAPE_ONLY_INPUTS,
    analyse,
    live_from,
    program_items,
    resident,
    working_peak,
)
from ipusim.lowering.memory import (
    build_plan,
    check_fits,
    code_tiles,
    exchange_tiles,
)
from ipusim.lowering.program import (
    Block,
    IPUMemoryPlan,
    MemoryItem,
    PipelineProgram,
    Program,
    StageProgram,
    Superstep,
)
from ipusim.lowering.recompute import (
    CHECKPOINT_OP,
    RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED,
    StageRecomputation,
    plan_stage,
)
from ipusim.lowering.schedules import SCHEDULES, depth_multiple, in_flight
from ipusim.lowering.shards import ipus_per_replica
from ipusim.lowering.tile_mapping import at_start

_SOURCES = ("placeholder", "variable", "constant")


@dataclass(frozen=True)
class StageLayout:
    """Where each node of a step graph runs."""

    node_stage: dict[int, int]
    variable_stage: dict[int, int]  # id(variable) -> stage
    num_stages: int


def _top_invocation(graph: Graph, index: int) -> int:
    while graph.invocations[index].parent is not None:
        index = graph.invocations[index].parent
    return index


def assign_stages(
    graph: Graph, nodes: Sequence[Node], invocation_stage: dict[int, int], num_stages: int
) -> StageLayout:
    """The stage of every node in ``nodes`` (and of every variable they read)."""
    stage: dict[int, int] = {}
    last = num_stages - 1
    for node in nodes:
        if node.op.name in _SOURCES:
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


def _is_forward(node: Node) -> bool:
    return node.phase in ("fwd", "loss", "update")


def _through_checkpoints(sym: Any) -> Any:
    """The value a recomputation checkpoint passes on (it holds no buffer of its own)."""
    while sym.node.op.name == CHECKPOINT_OP:
        sym = sym.node.inputs[0]
    return sym


def crossings(
    nodes: Sequence[Node], layout: StageLayout, precision_bytes: Any
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Bytes crossing each stage boundary forwards and backwards, stash and stage-input bytes."""
    s_count = layout.num_stages
    forward = [0] * s_count
    backward = [0] * s_count
    stash = [0] * s_count
    inputs = [0] * s_count
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
            from_forward = producer_node.op.name == "placeholder" or _is_forward(producer_node)
            shape_only = k in SHAPE_ONLY_INPUTS.get(node.op.name, ())
            if not _is_forward(node) and from_forward and producer <= consumer and not shape_only:
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
                if _is_forward(node):
                    inputs[consumer] += size
            elif producer > consumer:
                for s in range(consumer + 1, producer + 1):
                    backward[s] += size
            if producer_node.op.name == "placeholder" and consumer == 0 and _is_forward(node):
                inputs[0] += size
    return forward, backward, stash, inputs


def lower_pipeline(
    step: Any,
    system: Any,
    supersteps: dict[int, Superstep],
    invocation_stage: dict[int, int],
    device_mapping: Sequence[int],
    schedule: str,
    micro_batches: int,
    recompute: str,
    training: bool,
    precision: str,
    element: int,
    optimizer: Any,
    accumulate: dict,
    update: dict,
    check_memory: bool,
    dist: Any = None,
    replicas: int = 1,
    groups: Sequence[Sequence[int]] = (),
    mapper: Any = None,
    without_norm_collectives: dict[int, Superstep] | None = None,
) -> Program:
    """Build the pipelined Program of a step (see the module docstring).

    Args:
        step: the StepDescription.
        system: the SystemSpec.
        supersteps: node id -> its superstep (nodes that do no work are absent).
        invocation_stage: top-level invocation index -> stage.
        device_mapping: IPU of each stage.
        schedule: ``"grouped"``, ``"interleaved"`` or ``"sequential"``.
        micro_batches: micro-batches per pipeline run.
        recompute: the recomputation strategy (``ipusim.lowering.recompute``), or "" for none.
        training: whether the step trains.
        precision / element: precision name and bytes per float element.
        optimizer: an OptimizerCost (for memory).
        accumulate / update: variable id -> its accumulation / weight-update superstep.
        check_memory: raise OutOfMemoryError when an IPU's plan does not fit.
        dist: the resolved Distribution (training), for collectives and offloading.
        replicas: number of replicas of this pipeline.
        groups: the physical stages of each logical stage (empty: one each).
        mapper: the step's :class:`~ipusim.lowering.tile_mapping.TileMapper` (tile mapping and
            liveness of the memory plans); made here when None.
        without_norm_collectives: node id -> its superstep without distributed batch norm's
            all-reduces: what RecomputeAndBackpropagateInterleaved recomputes (it reuses the
            statistics instead of all-reducing them again).
    """
    if mapper is None:
        from ipusim.lowering.tile_mapping import TileMapper

        mapper = TileMapper(step.graph.nodes_between(list(step.fetches)), system.ipu, precision)
    if schedule not in SCHEDULES:
        raise PipelineConfigurationError(f"unknown pipeline schedule {schedule!r}")
    num_stages = len(device_mapping)
    group_list = tuple(tuple(g) for g in groups) or tuple((s,) for s in range(num_stages))
    concurrent = any(len(g) > 1 for g in group_list)
    group_of = {p: g for g, members in enumerate(group_list) for p in members}
    logical = len(group_list)
    ipus = sorted(set(device_mapping))
    if training and schedule == "interleaved" and len(ipus) < num_stages:
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
    nodes = step.graph.nodes_between(list(step.fetches))
    layout = assign_stages(step.graph, nodes, invocation_stage, num_stages)

    def nbytes(spec: TensorSpec) -> int:
        return spec.size * (element if spec.dtype in FLOAT_DTYPES else spec.itemsize)

    fwd_bytes, bwd_bytes, stash, _ = crossings(nodes, layout, nbytes)
    if concurrent:
        fwd_bytes, bwd_bytes = group_crossings(nodes, layout, group_list, nbytes)
    forward: list[list[Superstep]] = [[] for _ in range(num_stages)]
    backward: list[list[Superstep]] = [[] for _ in range(num_stages)]
    forward_nodes: list[list[Node]] = [[] for _ in range(num_stages)]
    backward_nodes: list[list[Node]] = [[] for _ in range(num_stages)]
    for node in nodes:
        if node.id not in layout.node_stage:
            continue
        stage = layout.node_stage[node.id]
        (forward_nodes if _is_forward(node) else backward_nodes)[stage].append(node)
        s = supersteps.get(node.id)
        if s is None:
            continue
        (forward if _is_forward(node) else backward)[stage].append(s)
    recomputation: list[StageRecomputation | None] = [None] * num_stages
    if recompute and training:
        last_group = group_list[-1]
        recomputation = [
            plan_stage(recompute, forward_nodes[s], backward_nodes[s], s in last_group, nbytes)
            for s in range(num_stages)
        ]
    var_by_id = {id(v): v for v in step.weights}
    stage_vars: list[list[Any]] = [[] for _ in range(num_stages)]
    for var in step.trainable:
        stage_vars[layout.variable_stage.get(id(var), num_stages - 1)].append(var)
    # RecomputeAndBackpropagateInterleaved reuses distributed batch norms' statistics.
    recomputed_as = (
        {**supersteps, **without_norm_collectives}
        if without_norm_collectives and recompute == RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED
        else supersteps
    )
    stages = []
    for s in range(num_stages):
        back = list(backward[s])
        plan = recomputation[s]
        if plan is not None:
            again = {n.id for n in plan.recomputed}
            back = [
                _recomputed(recomputed_as[n.id]) if n.id in again else supersteps[n.id]
                for n in plan.backward_order
                if n.id in supersteps
            ]
        if training:
            back += [accumulate[id(v)] for v in stage_vars[s] if id(v) in accumulate]
        weight_update = [update[id(v)] for v in stage_vars[s] if id(v) in update]
        stash_bytes = (plan.stash_bytes if plan is not None else stash[s]) if training else 0
        extras = (
            _stage_transfers(dist, stage_vars[s], element, optimizer, stash_bytes)
            if training and dist is not None
            else ((), (), (), ())
        )
        stages.append(
            StageProgram(
                stage=s,
                ipu=device_mapping[s],
                forward=Block(tuple(forward[s]), f"stage {s} fwd"),
                backward=Block(tuple(back), f"stage {s} bwd"),
                weight_update=Block(tuple(weight_update), f"stage {s} weight update"),
                send_forward_bytes=fwd_bytes[s] if group_of[s] < logical - 1 else 0,
                send_backward_bytes=bwd_bytes[s] if training and group_of[s] > 0 else 0,
                stash_bytes=stash_bytes,
                update_before=extras[0],
                update_after=extras[1],
                after_forward=extras[2],
                before_backward=extras[3],
            )
        )
    ipu_spec = system.ipu
    link = system.ipu_link
    pipeline = PipelineProgram(
        stages=tuple(stages),
        schedule=schedule,
        micro_batches=micro_batches,
        training=training,
        sync_ps=cross_ipu_sync_ps(system, replicas * ipus_per_replica(device_mapping)),
        link_bytes_per_s=link.neighbour_bandwidth_bytes_per_s,
        pair_link_bytes_per_s=link.pair_bandwidth_bytes_per_s,
        link_latency_ps=seconds_to_ps(link.latency_s),
        infeed_bytes=step.infeed_bytes,
        outfeed_bytes=step.outfeed_bytes,
        outfeed_copies=step.outfeed_copies,
        groups=group_list,
    )
    plans = _memory(
        step,
        nodes,
        layout,
        pipeline,
        stage_vars,
        var_by_id,
        nbytes,
        element,
        optimizer,
        training,
        ipu_spec,
        dist,
        mapper,
        recomputation if recompute and training else None,
        recompute,
    )
    if check_memory:
        for plan in plans:
            check_fits(plan)
    return Program(
        kind=step.kind,
        pipeline=pipeline,
        replicas=replicas,
        ipus_per_replica=ipus_per_replica(device_mapping),
        batch_size=step.batch_size,
        gradient_accumulation=micro_batches if training else 1,
        readback_bytes=0,  # weights stay on the device between executions
        memory=tuple(plans),
        system_name=getattr(system, "name", ""),
    )


def group_crossings(
    nodes: Sequence[Node],
    layout: StageLayout,
    groups: Sequence[Sequence[int]],
    nbytes: Any,
) -> tuple[list[int], list[int]]:
    """Bytes each physical stage sends after its forward and its backward pass, with stage
    groups: a value crosses each group boundary once, sent by its producer at the first
    boundary and by the first member of each group it passes through after that."""
    physical = layout.num_stages
    group_of = {p: g for g, members in enumerate(groups) for p in members}
    forward = [0] * physical
    backward = [0] * physical
    sent: set[tuple[int, int, int]] = set()
    for node in nodes:
        if node.id not in layout.node_stage:
            continue
        consumer = group_of[layout.node_stage[node.id]]
        for sym in node.inputs:
            producer_node = sym.node
            if producer_node.op.name in ("variable", "constant"):
                continue
            if producer_node.op.name == "placeholder":
                producer_stage = 0
            else:
                producer_stage = layout.node_stage.get(producer_node.id)
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


def _stage_transfers(
    dist: Any, variables: list[Any], element: int, optimizer: Any, stash_bytes: int
) -> tuple[tuple, tuple, tuple, tuple]:
    """Collectives and Streaming Memory traffic of one stage: around its weight update, after
    each forward pass and before each backward pass."""
    grads = sum(v.spec.size * element for v in variables)
    weights = sum(v.spec.size * element for v in variables)
    before, after = dist.update_instructions(
        grads, optimizer.slots_per_variable * sum(v.spec.size * 4 for v in variables), weights
    )
    after_forward, before_backward = [], []
    if dist.spec.offload_activations and stash_bytes:
        after_forward.append(dist.remote("store stash", stash_bytes, "fwd"))
        before_backward.append(dist.remote("load stash", stash_bytes, "bwd"))
    if dist.spec.offload_gradient_accumulation_buffers and grads:
        before_backward.append(dist.remote("load accumulators", grads, "accumulate"))
        before_backward.append(dist.remote("store accumulators", grads, "accumulate"))
    return before, after, tuple(after_forward), tuple(before_backward)


def _sequential_peak(
    working: Sequence[tuple[int, int]], stashes: Sequence[tuple[int, MemoryItem, int]]
) -> tuple[int, int, list[MemoryItem]]:
    """(working bytes, stage, stashes live) at the Sequential schedule's memory peak on one IPU.

    Stage j's forward pass runs with the stashes of the stages before it, its backward pass with
    those and its own, so the IPU needs max over j of (working_j + stashes of stages <= j).
    """
    stash_of = {stage: item for stage, item, _ in stashes}
    best: tuple[int, int, int, list[MemoryItem]] | None = None
    held: list[MemoryItem] = []
    for peak, stage in sorted(working, key=lambda w: w[1]):
        if stage in stash_of:
            held = [*held, stash_of[stage]]
        total = peak + sum(item.bytes for item in held)
        if best is None or (total, peak) > (best[0], best[1]):
            best = (total, peak, stage, held)
    assert best is not None
    return best[1], best[2], best[3]


def _recomputed(s: Superstep) -> Superstep:
    return replace(s, name=f"recompute {s.name}", phase="fwd")


def _memory(
    step: Any,
    nodes: Sequence[Node],
    layout: StageLayout,
    pipeline: PipelineProgram,
    stage_vars: list[list[Any]],
    var_by_id: dict[int, Any],
    nbytes: Any,
    element: int,
    optimizer: Any,
    training: bool,
    ipu_spec: Any,
    dist: Any,
    mapper: Any,
    recomputation: Sequence[StageRecomputation | None] | None = None,
    strategy: str = "",
) -> list[IPUMemoryPlan]:
    """Each IPU's memory plan and liveness: its stages' programs one after another (forward
    and backward ops of a stage in graph order), stashes and always-live items resident."""
    plans = []
    s_count = pipeline.logical_stages
    group_of = {p: g for g, members in enumerate(pipeline.groups) for p in members}
    tiles = ipu_spec.tiles
    for ipu in pipeline.ipus:
        items: list[MemoryItem] = []
        live = []

        def add(
            item: MemoryItem,
            placement: Any,
            category: str | None = None,
            items: list[MemoryItem] = items,
            live: list[Any] = live,
        ) -> None:
            items.append(item)
            live.append(resident(item.name, category or item.category, item.bytes, placement))

        mine = [p for p in pipeline.stages if p.ipu == ipu]
        # Sequential: one micro-batch at a time runs forward through every stage, then backward
        # from the last: a stage's stash lives from its forward pass until its backward pass
        # reads it, so the stashes of the later stages are gone (or not yet made) while an
        # earlier stage runs (D: the schedule's order).
        one_at_a_time = training and pipeline.schedule == "sequential"
        stashes: list[tuple[int, MemoryItem, int]] = []
        stage_ids = {p.stage for p in mine}
        ops_of = {
            q.stage: [x for b in (q.forward, q.backward, q.weight_update) for x in b.supersteps]
            for q in mine
        }
        # Stages sharing an IPU run one at a time, so their exchange buffers reuse the same
        # memory: the IPU reserves the largest stage's (by bytes, then stage).
        buffers = [
            (int(e.sum()), s, e)
            for s, e in ((s, exchange_tiles(o, tiles)) for s, o in ops_of.items())
        ]
        largest, buffer_stage, exchange = max(buffers, key=lambda b: (b[0], b[1]))
        # The operand slices of the IPU's matmuls and convolutions arrive in those buffers
        # (TileMapper.temporary).
        mapper.receive_per_tile = int(exchange.max(initial=0))
        working: list[tuple[int, int]] = []
        steps: list[tuple[str, str, int]] = []
        for vid, stage in sorted(layout.variable_stage.items(), key=lambda kv: kv[1]):
            var = var_by_id.get(vid)
            if var is not None and stage in stage_ids:
                add(MemoryItem(var.name, "weights", nbytes(var.spec)), mapper.variable(var))
        for p in mine:
            for var in stage_vars[p.stage] if training else []:
                state = optimizer.slots_per_variable * var.spec.size * 4
                if dist is not None:
                    state = dist.on_chip_optimizer_state(state)
                if state:
                    item = MemoryItem(f"{var.name} optimizer state", "optimizer-state", state)
                    add(item, mapper.variable(var, state))
                if dist is None or not dist.spec.offload_gradient_accumulation_buffers:
                    size = var.spec.size * element
                    item = MemoryItem(f"{var.name} accumulator", "gradient-accumulators", size)
                    add(item, mapper.variable(var, size))
            alive = (
                in_flight(pipeline.schedule, s_count, group_of[p.stage], pipeline.micro_batches)
                if training
                else 0
            )
            if dist is not None and dist.spec.offload_activations:
                alive = min(alive, 1)  # the others wait in Streaming Memory
            stash_item = None
            if p.stash_bytes and alive:
                stash = p.stash_bytes * alive
                stash_item = MemoryItem(
                    f"stage {p.stage} stash ({alive} micro-batches in flight)", "activations", stash
                )
                if not one_at_a_time:
                    # (E) a stash FIFO is mapped linearly over the IPU's tiles.
                    add(stash_item, mapper.linear(stash), "stash")
            stage_nodes = [n for n in nodes if layout.node_stage.get(n.id) == p.stage]
            sizes = {(n.id, s.index): nbytes(s.spec) for n in stage_nodes for s in n.outputs}
            outside = [s for n in stage_nodes for s in n.outputs]
            plan = recomputation[p.stage] if recomputation is not None else None
            phase = lambda node: "fwd" if _is_forward(node) else "bwd"  # noqa: E731
            first = len(steps)
            fwd = [n for n in stage_nodes if _is_forward(n)]
            bwd = [n for n in stage_nodes if not _is_forward(n)]
            if training and fwd and bwd:
                # The forward block keeps nothing for the backward block: what the backward
                # block reads of it waits in the stash (an item of its own, for every
                # micro-batch in flight) and is received back when the backward block reads
                # it; the backward block re-creates what it recomputes.
                order = list(plan.backward_order) if plan is not None and plan.recomputed else bwd
                segments = [(fwd, fwd[-1].outputs[:1]), (order, outside[-1:])]
            else:
                segments = [(stage_nodes, outside[-1:])]
            stage_items: list[Any] = []
            for segment, kept in segments:
                seg_steps, seg_items = program_items(
                    segment,
                    kept,
                    sizes,
                    mapper,
                    phase,
                    p.stage,
                    len(steps),
                    lambda sym: nbytes(sym.spec),
                )
                steps += seg_steps
                stage_items += seg_items
            live += stage_items
            working.append((working_peak(stage_items, first, len(steps) - first), p.stage))
            if one_at_a_time and stash_item is not None:
                stashes.append((p.stage, stash_item, first))
            cloned = (
                plan is not None
                and plan.recomputed
                and strategy == RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED
            )
            code = code_tiles(
                [x for x in ops_of[p.stage] if not (cloned and x.name.startswith("recompute "))],
                tiles,
            )
            add(
                MemoryItem(f"stage {p.stage} code and vertex state", "code", int(code.sum())),
                at_start(code),
            )
            if cloned:
                # Cloned into the backward stage, the recomputed operations share no code with
                # the forward pass (IPU TensorFlow: "less code reuse" than RecomputeThen...).
                clones = [x for x in p.backward.supersteps if x.name.startswith("recompute ")]
                clone_code = code_tiles(clones, tiles)
                add(
                    MemoryItem(
                        f"stage {p.stage} recomputation code (not shared with the forward pass)",
                        "code",
                        int(clone_code.sum()),
                    ),
                    at_start(clone_code),
                )
        # Stages sharing an IPU run one at a time: their working activations and exchange
        # buffers reuse the same memory, so the IPU needs the largest of them, not the sum
        # (code stays resident for the whole run and adds up; so do stashes, except under the
        # Sequential schedule, where only those of the running stage and the earlier ones live).
        if one_at_a_time:
            peak, stage, live_stashes = _sequential_peak(working, stashes)
            for _, item, start in stashes:
                # (E) a stash FIFO is mapped linearly over the IPU's tiles. This timeline runs
                # stage after stage, so a stash is live from its stage's first step to the end:
                # while its stage and the later ones run.
                live.append(
                    live_from(item.name, "stash", item.bytes, start, mapper.linear(item.bytes))
                )
            items.extend(live_stashes)
        else:
            peak, stage = max(working)
        items.append(MemoryItem(f"stage {stage} working activations", "activations", peak))
        name = f"stage {buffer_stage} exchange buffers"
        add(MemoryItem(name, "exchange-buffers", largest), at_start(exchange))
        liveness = analyse(ipu, steps, live, tiles)
        recomputes = recomputation is not None and any(
            recomputation[p.stage] is not None and recomputation[p.stage].recomputed for p in mine
        )
        plans.append(
            build_plan(
                ipu, items, ipu_spec.tiles, ipu_spec.sram_bytes_per_tile, liveness, recomputes
            )
        )
    return plans
