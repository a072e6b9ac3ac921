"""The memory builder: each IPU's memory plan, its liveness, and the check against its SRAM.

An IPU runs its stages' programs one after another (a stage's forward ops, then its backward
ops; a single IPU's fused stage runs the whole step in graph order). What it holds for the whole
run (weights, optimizer state, accumulators, code, exchange buffers, pipeline stashes) is
resident; the working activations and temporaries live from step to step
(:mod:`ipusim.lowering.liveness`), placed on tiles by the step's
:class:`~ipusim.lowering.tile_mapping.TileMapper`.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ipusim.cost import constants as C
from ipusim.errors import OutOfMemoryError, OutOfMemoryWarning
from ipusim.graph.graph import Node, Symbol
from ipusim.graph.variable import Variable
from ipusim.kernels.tilemap import spread_over_tiles
from ipusim.lowering.context import LoweringContext, StageLayout, StagePlan, is_forward
from ipusim.lowering.liveness import (
    IPULiveness,
    LiveItem,
    analyse,
    live_from,
    program_items,
    resident,
    working_peak,
)
from ipusim.lowering.program import (
    IPUMemoryPlan,
    MemoryItem,
    PipelineProgram,
    StageProgram,
    Superstep,
)
from ipusim.lowering.recompute import RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED
from ipusim.lowering.schedules import in_flight
from ipusim.lowering.supersteps import trace_phase, value_bytes
from ipusim.lowering.tile_mapping import Placement, uniform


def build_plan(
    ipu: int,
    items: list[MemoryItem],
    tiles: int,
    sram_bytes_per_tile: int,
    liveness: IPULiveness | None = None,
    working_upper_bound: bool = False,
) -> IPUMemoryPlan:
    """Wrap ``items`` in a plan; its per-tile bytes are ``liveness``'s map at the worst tile's
    worst program step, or (without a liveness analysis) every item spread evenly over tiles."""
    if liveness is not None:
        per_tile = liveness.tile_bytes
    else:
        sizes = np.array([item.bytes for item in items], dtype=np.int64)
        per_tile = spread_over_tiles(sizes, tiles, C.TILE_MAPPING_GRAIN_BYTES)
    return IPUMemoryPlan(
        ipu=ipu,
        items=tuple(items),
        budget_bytes=tiles * sram_bytes_per_tile,
        tile_bytes=tuple(int(b) for b in per_tile),
        tile_budget_bytes=sram_bytes_per_tile,
        liveness=liveness,
        working_upper_bound=working_upper_bound,
    )


_LOWER_PROPORTION = (
    "lower availableMemoryProportion of matmuls and convolutions "
    "(IPUConfig.matmuls.poplar_options / IPUConfig.convolutions.poplar_options, e.g. "
    "{'availableMemoryProportion': '0.2'}: smaller temporaries for more cycles)"
)
_RECOMPUTE = "recompute activations (allow_recompute with a recomputation mode)"
_SMALLER_BATCH = "use a smaller micro-batch"
_MORE_STAGES = "pipeline the model over more stages (more IPUs)"

#: What to change, by the category of what fills a tile, most effective first.
_ADVICE = {
    "temporaries": (_LOWER_PROPORTION,),
    "activations": (_RECOMPUTE, _SMALLER_BATCH, _MORE_STAGES),
    "stash": (
        _RECOMPUTE,
        "offload activations to Streaming Memory (offload_activations)",
        _SMALLER_BATCH,
    ),
    "weights": (_MORE_STAGES, "use fp16"),
    "optimizer-state": ("offload optimizer state to Streaming Memory", _MORE_STAGES),
    "gradient-accumulators": ("offload the gradient accumulation buffers", _MORE_STAGES),
    "code": (_MORE_STAGES,),
    "exchange-buffers": (_MORE_STAGES,),
}


def _advice(categories: Sequence[str]) -> str:
    ordered = [*categories, "temporaries", "activations", "weights"]
    phrases = [p for c in ordered for p in _ADVICE.get(c, ())]
    return ", or ".join(dict.fromkeys(phrases))


def check_fits(plan: IPUMemoryPlan) -> None:
    """Raise :class:`OutOfMemoryError` when the IPU's total or its fullest tile is over budget.

    The message names the IPU and its total against the budget; when a tile overflows, the tile,
    the program point, the largest items on that tile and what to change.
    """
    max_tile = max(plan.tile_bytes, default=0)
    if plan.total_bytes <= plan.budget_bytes and max_tile <= plan.tile_budget_bytes:
        return
    try:
        _raise_out_of_memory(plan, max_tile)
    except OutOfMemoryError as error:
        if not plan.working_upper_bound or not _resident_fits(plan):
            raise
        warnings.warn(
            f"{error} This IPU runs a recomputing pipeline stage, whose working activations are "
            "an upper bound here (its ops run in graph order, not in the memory-aware order "
            "Poplar schedules, and only the recomputation checkpoints the model declares are "
            "used): what is live throughout fits, so the program may fit on the real system.",
            OutOfMemoryWarning,
            stacklevel=3,
        )


def _resident_fits(plan: IPUMemoryPlan) -> bool:
    """Whether what is live over the whole program fits (the lower bound of the plan)."""
    live = plan.liveness
    resident = sum(i.bytes for i in plan.items if not i.name.endswith("working activations"))
    tiles = 0 if live is None or live.resident_tile_bytes is None else live.resident_tile_bytes
    return resident <= plan.budget_bytes and int(np.max(tiles)) <= plan.tile_budget_bytes


def _raise_out_of_memory(plan: IPUMemoryPlan, max_tile: int) -> None:
    mib = 1024 * 1024
    live = plan.liveness
    if plan.total_bytes <= plan.budget_bytes and live is not None and live.peak_tile >= 0:
        on_tile = ", ".join(
            f"{name} ({category}, {b / 1024:.1f} KiB)"
            for name, category, b in live.peak_tile_items[:5]
        )
        raise OutOfMemoryError(
            f"Out of memory on IPU {plan.ipu}, tile {live.peak_tile}: at program point "
            f"{live.step_label(live.tile_peak_step)} the tile needs {max_tile / 1024:.1f} KiB "
            f"but has {plan.tile_budget_bytes / 1024:.0f} KiB, although the IPU as a whole "
            f"needs only {plan.total_bytes / mib:.1f} of {plan.budget_bytes / mib:.1f} MiB. "
            f"Largest items on tile {live.peak_tile}: {on_tile}. To fit, "
            f"{_advice([c for _, c, _ in live.peak_tile_items[:3]])}."
        )
    largest = ", ".join(
        f"{item.name} ({item.category}, {item.bytes / mib:.1f} MiB)" for item in plan.largest(5)
    )
    by_cat = ", ".join(f"{cat} {b / mib:.1f} MiB" for cat, b in plan.by_category().items() if b)
    where = ""
    if live is not None and live.peak_tile >= 0:
        where = f" on tile {live.peak_tile}"
    raise OutOfMemoryError(
        f"Out of memory on IPU {plan.ipu}: the program needs {plan.total_bytes / mib:.1f} MiB "
        f"(busiest tile {max_tile / 1024:.1f} KiB{where}) but the IPU has "
        f"{plan.budget_bytes / mib:.1f} MiB ({plan.tile_budget_bytes / 1024:.0f} KiB per tile). "
        f"By category: {by_cat}. Largest items: {largest}. To fit, "
        f"{_advice([item.category for item in plan.largest(3)])}."
    )


def code_tiles(supersteps: Sequence[Superstep], tiles: int) -> np.ndarray:
    """Per tile, the code and vertex state of each distinct compute set on the tiles it runs on.

    A compute set on every tile holds code on every tile. One on ``k`` fewer tiles runs where
    its op's tensors are mapped, and IPU TensorFlow's linear mapping rotates the start tile from
    tensor to tensor, so such compute sets do not all begin at tile 0: each starts at a tile
    derived from the op (CRC-32 of its key, so the same program always maps the same way).
    """
    out = np.zeros(tiles, dtype=np.int64)
    for key, s in _distinct_compute_sets(supersteps).items():
        k = min(s.tiles, tiles)
        if k >= tiles:
            out += C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
            out[0] += (s.tiles - k) * C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
        elif k > 0:
            start = zlib.crc32(repr(key).encode()) % tiles
            out[(start + np.arange(k)) % tiles] += C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
    return out


def _distinct_compute_sets(
    supersteps: Sequence[Superstep],
) -> dict[tuple[object, ...], Superstep]:
    """The first superstep of each distinct (op, phase, tiles, work), by that key: Poplar
    outlines identical sub-graphs (``optimizations.enable_graph_outlining``, on by default), so
    compute sets that do the same work on the same tiles (the layers of a transformer, say)
    share their code."""
    distinct: dict[tuple[object, ...], Superstep] = {}
    for s in supersteps:
        distinct.setdefault((s.op, s.phase, s.tiles, s.compute_ps, s.exchange_ps, s.flops), s)
    return distinct


def exchange_tiles(supersteps: Sequence[Superstep], tiles: int) -> np.ndarray:
    """Per tile, the receive buffers of the largest exchange: per tile what it receives, capped by
    ``EXCHANGE_BUFFER_BYTES_PER_TILE`` (bigger exchanges stream through in passes)."""
    largest, per_tile, used = 0, 0, 0
    for s in supersteps:
        if s.tiles and s.exchange_bytes:
            each = min(-(-s.exchange_bytes // s.tiles), C.EXCHANGE_BUFFER_BYTES_PER_TILE)
            if each * s.tiles > largest:
                largest, per_tile, used = each * s.tiles, each, s.tiles
    out = np.zeros(tiles, dtype=np.int64)
    if used:
        k = min(used, tiles)
        out[:k] = uniform(per_tile, k)
        out[0] += (used - k) * per_tile
    return out


def code_bytes(supersteps: Sequence[Superstep]) -> int:
    """Code and vertex state of a program's compute sets, with graph outlining (each distinct
    compute set counted once, on the tiles it runs on): the total of :func:`code_tiles`."""
    return sum(
        s.tiles * C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
        for s in _distinct_compute_sets(supersteps).values()
    )


@dataclass
class _Held:
    """What one IPU holds: its memory items and their liveness."""

    items: list[MemoryItem] = field(default_factory=list)
    live: list[LiveItem] = field(default_factory=list)

    def add(self, item: MemoryItem, placement: Placement, category: str | None = None) -> None:
        """Hold ``item`` for the whole program (as ``category`` in the liveness report)."""
        self.items.append(item)
        self.live.append(resident(item.name, category or item.category, item.bytes, placement))


def ipu_plan(
    ctx: LoweringContext,
    layout: StageLayout,
    pipeline: PipelineProgram,
    plans: Sequence[StagePlan],
) -> IPUMemoryPlan:
    """The memory plan of IPU ``ctx.ipu`` on its own tiles: resident items, then each of its
    stages' working memory."""
    ipu, tiles = ctx.ipu, ctx.chip.tiles
    held = _Held()
    mine = [p for p in pipeline.stages if p.ipu == ipu]
    # Stages sharing an IPU run one at a time, so their exchange buffers reuse the same
    # memory: the IPU reserves the largest stage's (by bytes, then stage). The operand slices
    # of the IPU's matmuls and convolutions arrive in those buffers (TileMapper.temporary).
    buffers = [(int(e.sum()), p.stage, e) for p, e in ((p, _exchange(ctx, p)) for p in mine)]
    largest, buffer_stage, exchange = max(buffers, key=lambda b: (b[0], b[1]))
    ctx.mapper.receive_per_tile = int(exchange.max(initial=0))
    for var in _weights(ctx, layout, {p.stage for p in mine}):
        held.add(MemoryItem(var.name, "weights", ctx.nbytes(var.spec)), ctx.mapper.variable(var))
    # Sequential: one micro-batch at a time runs forward through every stage, then backward
    # from the last: a stage's stash lives from its forward pass until its backward pass
    # reads it, so the stashes of the later stages are gone (or not yet made) while an
    # earlier stage runs (D: the schedule's order).
    one_at_a_time = ctx.training and pipeline.schedule == "sequential"
    stashes: list[tuple[int, MemoryItem, int]] = []
    working: list[tuple[int, int]] = []
    steps: list[tuple[str, str, int]] = []
    for p in mine:
        plan = plans[p.stage]
        _optimizer_items(ctx, held, plan.variables)
        stash = _stash(ctx, pipeline, p)
        if stash is not None and not one_at_a_time:
            # (E) a stash FIFO is mapped linearly over the IPU's tiles.
            held.add(stash, ctx.mapper.linear(stash.bytes), "stash")
        first = len(steps)
        stage_items = _working(ctx, layout, p, plan, steps)
        held.live += stage_items
        working.append((working_peak(stage_items, first, len(steps) - first), p.stage))
        if one_at_a_time and stash is not None:
            stashes.append((p.stage, stash, first))
        _code(ctx, held, p, plan)
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
            placement = ctx.mapper.linear(item.bytes)
            held.live.append(live_from(item.name, "stash", item.bytes, start, placement))
        held.items.extend(live_stashes)
    else:
        peak, stage = max(working)
    held.add(
        MemoryItem(_named(ctx, buffer_stage, "exchange buffers"), "exchange-buffers", largest),
        Placement(0, exchange),
    )
    liveness = analyse(ipu, steps, held.live, tiles)
    if ctx.fused:
        where = liveness.step_names[liveness.peak_step] if liveness.peak_step >= 0 else ""
        item = MemoryItem(f"peak live activations (at {where})", "activations", peak)
    else:
        item = MemoryItem(f"stage {stage} working activations", "activations", peak)
    # Before the exchange buffers (and, on one IPU, the code).
    held.items.insert(len(held.items) - (2 if ctx.fused else 1), item)
    recomputes = any(
        r is not None and r.recomputed for r in (plans[p.stage].recomputation for p in mine)
    )
    sram = ctx.chip.sram_bytes_per_tile
    return build_plan(ipu, held.items, tiles, sram, liveness, recomputes)


def _named(ctx: LoweringContext, stage: int, what: str) -> str:
    """A resident item's name: per stage in a pipeline; a single IPU's own otherwise."""
    if not ctx.fused:
        return f"stage {stage} {what}"
    return f"{what} (largest exchange)" if what == "exchange buffers" else f"{what} (outlined)"


def _exchange(ctx: LoweringContext, p: StageProgram) -> np.ndarray:
    """Per tile, the receive buffers of a stage's largest exchange (a single IPU's weight
    update runs after its step's exchanges have freed theirs)."""
    blocks = (p.forward, p.backward) if ctx.fused else (p.forward, p.backward, p.weight_update)
    return exchange_tiles([x for b in blocks for x in b.supersteps], ctx.chip.tiles)


def _weights(ctx: LoweringContext, layout: StageLayout, stages: set[int]) -> list[Variable]:
    """The variables an IPU holds: every weight on a single IPU; in a pipeline those its
    stages read, by stage."""
    if ctx.fused:
        return list(ctx.step.weights)
    by_id = {id(v): v for v in ctx.step.weights}
    ordered = sorted(layout.variable_stage.items(), key=lambda kv: kv[1])
    return [by_id[vid] for vid, stage in ordered if vid in by_id and stage in stages]


def _optimizer_items(ctx: LoweringContext, held: _Held, variables: Sequence[Variable]) -> None:
    """Optimizer state and gradient accumulators of a stage's trainable variables, on their
    variables' tiles, unless offloaded to Streaming Memory."""
    if not ctx.training:
        return
    dist = ctx.dist
    offloaded = dist is not None and dist.spec.offload_gradient_accumulation_buffers
    for var in variables:
        state = ctx.optimizer.slots_per_variable * var.spec.size * 4
        if dist is not None:
            state = dist.on_chip_optimizer_state(state)
        if state:
            item = MemoryItem(f"{var.name} optimizer state", "optimizer-state", state)
            held.add(item, ctx.mapper.variable(var, state))
        if ctx.accumulates and not offloaded:
            size = var.spec.size * ctx.element
            item = MemoryItem(f"{var.name} accumulator", "gradient-accumulators", size)
            held.add(item, ctx.mapper.variable(var, size))


def _stash(ctx: LoweringContext, pipeline: PipelineProgram, p: StageProgram) -> MemoryItem | None:
    """A stage's stash: its activations for every micro-batch it keeps in flight."""
    if not ctx.training or not p.stash_bytes:
        return None
    group = next(g for g, members in enumerate(pipeline.groups) if p.stage in members)
    alive = in_flight(pipeline.schedule, pipeline.logical_stages, group, pipeline.micro_batches)
    if ctx.dist is not None and ctx.dist.spec.offload_activations:
        alive = min(alive, 1)  # the others wait in Streaming Memory
    if not alive:
        return None
    name = f"stage {p.stage} stash ({alive} micro-batches in flight)"
    return MemoryItem(name, "activations", p.stash_bytes * alive)


def _working(
    ctx: LoweringContext,
    layout: StageLayout,
    p: StageProgram,
    plan: StagePlan,
    steps: list[tuple[str, str, int]],
) -> list[LiveItem]:
    """A stage's program steps (appended to ``steps``) and its working buffers and
    temporaries over them."""
    if ctx.fused:
        # One IPU runs the whole step in graph order (with its recomputed clones).
        again = ctx.instructions
        nodes = again.liveness_order if again is not None else ctx.nodes
        sizes = again.sizes if again is not None else value_bytes(ctx.nodes, ctx.precision)
        more, fused = program_items(nodes, ctx.step.fetches, sizes, ctx.mapper, trace_phase)
        steps += more
        return fused
    stage_nodes = [n for n in ctx.nodes if layout.node_stage.get(n.id) == p.stage]
    sizes = {(n.id, s.index): ctx.nbytes(s.spec) for n in stage_nodes for s in n.outputs}
    outside = [s for n in stage_nodes for s in n.outputs]
    fwd = [n for n in stage_nodes if is_forward(n)]
    bwd = [n for n in stage_nodes if not is_forward(n)]
    segments: list[tuple[Sequence[Node], Sequence[Symbol]]]
    if ctx.training and fwd and bwd:
        # The forward block keeps nothing for the backward block: what the backward block
        # reads of it waits in the stash (an item of its own, for every micro-batch in
        # flight) and is received back when the backward block reads it; the backward block
        # re-creates what it recomputes.
        rec = plan.recomputation
        order = list(rec.backward_order) if rec is not None and rec.recomputed else bwd
        segments = [(fwd, fwd[-1].outputs[:1]), (order, outside[-1:])]
    else:
        segments = [(stage_nodes, outside[-1:])]
    items: list[LiveItem] = []

    def received(sym: Symbol) -> int:
        return ctx.nbytes(sym.spec)

    for segment, kept in segments:
        more, seg_items = program_items(
            segment, kept, sizes, ctx.mapper, _pass_of, p.stage, len(steps), received
        )
        steps += more
        items += seg_items
    return items


def _pass_of(node: Node) -> str:
    return "fwd" if is_forward(node) else "bwd"


def _code(ctx: LoweringContext, held: _Held, p: StageProgram, plan: StagePlan) -> None:
    """A stage's code and vertex state (graph outlining shares identical compute sets)."""
    tiles = ctx.chip.tiles
    ops = [x for b in (p.forward, p.backward, p.weight_update) for x in b.supersteps]
    rec = plan.recomputation
    interleaved = ctx.recompute == RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED
    cloned = interleaved and rec is not None and bool(rec.recomputed)
    code = code_tiles([x for x in ops if not (cloned and x.name.startswith("recompute "))], tiles)
    name = _named(ctx, p.stage, "code and vertex state")
    held.add(MemoryItem(name, "code", int(code.sum())), Placement(0, code))
    if cloned:
        # Cloned into the backward stage, the recomputed operations share no code with the
        # forward pass (IPU TensorFlow: "less code reuse" than RecomputeThen...).
        clones = [x for x in p.backward.supersteps if x.name.startswith("recompute ")]
        clone_code = code_tiles(clones, tiles)
        name = f"stage {p.stage} recomputation code (not shared with the forward pass)"
        held.add(MemoryItem(name, "code", int(clone_code.sum())), Placement(0, clone_code))


def _sequential_peak(
    working: Sequence[tuple[int, int]], stashes: Sequence[tuple[int, MemoryItem, int]]
) -> tuple[int, int, list[MemoryItem]]:
    """(working bytes, stage, stashes live) at the Sequential schedule's memory peak on one IPU.

    Stage j's forward pass runs with the stashes of the stages before it, its backward pass with
    those and its own, so the IPU needs max over j of (working_j + stashes of stages <= j).
    """
    stash_of = {stage: item for stage, item, _ in stashes}
    best: tuple[int, int, int, list[MemoryItem]] = (-1, -1, -1, [])
    held: list[MemoryItem] = []
    for peak, stage in sorted(working, key=lambda w: w[1]):
        if stage in stash_of:
            held = [*held, stash_of[stage]]
        total = peak + sum(item.bytes for item in held)
        if best[2] < 0 or (total, peak) > (best[0], best[1]):
            best = (total, peak, stage, held)
    return best[1], best[2], best[3]
