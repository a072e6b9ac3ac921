"""The configuration space of a workload, and a cheap memory and time estimate per candidate.

A candidate is the ``[args]`` table of a validation row (the workload's command line): the
simulator judges it by running it timing-only. The estimates here order and prune the
candidates before that; they never decide that a plan fits (the simulator's memory check does).

BERT: the estimates come from a :class:`~ipusim.plan.profile.Profile` of the model, i.e. from
ipusim's own lowering: one timing-only reference run per (availableMemoryProportion,
recomputation, micro-batch) setting at two micro-batches (interpolated linearly between them),
with a Sequential pipeline of unequal stages so that each IPU's live activations separate into
a working set and a per-layer stash (:class:`BertCosts`). Each candidate is then pure arithmetic:
per stage, fixed + variables + working set + stash x micro-batches in flight (the lowering's
``in_flight``), and the busiest tile from the reference's tile-over-IPU ratio; time per
micro-batch from the layers' forward, backward (and recomputed forward) seconds, the slowest
IPU over ``accumulation + 2 (stages - 1)`` cycles of the Grouped schedule, plus the update. The
encoder layers are split over the IPUs of a replica with :func:`best_splits`, with the
masked-token head in a stage of its own mapped back to IPU 0, as Graphcore's BERT keeps it next
to the embedding.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.lowering.schedules import in_flight
from ipusim.lowering.supersteps import element_bytes
from ipusim.plan import options, profile
from ipusim.plan.partition import best_splits
from ipusim.plan.profile import Profile

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
#: Micro-batches tried.
MICRO_BATCHES = (1, 2, 4, 8, 16, 32)
#: Micro-batches per stage of a reference run (E: enough to run every stage's compute sets;
#: more would push the trace past its record budget, to block-level records without layers).
REFERENCE_DEPTH = 2
#: Splits kept per IPU count and options (the DP's best and the next best it met).
SPLITS_KEPT = 3

SIZES = {"base": (12, 768, 12, 3072), "large": (24, 1024, 16, 4096)}


@dataclass(frozen=True)
class BertShape:
    """The sizes that fix a BERT model: layers, hidden, heads, intermediate, sequence, masked
    tokens, vocabulary."""

    layers: int
    hidden: int
    heads: int
    intermediate: int
    sequence: int
    masked: int
    vocab: int

    @classmethod
    def of(cls, args: dict[str, Any]) -> BertShape:
        size = str(args.get("size", "large"))
        if size not in SIZES:
            raise ConfigurationError(
                f"workload argument size must be one of {sorted(SIZES)}, got {size!r}"
            )
        layers, hidden, heads, inter = SIZES[size]
        seq, masked = int(args.get("sequence", 128)), int(args.get("masked", 20))
        return cls(layers, hidden, heads, inter, seq, masked, int(args.get("vocab", 30522)))


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


@dataclass(frozen=True)
class BertCosts:
    """BERT's per-layer figures at one setting (seconds per micro-batch, bytes), from a profile.

    Attributes:
        layer_s / embed_s / head_s: an encoder layer's, the embedding's and the head's seconds
            per micro-batch (recomputed forward included when recomputing).
        layer_var / embed_var / head_var: variable bytes of an encoder layer, the embedding and
            the head.
        working: live activations of an IPU besides its stash (one layer's working set).
        stash: an encoder layer's activations held per micro-batch in flight.
        embed_act / head_act: the embedding's and the head's activations (IPU 0's activations
            besides its layers', split between them in proportion to forward time, E).
        fixed / fixed0: code and exchange bytes of an encoder IPU; of IPU 0.
        ratio / ratio0: busiest tile over IPU fullness, encoder IPUs; IPU 0.
        update_per_byte: seconds of the weight update and host I/O per execution, per variable
            byte of the fullest IPU (the reference's collectives and Streaming Memory transfers
            taken out: a candidate adds its own, :func:`~ipusim.plan.options.update_transfer_s`).
        overhead_s: seconds per stage and micro-batch the layers' compute sets leave out
            (stage-to-stage exchange, syncs, host I/O): the reference's simulated time over the
            sum of its parts, spread over its stages.
        budget: an IPU's budget, bytes.
        weight_share: the encoder layers' weight bytes over their variable bytes.
        layer_b / embed_b / head_b: the backward passes' part of ``layer_s``, ``embed_s`` and
            ``head_s`` (a recomputed forward runs in the backward pass).
        infeed_s: seconds of infeed copies per micro-batch (the slowest IPU's).
    """

    layer_s: float
    embed_s: float
    head_s: float
    layer_var: float
    embed_var: float
    head_var: float
    working: float
    stash: float
    embed_act: float
    head_act: float
    fixed: float
    fixed0: float
    ratio: float
    ratio0: float
    update_per_byte: float
    overhead_s: float
    budget: float
    weight_share: float
    layer_b: float
    embed_b: float
    head_b: float
    infeed_s: float

    @classmethod
    def of(
        cls,
        p: Profile,
        counts: list[int],
        recompute: bool,
        mb: int,
        moved: Callable[[float], float],
    ) -> BertCosts:
        """From a profile of the Sequential reference layout ``counts`` (encoder layers per
        IPU) at micro-batch ``mb``; ``moved(weight_bytes)``: the seconds of collectives and
        Streaming Memory transfers of the reference's update of an IPU's weights."""
        enc = [i for i in range(1, len(counts)) if i in p.ipu_activations]
        n = np.array([counts[i] for i in enc], float)
        act = np.array([p.ipu_activations[i] for i in enc])
        if len(set(n)) > 1:  # act = working + n * stash over the encoder-only IPUs
            (working, stash), *_ = np.linalg.lstsq(np.c_[np.ones_like(n), n], act, rcond=None)
        else:
            working, stash = 0.0, float(act.mean() / n.mean()) if len(n) else 0.0
        working, stash = max(float(working), 0.0), max(float(stash), 0.0)
        layers = [g for g in p.groups if g.startswith("encoder_")]
        var = [p.variable_bytes([g]) for g in layers]
        ipu0 = p.variable_bytes(["embedding", "head"])
        extra = max(p.ipu_activations[0] - working - counts[0] * stash, 0.0)
        e, h = p.groups["embedding"].activation_bytes, p.groups["head"].activation_bytes
        head_share = h / (e + h) if e + h > 0 else 0.5
        heaviest = max(ipu0 + counts[0] * max(var), max(var) * max(counts))
        stages = len(counts) + (len(counts) > 1)
        acc = REFERENCE_DEPTH * stages
        # Per execution: the update and host I/O but the infeed copies (one per micro-batch,
        # on IPU 0: a candidate adds them to its first stage unless I/O tiles overlap them).
        fixed = p.update_s + p.host_s - p.infeed_s
        parts = p.seconds(p.groups, recompute) + (fixed + p.infeed_s) / acc
        weights = sum(p.groups[g].weight_bytes for g in layers)

        def back(names: list[str]) -> float:
            return sum(p.groups[g].backward_s + recompute * p.groups[g].forward_s for g in names)

        return cls(
            layer_s=max(p.seconds([g], recompute) for g in layers),
            embed_s=p.seconds(["embedding"], recompute),
            head_s=p.seconds(["head"], recompute),
            layer_var=max(var),
            embed_var=p.variable_bytes(["embedding"]),
            head_var=p.variable_bytes(["head"]),
            working=working,
            stash=stash,
            embed_act=extra * (1.0 - head_share),
            head_act=extra * head_share,
            fixed=max((p.ipu_fixed[i] for i in enc), default=p.ipu_fixed[0]),
            fixed0=p.ipu_fixed[0],
            ratio=max((p.ipu_tile_ratio[i] for i in enc), default=p.ipu_tile_ratio[0]),
            ratio0=p.ipu_tile_ratio[0],
            update_per_byte=max(fixed - moved(heaviest * weights / sum(var)), 0.0) / heaviest,
            overhead_s=max(p.sample_s * mb - parts, 0.0) / stages,
            budget=p.budget_bytes,
            weight_share=weights / sum(var),
            layer_b=max(p.seconds([g], recompute) for g in layers)
            * back(layers)
            / p.seconds(layers, recompute),
            embed_b=back(["embedding"]),
            head_b=back(["head"]),
            infeed_s=p.infeed_s / acc,
        )

    def stage(self, layers: int, stage: int, alive: int, head: bool) -> tuple[float, float]:
        """Bytes of the IPU of encoder stage ``stage`` holding ``layers`` layers with ``alive``
        micro-batches in flight (stage 0 also holds the embedding; ``head``: the head too), and
        its use of the budget (the larger of the IPU's and its busiest tile's)."""
        total = self.working + layers * (self.layer_var + self.stash * alive)
        total += self.head_var + self.head_act if head else 0.0
        if stage == 0:
            total += self.fixed0 + self.embed_var + self.embed_act
            return total, total / self.budget * max(1.0, self.ratio0)
        total += self.fixed
        return total, total / self.budget * max(1.0, self.ratio)


def bert_group(layer: str) -> str | None:
    """The profile group of a BERT Keras layer: ``encoder_N``, ``embedding`` or ``head``."""
    if layer.startswith("encoder_"):
        return "_".join(layer.split("_", 2)[:2])
    if "embedding" in layer:
        return "embedding"
    if layer.startswith("mlm") or "slice" in layer:
        return "head"
    return None


def reference_counts(layers: int, ipus: int) -> list[int]:
    """Encoder layers per IPU of the reference run: one on IPU 0 (with the embedding and the
    head), the rest split unevenly over the others so their activations tell the working set
    from the per-layer stash."""
    ipus = max(1, min(ipus, layers))
    if ipus == 1:
        return [layers]
    base, extra = divmod(layers - 1, ipus - 1)
    counts = [1] + [base + (1 if i < extra else 0) for i in range(ipus - 1)]
    if ipus > 2 and counts[1] > 1:
        counts[1] -= 1
        counts[-1] += 1
    return counts


def bert_costs(
    base: dict[str, Any], shape: BertShape, ipus: int, setting: tuple[int, float, bool, str]
) -> BertCosts | None:
    """The :class:`BertCosts` at ``setting`` (micro-batch, availableMemoryProportion,
    recomputation, precision), from the cached profile of a Sequential reference pipeline over
    ``ipus`` IPUs; None if that reference does not fit."""
    mb, proportion, recompute, precision = setting
    counts = reference_counts(shape.layers, ipus)
    stages = len(counts) + (len(counts) > 1)
    args = {
        **base,
        **{"micro-batch": mb, "accumulation": REFERENCE_DEPTH * stages},
        "steps": REFERENCE_DEPTH * stages,
        "replicas": 1,
        "stages": stages,
        "precision": precision,
        "offload": "on",
        "memory-proportion": proportion,
    }
    if stages > 1:
        args.update(
            schedule="sequential",
            **{"device-mapping": [*range(len(counts)), 0], "heads-stage": True},
            **{"layers-per-ipu": counts},
        )
    if recompute:
        mode = "interleaved" if stages > 1 else "auto"
        args.update(recompute=True, **{"recomputation-mode": mode, "checkpoint-every-layer": True})
    key = ("bert", repr(sorted(args.items())))
    p = profile.cached(key, lambda: profile.workload_report("bert", args), bert_group)
    if p is None:
        return None
    # The reference's own optimizer-state traffic (offloaded, one replica).
    sizes = (options.optimizer_slots(base.get("optimizer", "adam")), element_bytes(precision))

    def moved(weight_bytes: float) -> float:
        elements = int(weight_bytes / sizes[1])
        system = str(base["system"])
        return options.update_transfer_s(system, 1, len(counts), ("on", False), elements, sizes)

    return BertCosts.of(p, counts, recompute, mb, moved)


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
            # RecomputeAndBackpropagateInterleaved refuses the Interleaved schedule.
            for recompute in (True, False) if schedule != "interleaved" else (False,):
                for proportion, *_ in options.interpolated(MEMORY_PROPORTIONS, EXTRA_PROPORTIONS):
                    yield {
                        "micro-batch": mb,
                        "accumulation": acc,
                        "recompute": recompute,
                        "offload": "on",
                        "memory-proportion": proportion,
                        "schedule": schedule,
                    }


class _Costs:
    """BERT costs per setting, profiled at the two ends of the micro-batches a search uses
    and interpolated linearly in between (a reference that does not fit: the next smaller)."""

    def __init__(self, base: dict[str, Any], shape: BertShape, ipus: int, mbs: list[int]):
        self.base, self.shape, self.ipus = base, shape, ipus
        self.lo, self.hi = min(mbs), max(mbs)
        self.memo: dict[tuple[Any, ...], BertCosts | None] = {}

    def at(self, mb: int, proportion: float, recompute: bool, precision: str) -> BertCosts | None:
        key = (mb, proportion, recompute, precision)
        if key not in self.memo and proportion not in MEMORY_PROPORTIONS:
            lo, hi, w = options.bracket(proportion, MEMORY_PROPORTIONS)
            ends = self.at(mb, lo, recompute, precision), self.at(mb, hi, recompute, precision)
            self.memo[key] = None if None in ends else _blend(*ends, w)  # type: ignore[arg-type]
        elif key not in self.memo:
            self.memo[key] = self._at(*key)
        return self.memo[key]

    def _at(self, mb: int, proportion: float, recompute: bool, precision: str) -> BertCosts | None:
        def one(m: int) -> BertCosts | None:
            return bert_costs(
                self.base, self.shape, self.ipus, (m, proportion, recompute, precision)
            )

        lo = one(self.lo)
        if lo is None:
            return None
        top, hi = self.hi, None
        for _ in range(2):  # the largest micro-batch, else half of it (a failed try is cheap)
            if top <= self.lo or (hi := one(top)) is not None:
                break
            top //= 2
        if hi is None:
            return _scaled(lo, mb / self.lo)
        return _blend(lo, hi, (mb - self.lo) / (top - self.lo))  # above ``top``: extrapolated


def _blend(lo: BertCosts, hi: BertCosts, w: float) -> BertCosts:
    """``lo`` and ``hi`` interpolated linearly (weight ``w`` on ``hi``, E)."""
    pairs = ((getattr(lo, f.name), getattr(hi, f.name)) for f in fields(lo))
    return BertCosts(*((1 - w) * a + w * b for a, b in pairs))


def _scaled(c: BertCosts, k: float) -> BertCosts:
    """``c`` at ``k`` times its micro-batch: seconds and activations proportional (E)."""
    return replace(
        c,
        layer_s=c.layer_s * k,
        layer_b=c.layer_b * k,
        embed_b=c.embed_b * k,
        head_b=c.head_b * k,
        embed_s=c.embed_s * k,
        head_s=c.head_s * k,
        working=c.working * k,
        stash=c.stash * k,
        embed_act=c.embed_act * k,
        head_act=c.head_act * k,
        infeed_s=c.infeed_s * k,
    )


def bert_candidates(
    args: dict[str, Any], num_ipus: int, global_batch: int, precision: str, prune: bool = True
) -> list[Candidate]:
    """Every BERT configuration on ``num_ipus`` IPUs with ``global_batch`` samples per update,
    estimated from profiles, pruned by memory (unless ``prune`` is False) and ordered fastest
    first."""
    shape = BertShape.of(args)
    iprs = [i for i in (1, 2, 4, 8, 16) if i <= min(num_ipus, shape.layers) and num_ipus % i == 0]
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
    costs = _Costs(args, shape, max(iprs), mbs or [o["micro-batch"] for *_, o in plans] or [1])
    out: list[Candidate] = []
    for ipr, stages, opt in plans:
        c = costs.at(opt["micro-batch"], opt["memory-proportion"], opt["recompute"], precision)
        if c is not None and ipr > 1:
            out += _bert_splits(shape, args, ipr, num_ipus // ipr, stages, opt, precision, c, prune)
        elif c is not None:
            out += _bert_data_parallel(shape, args, num_ipus, global_batch, opt, precision, c)
    kept = [c for c in options.undominated(out) if c.memory <= PRUNE_FACTOR or not prune]
    return options.counted(fastest_first(kept), len(out))


def _bert_splits(
    shape: BertShape,
    base: dict[str, Any],
    ipr: int,
    replicas: int,
    stages: int,
    opt: dict[str, Any],
    precision: str,
    c: BertCosts,
    prune: bool = True,
) -> list[Candidate]:
    """The best few layer splits over ``ipr`` IPUs for one set of options, as candidates, for
    every optimizer-state setting and I/O tile count (see :mod:`ipusim.plan.options`)."""
    mb, acc, schedule = opt["micro-batch"], opt["accumulation"], opt["schedule"]
    head_at = 0 if stages > ipr else ipr - 1  # the encoder stage whose IPU holds the head
    alive = [in_flight(schedule, stages, s, acc) for s in range(ipr)]
    slots, element = (
        options.optimizer_slots(base.get("optimizer", "adam")),
        element_bytes(precision),
    )

    def var(n: int, s: int) -> float:
        return c.layer_var * n + c.embed_var * (s == 0) + c.head_var * (s == head_at)

    def time(first: int, stop: int, s: int) -> float:
        return (stop - first) * c.layer_s + c.embed_s * (s == 0) + c.head_s * (s == head_at)

    def used(n: int, s: int, per_var: float) -> tuple[float, float]:
        b, u = c.stage(n, s, alive[s], s == head_at)
        return b + per_var * var(n, s), u * (1.0 + per_var * var(n, s) / b)

    cands, found = [], {}
    for setting in options.state_options(replicas):
        # On-chip optimizer state per variable byte (none when offloaded).
        per_var = options.state_bytes(c.weight_share / element, slots, *setting, replicas)
        # The fastest splits estimated to fit, and those within the pruning margin (the
        # estimate can be a few percent low or high); without pruning, the fastest splits.
        if per_var not in found:
            found[per_var] = set()
            for limit in (1.0, PRUNE_FACTOR) if prune else (math.inf,):
                fits = functools.partial(_fits, used=used, per_var=per_var, limit=limit)
                found[per_var] |= set(best_splits(shape.layers, ipr, time, fits, SPLITS_KEPT))
        for split in sorted(found[per_var]):
            per_ipu = list(split.layers_per_stage)
            mem = [used(n, s, per_var) for s, n in enumerate(per_ipu)]
            heaviest = max(var(n, s) for s, n in enumerate(per_ipu))
            # Per stage, its forward and backward passes' seconds.
            back = [
                n * c.layer_b + c.embed_b * (s == 0) + c.head_b * (s == head_at)
                for s, n in enumerate(per_ipu)
            ]
            times = [time(a, b, s) for s, (a, b) in enumerate(zip(split.bounds, split.bounds[1:]))]
            passes = [(t - b, b) for t, b in zip(times, back)]
            elements = int(heaviest * c.weight_share / element)
            run = c.update_per_byte * heaviest + options.update_transfer_s(
                str(base["system"]), replicas, ipr, setting, elements, (slots, element)
            )
            ratio = [c.ratio0] + [c.ratio] * (len(per_ipu) - 1)
            tile = max(b / c.budget * r for (b, _), r in zip(mem, ratio))
            args = _bert_args(base, ipr, replicas, stages, opt, precision, per_ipu)
            peak = max(b for b, _ in mem)
            for io in options.io_options(schedule == "grouped"):
                first = [(passes[0][0] + c.infeed_s * (not io), passes[0][1]), *passes[1:]]
                seconds = options.schedule_seconds(schedule, acc, first, c.overhead_s)
                speed = replicas * mb * acc / (run + seconds)
                gives = [_gives_up(opt, stages, replicas), *options.gives_up(setting, io)]
                a = options.setting_args(args, setting, io)
                memory = max(u for _, u in mem)
                cands.append(
                    Candidate(a, memory, speed, "; ".join(gives), peak, tile, peak / c.budget)
                )
    return cands


def _fits(
    first: int, stop: int, stage: int, *, used: Callable[..., Any], per_var: float, limit: float
) -> bool:
    return bool(used(stop - first, stage, per_var)[1] <= limit)


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
    ends = at(lo), at(hi)
    if ends[0] is None or ends[1] is None:
        return []
    fig = tuple((1 - w) * a + w * b for a, b in zip(*ends))
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
    args = dict(base)
    args.update(
        replicas=replicas,
        **{"micro-batch": opt["micro-batch"], "accumulation": opt["accumulation"]},
        steps=opt["accumulation"],
        stages=stages,
        precision=precision,
        optimizer=args.get("optimizer", "adam"),
        offload=opt["offload"],
        schedule=opt.get("schedule", "grouped"),
        **{"memory-proportion": opt["memory-proportion"]},
    )
    if stages > ipr:  # the head in a stage of its own, back on IPU 0
        args.update(
            {"device-mapping": [*range(ipr), 0], "heads-stage": True, "layers-per-ipu": per_ipu}
        )
    elif ipr > 1:  # the head with the last encoder stage
        args.update({"device-mapping": [*range(ipr)], "layers-per-ipu": per_ipu})
    if opt["recompute"]:
        args.update(
            {
                "recompute": True,
                "recomputation-mode": "interleaved" if ipr > 1 else "auto",
                "checkpoint-every-layer": True,
            }
        )
    if replicas > 1:
        args["sharded-optimizer-state"] = True
    return args


def _gives_up(opt: dict[str, Any], stages: int, replicas: int) -> str:
    """What a configuration trades away, in a few words."""
    parts = []
    if opt["recompute"]:
        parts.append("recomputes the forward pass (about a third more compute)")
    if stages > 1:
        parts.append(f"pipeline fill and drain over {stages} stages")
    if stages > 1 and opt.get("schedule", "grouped") != "grouped":
        parts.append(f"{opt['schedule']} schedule")
    if replicas > 1:
        parts.append(f"gradient all-reduce over {replicas} replicas")
    return "; ".join(parts) or "nothing notable"
