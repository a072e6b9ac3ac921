"""The configuration space of a workload, and a cheap memory and time estimate per candidate.

A candidate is the ``[args]`` table of a validation row (the workload's command line): the
simulator judges it by running it timing-only. The estimates here order and prune the
candidates before that; they never decide that a plan fits (the simulator's memory check does).

BERT: the estimates come from a :class:`~ipusim.plan.profile.Profile` of the model, i.e. from
ipusim's own lowering: one timing-only reference run per (availableMemoryProportion,
recomputation, micro-batch) setting at the search's smallest and largest micro-batches and the
power of two nearest their geometric middle (interpolated linearly between neighbours),
with a Sequential pipeline of unequal stages so that each IPU's live activations separate into
a working set and a per-layer stash (:class:`BertCosts`). Each candidate is then pure arithmetic:
per stage, fixed + variables + working set + stash x micro-batches in flight (the lowering's
``in_flight``), and the busiest tile from the reference's tile-over-IPU ratio; time per
micro-batch from the layers' forward, backward (and recomputed forward) seconds, over the
schedule's steps with their copies and syncs (:mod:`ipusim.plan.steps`), plus the update. The
encoder layers are split over the IPUs of a replica with :func:`best_splits`, with the
masked-token head in a stage of its own mapped back to IPU 0, as Graphcore's BERT keeps it next
to the embedding. Recomputation: none, a checkpoint after every encoder layer, or (the head in
the last stage, or Interleaved) RecomputationMode Auto without checkpoints, estimated from the
other two settings' profiles (:func:`~ipusim.plan.bert_costs.without_checkpoints`). The costs
live in :mod:`ipusim.plan.bert_costs`; the schedule, the optimizer-state options, I/O tiles and
interpolated proportions in :mod:`ipusim.plan.options`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ipusim.lowering.schedules import in_flight
from ipusim.lowering.supersteps import element_bytes
from ipusim.plan import options, profile, steps
from ipusim.plan.bert_costs import (
    BertCosts,
    BertShape,
    CostCache,
    bert_costs,
    bert_group,
    without_checkpoints,
)
from ipusim.plan.bert_units import Units, halves, whole_layers
from ipusim.plan.partition import Split, best_splits

__all__ = [
    "BertCosts",
    "BertShape",
    "Candidate",
    "bert_candidates",
    "bert_costs",
    "bert_group",
    "fastest_first",
]

#: Estimates above this multiple of the budget are pruned (E: the estimate tracks the memory
#: check within about 10% on the configurations of tests/plan/test_profile.py; the margin keeps
#: a plan the check would pass; the simulator judges the rest).
PRUNE_FACTOR = 1.15
#: availableMemoryProportion values tried (E: the IPU default 0.6 and the 0.2 of Graphcore's
#: BERT configs, which leaves room for larger micro-batches).
MEMORY_PROPORTIONS = (0.2, 0.6)
#: availableMemoryProportion values estimated by interpolating the profiled ones (E).
EXTRA_PROPORTIONS = (0.4,)
#: IPUs per replica tried (those that divide the system's IPUs).
IPUS_PER_REPLICA = (1, 2, 4, 8, 16)
#: Micro-batches tried.
MICRO_BATCHES = (1, 2, 4, 8, 16, 32)
#: Splits kept per IPU count and options (the DP's best and the next best it met).
SPLITS_KEPT = 3
#: Pipeline option sets also searched for splits inside layers: the fastest by their layer
#: splits' estimates (E: a bound on the search's time; the best sub-layer split of BERT-Large
#: was among the fastest option sets' in the bench rows).
SUB_LAYER_SETS = 24


@dataclass(frozen=True)
class Candidate:
    """One configuration, with its estimates.

    Attributes:
        args: the workload's arguments (a validation row's ``[args]``).
        memory: the estimated fullest IPU's use of its budget: the larger of its bytes over
            the IPU budget and its busiest tile over the tile budget (as ``Outcome.memory_used``).
        speed: the estimated throughput, samples per second.
        gives_up: what this configuration trades away, in words.
        ipu_bytes: the estimated bytes of the fullest IPU.
        tile_used: the estimated busiest tile's use of the tile budget.
        ipu_used: the estimated fullest IPU's bytes over its budget.
    """

    args: dict[str, Any]
    memory: float
    speed: float
    gives_up: str
    ipu_bytes: float = math.nan
    tile_used: float = math.nan
    ipu_used: float = math.nan

    @classmethod
    def of(
        cls,
        args: dict[str, Any],
        speed: float,
        gives_up: str,
        ipu_bytes: float,
        budget: float,
        tile_ratio: float,
    ) -> Candidate:
        """A candidate whose fullest IPU holds ``ipu_bytes`` of its ``budget`` and whose busiest
        tile is ``tile_ratio`` times as full as that IPU: its ``memory`` is the larger use."""
        used = ipu_bytes / budget
        return cls(
            args, used * max(1.0, tile_ratio), speed, gives_up, ipu_bytes, used * tile_ratio, used
        )


def fastest_first(cands: list[Candidate]) -> list[Candidate]:
    """``cands`` by estimated speed, fastest first; ties by memory, then by the ``[args]``."""
    return sorted(cands, key=lambda c: (-c.speed, c.memory, repr(sorted(c.args.items()))))


def _pipeline_options(
    replicas: int, global_batch: int, stages: int, ipus: int
) -> Iterator[dict[str, Any]]:
    """Schedule, micro-batch, accumulation, recomputation and availableMemoryProportion choices
    with the global batch (the optimizer-state and I/O tile choices come per split)."""
    for schedule in options.schedules(stages, ipus):
        for mb in MICRO_BATCHES:
            if global_batch % (mb * replicas):
                continue
            acc = global_batch // (mb * replicas)
            if not options.accumulation_ok(schedule, stages, ipus, acc):
                continue
            for recompute, checkpoints in _recomputations(schedule, stages, ipus):
                for proportion, *_ in options.interpolated(MEMORY_PROPORTIONS, EXTRA_PROPORTIONS):
                    yield {
                        "micro-batch": mb,
                        "accumulation": acc,
                        "recompute": recompute,
                        "checkpoints": checkpoints,
                        "offload": "on",
                        "memory-proportion": proportion,
                        "schedule": schedule,
                    }


def _recomputations(schedule: str, stages: int, ipus: int) -> list[tuple[bool, bool]]:
    """(recompute, checkpoint after every layer) choices of a pipeline. With checkpoints:
    RecomputeAndBackpropagateInterleaved, which refuses the Interleaved schedule. Without
    (RecomputationMode Auto): only with the head in the last encoder stage, the one stage that
    then recomputes nothing (M: with the head in a stage of its own, BERT-Large on 4 IPUs ran
    0.1-0.3% slower and held 4-37% more bytes on its fullest IPU without checkpoints; with
    the head in the last stage, Sequential ran 3.5% faster, for 18% more bytes). Auto with
    Grouped (RecomputeThenBackpropagate) simulates within 0.1% of
    RecomputeAndBackpropagateInterleaved without checkpoints, and a checkpoint every 2 or 3
    layers no faster and no smaller than every layer (M), so neither is searched."""
    if schedule == "interleaved":
        return [(True, False), (False, False)]
    if stages == ipus and stages > 1:
        return [(True, True), (True, False), (False, False)]
    return [(True, True), (False, False)]


def bert_candidates(
    args: dict[str, Any], num_ipus: int, global_batch: int, precision: str, prune: bool = True
) -> list[Candidate]:
    """Every BERT configuration on ``num_ipus`` IPUs with ``global_batch`` samples per update,
    estimated from profiles, pruned by memory (unless ``prune`` is False) and ordered fastest
    first."""
    shape = BertShape.of(args)
    iprs = [i for i in IPUS_PER_REPLICA if i <= min(num_ipus, shape.layers) and num_ipus % i == 0]
    # Pipelines: the head in a stage of its own on IPU 0, or with the last encoder stage.
    plans = [
        (ipr, stages, opt)
        for ipr in iprs
        for stages in ((ipr + 1, ipr) if ipr > 1 else (1,))
        for opt in _pipeline_options(num_ipus // ipr, global_batch, stages, ipr)
    ]
    # The references span the Grouped plans' micro-batches (the others' are extrapolated, E),
    # so the other schedules cost no profile of their own.
    mbs = [o["micro-batch"] for *_, o in plans if o["schedule"] == "grouped"]
    mbs = mbs or [o["micro-batch"] for *_, o in plans] or [1]
    costs = CostCache(args, shape, max(iprs), mbs, MEMORY_PROPORTIONS)
    out: list[Candidate] = []
    pipelines: list[tuple[float, int, tuple[Any, ...]]] = []
    for index, (ipr, stages, opt) in enumerate(plans):
        c, last = _recomputed(costs, opt, precision)
        if c is not None and last is not None and ipr > 1:
            plan = (args, ipr, num_ipus // ipr, stages, opt, precision, c, last)
            found = _bert_splits(*plan, whole_layers(shape), prune)
            out += found
            fitting = [x.speed for x in found if x.memory <= 1.0]
            pipelines.append((max(fitting, default=0.0), index, plan))
        elif c is not None:
            out += _bert_data_parallel(shape, args, num_ipus, global_batch, opt, precision, c)
    # Splits inside layers for the option sets whose layer splits estimate fastest (a search
    # over twice the units costs four times as much).
    for *_, plan in sorted(pipelines, key=lambda p: (-p[0], p[1]))[:SUB_LAYER_SETS]:
        out += _bert_splits(*plan, halves(shape, plan[-2]), prune)
    kept = [c for c in options.undominated(out) if c.memory <= PRUNE_FACTOR or not prune]
    return options.counted(fastest_first(kept), len(out))


def _recomputed(
    costs: CostCache, opt: dict[str, Any], precision: str
) -> tuple[BertCosts | None, BertCosts | None]:
    """The figures of an option set's stages, and of its last stage: without checkpoints
    (:func:`without_checkpoints`) the last stage recomputes nothing."""
    setting = (opt["micro-batch"], opt["memory-proportion"])
    c = costs.at(*setting, opt["recompute"], precision)
    if not opt["recompute"] or opt["checkpoints"] or c is None:
        return c, c
    plain = costs.at(*setting, False, precision)
    return (None, None) if plain is None else (without_checkpoints(c, plain), plain)


@dataclass(frozen=True)
class _Stages:
    """A pipeline's stages over ``units`` of the encoder (:mod:`ipusim.plan.bert_units`): each
    stage's seconds, variable bytes and memory from the layer's figures ``c``; stage 0 also
    holds the embedding, stage ``head_at`` the head; ``alive[s]``: micro-batches in flight;
    ``last``: the figures of the last encoder stage's seconds (``c`` but when that stage ends
    the pipeline and, without checkpoints, recomputes nothing)."""

    c: BertCosts
    units: Units
    head_at: int
    alive: tuple[int, ...]
    last: BertCosts

    def _timed(self, s: int) -> BertCosts:
        return self.last if s == len(self.alive) - 1 else self.c

    def var(self, first: int, stop: int, s: int) -> float:
        c = self.c
        layers = c.layer_var * self.units.share("var", first, stop)
        return layers + c.embed_var * (s == 0) + c.head_var * (s == self.head_at)

    def time(self, first: int, stop: int, s: int) -> float:
        c = self._timed(s)
        layers = c.layer_s * self.units.share("time", first, stop)
        return layers + c.embed_s * (s == 0) + c.head_s * (s == self.head_at)

    def back(self, first: int, stop: int, s: int) -> float:
        """The backward pass's part of :meth:`time` (the units' share of the layer's)."""
        c = self._timed(s)
        layers = c.layer_b * self.units.share("back", first, stop)
        return layers + c.embed_b * (s == 0) + c.head_b * (s == self.head_at)

    def used(self, first: int, stop: int, s: int, per_var: float) -> tuple[float, float]:
        """The stage's IPU bytes, with ``per_var`` bytes of optimizer state per variable byte,
        and its use of the budget (busiest tile included)."""
        c, units = self.c, self.units
        fixed, use = c.stage(0, s, self.alive[s], s == self.head_at)
        layers = c.layer_var * units.share("var", first, stop)
        layers += (c.stash * self.alive[s] + c.held) * units.share("act", first, stop)
        total = fixed + layers + per_var * self.var(first, stop, s)
        return total, use * total / fixed


def _bert_splits(
    base: dict[str, Any],
    ipr: int,
    replicas: int,
    stages: int,
    opt: dict[str, Any],
    precision: str,
    c: BertCosts,
    last: BertCosts,
    units: Units,
    prune: bool = True,
) -> list[Candidate]:
    """The best few splits of ``units`` (whole layers, or halves: :mod:`ipusim.plan.bert_units`)
    over ``ipr`` IPUs for one set of options, as candidates, for every optimizer-state setting
    and I/O tile count (see :mod:`ipusim.plan.options`)."""
    acc, schedule = opt["accumulation"], opt["schedule"]
    head_at = 0 if stages > ipr else ipr - 1  # the encoder stage whose IPU holds the head
    alive = tuple(in_flight(schedule, stages, s, acc) for s in range(ipr))
    slots = options.optimizer_slots(base.get("optimizer", "adam"))
    element = element_bytes(precision)
    cands = []
    model = _Stages(c, units, head_at, alive, last)
    found: dict[float, set[Split]] = {}
    for setting in options.state_options(replicas):
        # On-chip optimizer state per variable byte (none when offloaded).
        per_var = options.state_bytes(c.weight_share / element, slots, *setting, replicas)
        if per_var not in found:
            found[per_var] = _found_splits(model, ipr, per_var, prune)
        for split in sorted(found[per_var]):
            cands += _split_candidates(
                model, split, base, (ipr, replicas, stages), opt, precision, setting, per_var
            )
    return cands


def _found_splits(model: _Stages, ipr: int, per_var: float, prune: bool) -> set[Split]:
    """The fastest splits estimated to fit, and those within the pruning margin (the estimate
    can be a few percent low or high); without pruning, the fastest splits. Splits inside
    layers only where they cut a layer (the others are the whole-layer splits)."""
    units, found = model.units, set()
    for limit in (1.0, PRUNE_FACTOR) if prune else (math.inf,):
        fits = functools.partial(_fits, used=model.used, per_var=per_var, limit=limit)
        found |= set(best_splits(units.count, ipr, model.time, fits, SPLITS_KEPT))
    return {s for s in found if units.per_layer == 1 or units.is_sub_layer(s.bounds)}


def _split_candidates(
    model: _Stages,
    split: Split,
    base: dict[str, Any],
    shape: tuple[int, int, int],
    opt: dict[str, Any],
    precision: str,
    setting: tuple[str, bool],
    per_var: float,
) -> list[Candidate]:
    """One split's candidates, one per I/O tile count; ``shape``: IPUs per replica, replicas,
    stages; ``per_var``: on-chip optimizer-state bytes per variable byte at ``setting``."""
    (ipr, replicas, stages), c = shape, model.c
    mb, acc, schedule = opt["micro-batch"], opt["accumulation"], opt["schedule"]
    slots = options.optimizer_slots(base.get("optimizer", "adam"))
    element = element_bytes(precision)
    spans = list(enumerate(zip(split.bounds, split.bounds[1:])))
    mem = [model.used(a, b, s, per_var) for s, (a, b) in spans]
    heaviest = max(model.var(a, b, s) for s, (a, b) in spans)
    # Per encoder stage, its forward and backward passes' seconds.
    back = [model.back(a, b, s) for s, (a, b) in spans]
    passes = [(model.time(a, b, s) - bs, bs) for (s, (a, b)), bs in zip(spans, back)]
    link = _LinkCosts.of(str(base["system"]), replicas * ipr)
    elements = int(heaviest * c.weight_share / element)
    run = (
        c.update_per_byte * heaviest
        + c.execution_s
        + options.update_transfer_s(
            str(base["system"]), replicas, ipr, setting, elements, (slots, element)
        )
    )
    ratio = [c.ratio0] + [c.ratio] * (len(spans) - 1)
    tile = max(b / c.budget * r for (b, _), r in zip(mem, ratio))
    per_ipu, ffn = model.units.placement(split.bounds)
    args = _bert_args(base, ipr, replicas, stages, opt, precision, per_ipu)
    if ffn is not None:
        args["ffn-per-ipu"] = ffn
    peak, memory = max(b for b, _ in mem), max(u for _, u in mem)
    cands = []
    io_ipus = {0} if stages > ipr else {0, ipr - 1}  # the first and last stages' IPUs
    for io in options.io_options(schedule == "grouped"):
        share = options.compute_share(str(base["system"]), io)
        shares = [share if ipu in io_ipus else 1.0 for ipu in range(ipr)]
        costs = link.stage_costs(c, passes, shares, stages, io)
        seconds = steps.run_seconds(schedule, acc, costs)
        gives = [_gives_up(opt, stages, replicas), *options.gives_up(setting, io)]
        a = options.setting_args(args, setting, io)
        speed = replicas * mb * acc / (run + seconds)
        # Fewer tiles on the IPUs with host I/O: a smaller budget; the busiest tile holds what
        # it held.
        ipu_use = max(b / c.budget / h for (b, _), h in zip(mem, shares))
        held = (max(memory, ipu_use), speed, "; ".join(gives), peak, tile)
        cands.append(Candidate(a, *held, ipu_use))
    return cands


@dataclass(frozen=True)
class _LinkCosts:
    """The links and syncs of a replica's IPUs (the engine's figures, ``lowering/pipeline.py``):
    neighbour and pair bandwidth (bytes/s) and latency (s) of a copy, and a step's sync (s)."""

    link: tuple[float, float, float]
    sync_s: float

    @classmethod
    @functools.cache
    def of(cls, system: str, ipus: int) -> _LinkCosts:
        from ipusim.cost.sync import cross_ipu_sync_ps
        from ipusim.hardware import load_system

        spec = load_system(system)
        link = spec.ipu_link
        bandwidths = (link.neighbour_bandwidth_bytes_per_s, link.pair_bandwidth_bytes_per_s)
        return cls((*bandwidths, link.latency_s), cross_ipu_sync_ps(spec, ipus) * 1e-12)

    def stage_costs(
        self,
        c: BertCosts,
        passes: list[tuple[float, float]],
        shares: list[float],
        stages: int,
        io: int,
    ) -> steps.StageCosts:
        """The pipeline's stages: the encoder stages' ``passes`` on IPUs ``0 .. ipr - 1``
        (slowed where I/O tiles leave ``shares`` of the tiles) and, with more ``stages`` than
        IPUs, the head's stage back on IPU 0 (its passes out of stage 0's); the copies of an
        encoder boundary's bytes and the head's; the infeed copy (none with I/O ``io``
        tiles), the outfeed copy and the profile's unexplained seconds (``overhead_s``, per
        stage and micro-batch over its two steps) with the sync."""
        timed = [(k * f, k * b) for (f, b), k in zip(passes, map(options.io_slowdown, shares))]
        ipus = list(range(len(timed)))
        sizes = [(c.layer_send, c.layer_return)] * len(timed)
        if stages > len(passes):  # the head's own stage
            head = (c.head_s - c.head_b, c.head_b)
            k = options.io_slowdown(shares[0])
            timed[0] = (timed[0][0] - k * head[0], timed[0][1] - k * head[1])
            timed.append((k * head[0], k * head[1]))
            ipus.append(0)
            sizes[-1] = (c.head_send, sizes[-1][1])
            sizes.append((0.0, c.head_return))
        sends = tuple(
            (
                steps.copy_seconds(f, ipu, ipus[min(s + 1, len(ipus) - 1)], self.link),
                steps.copy_seconds(b, ipu, ipus[max(s - 1, 0)], self.link),
            )
            for s, ((f, b), ipu) in enumerate(zip(sizes, ipus))
        )
        return steps.StageCosts(
            tuple(timed),
            tuple(ipus),
            sends,
            self.sync_s + c.overhead_s / 2,
            c.infeed_s * (not io),
            c.outfeed_s,
        )


def _fits(
    first: int, stop: int, stage: int, *, used: Callable[..., Any], per_var: float, limit: float
) -> bool:
    return bool(used(first, stop, stage, per_var)[1] <= limit)


def _bert_data_parallel(
    shape: BertShape,
    base: dict[str, Any],
    replicas: int,
    global_batch: int,
    opt: dict[str, Any],
    precision: str,
    c: BertCosts,
) -> list[Candidate]:
    """One IPU per replica: estimated from profiles of the configuration itself at two
    micro-batches (its all-reduce and single-IPU memory plan differ from a pipeline's stages),
    run only when the stage model does not rule it out (over twice the budget); an
    interpolated availableMemoryProportion from the profiled ones around it."""
    if c.stage(shape.layers, 0, 1, True)[1] > 2.0:
        return []
    mb, acc, per_replica = opt["micro-batch"], opt["accumulation"], global_batch // replicas
    mbs = [m for m in MICRO_BATCHES if per_replica % m == 0]

    def at(proportion: float) -> tuple[float, ...] | None:
        one = {**opt, "micro-batch": 1, "memory-proportion": proportion}
        setting = _bert_args(base, 1, replicas, 1, one, precision, [])
        return profile.per_micro_batch("bert", setting, bert_group, mbs, per_replica, (1, 8)).get(
            mb
        )

    lo, hi, w = options.bracket(opt["memory-proportion"], MEMORY_PROPORTIONS)
    low, high = at(lo), at(hi)
    if low is None or high is None:
        return []
    fig = options.lerp(low, high, w)
    args = _bert_args(base, 1, replicas, 1, opt, precision, [])
    sizes = (options.optimizer_slots(args["optimizer"]), element_bytes(precision))
    variants = options.data_parallel_variants(
        fig, acc, str(base["system"]), replicas, ("on", replicas > 1), sizes
    )
    return [
        Candidate.of(
            options.setting_args(args, state, io),
            global_batch / step,
            "; ".join([_gives_up(opt, 1, replicas), *options.gives_up(state, io)]),
            used,
            fig[4],
            fig[1],
        )
        for state, io, step, used in variants
    ]


def _bert_args(
    base: dict[str, Any],
    ipr: int,
    replicas: int,
    stages: int,
    opt: dict[str, Any],
    precision: str,
    per_ipu: list[int],
) -> dict[str, Any]:
    """A candidate's ``[args]``."""
    args = {
        **base,
        "replicas": replicas,
        "micro-batch": opt["micro-batch"],
        "accumulation": opt["accumulation"],
        "steps": opt["accumulation"],
        "stages": stages,
        "precision": precision,
        "optimizer": base.get("optimizer", "adam"),
        "offload": opt["offload"],
        "schedule": opt.get("schedule", "grouped"),
        "memory-proportion": opt["memory-proportion"],
    }
    if stages > ipr:  # the head in a stage of its own, back on IPU 0
        args.update(
            {"device-mapping": [*range(ipr), 0], "heads-stage": True, "layers-per-ipu": per_ipu}
        )
    elif ipr > 1:  # the head with the last encoder stage
        args.update({"device-mapping": [*range(ipr)], "layers-per-ipu": per_ipu})
    if opt["recompute"]:
        checkpoints = opt.get("checkpoints", True)
        mode = "interleaved" if checkpoints and ipr > 1 else "auto"
        args.update({"recompute": True, "recomputation-mode": mode})
        if checkpoints:
            args["checkpoint-every-layer"] = True
    if replicas > 1:
        args["sharded-optimizer-state"] = True
    return args


def _gives_up(opt: dict[str, Any], stages: int, replicas: int) -> str:
    """What a configuration trades away, in a few words."""
    parts = []
    if opt["recompute"] and opt.get("checkpoints", True):
        parts.append("recomputes the forward pass (about a third more compute)")
    elif opt["recompute"]:
        parts.append(
            "recomputes the forward pass but in the last stage, without checkpoints (every "
            "layer's activations of a stage live at once)"
        )
    if stages > 1:
        parts.append(f"pipeline fill and drain over {stages} stages")
    if stages > 1 and opt.get("schedule", "grouped") != "grouped":
        parts.append(f"{opt['schedule']} schedule")
    if replicas > 1:
        parts.append(f"gradient all-reduce over {replicas} replicas")
    return "; ".join(parts) or "nothing notable"
