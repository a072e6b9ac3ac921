"""BERT's per-layer costs for the planner's BERT space (:mod:`ipusim.plan.space`), read from
the profile of a Sequential reference pipeline of unequal stages (see :class:`BertCosts`) and
cached per setting (:class:`CostCache`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import astuple, dataclass, replace
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.lowering.supersteps import element_bytes
from ipusim.plan import options, profile
from ipusim.plan.profile import Profile

__all__ = [
    "BertCosts",
    "BertShape",
    "CostCache",
    "bert_costs",
    "bert_group",
    "bert_half_group",
    "reference_args",
    "reference_counts",
    "without_checkpoints",
]

#: Micro-batches per stage of a reference run (E: enough to run every stage's compute sets;
#: more would push the trace past its record budget, to block-level records without layers).
REFERENCE_DEPTH = 2
#: Trace tracks of a reference's compute sets: their syncs too, so a stage's seconds grow with
#: its layers' syncs and what the layers leave out (``overhead_s``) is the stage boundaries'.
SYNCED = (*profile.TRACKS, "sync")
SIZES = {"base": (12, 768, 12, 3072), "large": (24, 1024, 16, 4096)}
#: Figures that stop growing with the micro-batch, held at the largest profiled one's above it
#: (M: code and exchange bytes of an encoder IPU of tests/plan's small BERT 24 MB at
#: micro-batch 1, 62 MB at 8, 61 MB at 16; its working set 6, 56, 74 MB; BERT-Large's working
#: set 44, 119, 139 MB at 1, 2, 4: extrapolated linearly, 30% too many bytes at twice the
#: largest profiled micro-batch; E: held, about 6% too few).
HELD_ABOVE = ("working", "fixed", "fixed0", "ratio", "ratio0")


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
class BertCosts:
    """BERT's per-layer figures at one setting (seconds per micro-batch, bytes), from a profile.

    Attributes:
        layer_s / embed_s / head_s: an encoder layer's, the embedding's and the head's seconds
            per micro-batch (recomputed forward included when recomputing, but the head's:
            it follows the last checkpoint).
        layer_var / embed_var / head_var: variable bytes of an encoder layer, the embedding and
            the head.
        working: live activations of an IPU besides its stash (one layer's working set).
        stash: an encoder layer's activations held per micro-batch in flight.
        embed_act / head_act: the embedding's and the head's activations (IPU 0's activations
            besides its layers', split between them in proportion to forward time, E).
        fixed / fixed0: code and exchange bytes of an encoder IPU; of IPU 0.
        ratio / ratio0: busiest tile over IPU fullness, encoder IPUs; IPU 0.
        update_per_byte: seconds of the weight update (its compute sets and syncs) and host I/O
            per execution, per variable byte of the fullest IPU (the reference's collectives
            and Streaming Memory transfers taken out: a candidate adds its own,
            :func:`~ipusim.plan.options.update_transfer_s`).
        overhead_s: seconds per stage and micro-batch the layers' compute sets leave out
            (stage-to-stage copies, inter-IPU syncs, host I/O; the compute sets' own syncs are
            the layers'): the reference's simulated time over the
            sum of its parts, spread over its stages.
        budget: an IPU's budget, bytes.
        weight_share: the encoder layers' weight bytes over their variable bytes.
        layer_b / embed_b / head_b: the backward passes' part of ``layer_s``, ``embed_s`` and
            ``head_s`` (a recomputed forward runs in the backward pass).
        infeed_s: seconds of infeed copies per micro-batch (the slowest IPU's).
        execution_s: seconds of the host's work per execution (a candidate's step has it once).
        attention_s / attention_b / attention_var: the attention halves' shares of the encoder
            layers' seconds, backward seconds and variable bytes (the feed-forward halves have
            the rest; :mod:`ipusim.plan.bert_units`).
        held: an encoder layer's activations held for one micro-batch whatever the micro-batches
            in flight (recomputation without checkpoints: :func:`without_checkpoints`).
        kept: a stage's activations held per micro-batch in flight whatever its layers (its
            input, without checkpoints).
        layer_send / layer_return: bytes an encoder stage sends the next stage after a forward
            pass, and the previous one after a backward pass (the reference's copies between
            two encoder stages; its first boundary's on two IPUs).
        head_send / head_return: the same bytes into and out of a stage of the head's own.
        outfeed_s: seconds of the last stage's outfeed copy per micro-batch.
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
    execution_s: float
    attention_s: float
    attention_b: float
    attention_var: float
    held: float = 0.0
    kept: float = 0.0
    layer_send: float = 0.0
    layer_return: float = 0.0
    head_send: float = 0.0
    head_return: float = 0.0
    outfeed_s: float = 0.0

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
        working, stash = _working_and_stash(p, counts, enc)
        per_layer = _layer_groups(p)
        layers = [g for names in per_layer.values() for g in names]
        attention = [g for g in layers if g.endswith("/attention")]
        var = [p.variable_bytes(names) for names in per_layer.values()]
        layer_s = max(p.seconds(names, recompute) for names in per_layer.values())
        ipu0 = p.variable_bytes(["embedding", "head"])
        extra = max(p.ipu_activations[0] - working - counts[0] * stash, 0.0)
        e, h = p.groups["embedding"].activation_bytes, p.groups["head"].activation_bytes
        head_share = h / (e + h) if e + h > 0 else 0.5
        heaviest = max(ipu0 + counts[0] * max(var), max(var) * max(counts))
        stages = len(counts) + (len(counts) > 1)
        acc = REFERENCE_DEPTH * stages
        # Per execution: the update and Streaming Memory traffic, and the host's per-execution
        # work (a candidate has it once); per micro-batch: the infeed and outfeed copies and
        # the copies and syncs between stages (a candidate's steps have their own,
        # ipusim.plan.steps).
        fixed = p.update_s + p.update_traffic_s
        # The head follows the last checkpoint (in a stage of its own, or the last encoder
        # stage's last layers): RecomputeAndBackpropagateInterleaved recomputes nothing after
        # a stage's final checkpoint, and the last stage nothing else (ipusim.lowering.recompute).
        body = [g for g in p.groups if g != "head"]
        parts = p.seconds(body, recompute) + p.seconds(["head"])
        parts += (fixed + p.infeed_s + p.outfeed_s + p.link_s + p.execution_s) / acc
        # The reference's Streaming Memory transfers out (a candidate adds its own), the
        # update's compute and syncs kept whatever the transfers' estimate.
        weights = sum(p.groups[g].weight_bytes for g in layers)
        moved_s = moved(heaviest * weights / sum(var))
        update = p.update_s + max(p.update_traffic_s - moved_s, 0.0)

        def back(names: list[str], again: bool = recompute) -> float:
            return sum(p.groups[g].backward_s + again * p.groups[g].forward_s for g in names)

        return cls(
            layer_s=layer_s,
            embed_s=p.seconds(["embedding"], recompute),
            head_s=p.seconds(["head"]),
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
            update_per_byte=update / heaviest,
            overhead_s=max(p.sample_s * mb - parts, 0.0) / stages,
            budget=p.budget_bytes,
            weight_share=weights / sum(var),
            layer_b=layer_s * back(layers) / p.seconds(layers, recompute),
            embed_b=back(["embedding"]),
            head_b=back(["head"], False),
            infeed_s=p.infeed_s / acc,
            execution_s=p.execution_s,
            attention_s=p.seconds(attention, recompute) / p.seconds(layers, recompute),
            attention_b=back(attention) / back(layers),
            attention_var=p.variable_bytes(attention) / sum(var),
            **_sends(p.copies, stages),
            outfeed_s=p.outfeed_s / acc,
        )

    def stage(self, layers: int, stage: int, alive: int, head: bool) -> tuple[float, float]:
        """Bytes of the IPU of encoder stage ``stage`` holding ``layers`` layers with ``alive``
        micro-batches in flight (stage 0 also holds the embedding; ``head``: the head too), and
        its use of the budget (the larger of the IPU's and its busiest tile's)."""
        total = self.working + self.kept * alive
        total += layers * (self.layer_var + self.stash * alive + self.held)
        total += self.head_var + self.head_act if head else 0.0
        if stage == 0:
            total += self.fixed0 + self.embed_var + self.embed_act
            return total, total / self.budget * max(1.0, self.ratio0)
        total += self.fixed
        return total, total / self.budget * max(1.0, self.ratio)


def _sends(copies: tuple[tuple[int, int, float], ...], stages: int) -> dict[str, float]:
    """The bytes crossing an encoder boundary and the head's, from the Sequential reference's
    copies in time order: per micro-batch, the forward copies of boundaries ``0 .. S - 2``,
    then the backward ones of ``S - 2 .. 0``; the head in the last stage."""
    n = 2 * (stages - 1)
    if stages < 2 or len(copies) < n:
        return {}
    layer = 1 if stages > 3 else 0  # between two encoder stages, where there are two
    return {
        "layer_send": copies[layer][2],
        "layer_return": copies[n - 1 - layer][2],
        "head_send": copies[stages - 2][2],
        "head_return": copies[stages - 1][2],
    }


def _working_and_stash(p: Profile, counts: list[int], enc: list[int]) -> tuple[float, float]:
    """Bytes an encoder IPU holds whatever its layer count, and a layer's stash: the fit of
    ``activations = working + layers * stash`` over the encoder-only IPUs ``enc`` (one layer
    count among them: all stash)."""
    n = np.array([counts[i] for i in enc], float)
    act = np.array([p.ipu_activations[i] for i in enc])
    if len(set(n)) > 1:
        (working, stash), *_ = np.linalg.lstsq(np.c_[np.ones_like(n), n], act, rcond=None)
    else:
        working, stash = 0.0, float(act.mean() / n.mean()) if len(n) else 0.0
    return max(float(working), 0.0), max(float(stash), 0.0)


def _layer_groups(p: Profile) -> dict[str, list[str]]:
    """Per encoder layer, its profile groups (its attention and feed-forward halves)."""
    per_layer: dict[str, list[str]] = {}
    for g in p.groups:
        if g.startswith("encoder_"):
            per_layer.setdefault(g.split("/")[0], []).append(g)
    return per_layer


def bert_group(layer: str) -> str | None:
    """The profile group of a BERT Keras layer: ``encoder_N``, ``embedding`` or ``head``."""
    if layer.startswith("encoder_"):
        return "_".join(layer.split("_", 2)[:2])
    return _outside_encoder(layer)


def bert_half_group(layer: str) -> str | None:
    """As :func:`bert_group`, an encoder layer in two groups: ``encoder_N/attention`` (the
    self-attention, its dropout, residual add and norm) and ``encoder_N/ffn`` (the rest)."""
    if layer.startswith("encoder_"):
        _, n, rest = (layer.split("_", 2) + [""])[:3]
        return f"encoder_{n}/{'attention' if rest.startswith('attention') else 'ffn'}"
    return _outside_encoder(layer)


def _outside_encoder(layer: str) -> str | None:
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


def reference_args(
    base: dict[str, Any], counts: list[int], setting: tuple[int, float, bool, str]
) -> dict[str, Any]:
    """The ``[args]`` of the reference run with ``counts`` encoder layers per IPU at
    ``setting`` (micro-batch, availableMemoryProportion, recomputation, precision)."""
    mb, proportion, recompute, precision = setting
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
    return args


def bert_costs(
    base: dict[str, Any], shape: BertShape, ipus: int, setting: tuple[int, float, bool, str]
) -> BertCosts | None:
    """The :class:`BertCosts` at ``setting`` (micro-batch, availableMemoryProportion,
    recomputation, precision), from the cached profile of a Sequential reference pipeline over
    ``ipus`` IPUs; None if that reference does not fit."""
    mb, _, recompute, precision = setting
    counts = reference_counts(shape.layers, ipus)
    args = reference_args(base, counts, setting)
    key = ("bert halves", repr(sorted(args.items())))
    p = profile.cached(key, lambda: profile.workload_report("bert", args), bert_half_group, SYNCED)
    if p is None:
        return None
    # The reference's own optimizer-state traffic (offloaded, one replica).
    sizes = (options.optimizer_slots(base.get("optimizer", "adam")), element_bytes(precision))

    def moved(weight_bytes: float) -> float:
        elements = int(weight_bytes / sizes[1])
        system = str(base["system"])
        return options.update_transfer_s(system, 1, len(counts), ("on", False), elements, sizes)

    return BertCosts.of(p, counts, recompute, mb, moved)


class CostCache:
    """BERT costs per setting, profiled at the two ends of the micro-batches a search uses
    (a reference that does not fit: the next smaller) and at the power of two nearest their
    geometric middle, interpolated linearly between neighbours; an availableMemoryProportion
    not among the ``profiled`` ones, interpolated between them."""

    def __init__(
        self,
        base: dict[str, Any],
        shape: BertShape,
        ipus: int,
        mbs: list[int],
        profiled: tuple[float, ...],
    ):
        self.base, self.shape, self.ipus, self.profiled = base, shape, ipus, profiled
        self.lo, self.hi = min(mbs), max(mbs)
        self.memo: dict[tuple[Any, ...], BertCosts | None] = {}

    def at(self, mb: int, proportion: float, recompute: bool, precision: str) -> BertCosts | None:
        key = (mb, proportion, recompute, precision)
        if key not in self.memo and proportion not in self.profiled:
            lo, hi, w = options.bracket(proportion, self.profiled)
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
        # The largest micro-batch, else halves of it down to one that fits (a failed try is
        # cheap; M: BERT-Large's Sequential micro-batch 4 scaled from micro-batch 1, when 8 and
        # 16 did not fit, was estimated 16% slow and 32% too many bytes).
        top, hi = self.hi, None
        while top > self.lo and (hi := one(top)) is None:
            top //= 2
        if hi is None:
            return _scaled(lo, mb / self.lo)
        c = self._between(mb, (self.lo, lo), (top, hi), proportion, recompute, precision)
        if mb <= top:
            return c
        # Above ``top``: seconds extrapolated, activations outside the layers proportional
        # to the micro-batch (E), the figures that stop growing held.
        k = mb / top
        held = {f: getattr(hi, f) for f in HELD_ABOVE}
        return replace(c, embed_act=hi.embed_act * k, head_act=hi.head_act * k, **held)

    def _between(
        self,
        mb: int,
        low: tuple[int, BertCosts],
        high: tuple[int, BertCosts],
        *setting: Any,
    ) -> BertCosts:
        """The costs at ``mb`` from those profiled at ``low`` and ``high`` (micro-batch,
        costs), piecewise through the power of two nearest their geometric middle when it lies
        between them (M: a layer's seconds grow slower than the micro-batch: a small BERT's
        at micro-batch 4, interpolated between 1 and 32, came out 9% low)."""
        (m0, c0), (m1, c1) = low, high
        mid = 2 ** round(math.log2(math.sqrt(m0 * m1)))
        middle = None
        if m0 < mid < m1:
            middle = bert_costs(self.base, self.shape, self.ipus, (mid, *setting))
        if middle is None:
            return _blend(c0, c1, (mb - m0) / (m1 - m0))
        if mb <= mid:
            return _blend(c0, middle, (mb - m0) / (mid - m0))
        return _blend(middle, c1, (mb - mid) / (m1 - mid))


def _blend(lo: BertCosts, hi: BertCosts, w: float) -> BertCosts:
    """``lo`` and ``hi`` interpolated linearly (weight ``w`` on ``hi``, E)."""
    return BertCosts(*options.lerp(astuple(lo), astuple(hi), w))


#: The figures that grow in proportion to the micro-batch when scaling one (E): seconds,
#: activations and the copies' bytes.
_PER_SAMPLE = (
    *("layer_s", "layer_b", "embed_s", "embed_b", "head_s", "head_b", "infeed_s"),
    *("working", "stash", "embed_act", "head_act", "held", "kept"),
    *("layer_send", "layer_return", "head_send", "head_return"),
)


def _scaled(c: BertCosts, k: float) -> BertCosts:
    """``c`` at ``k`` times its micro-batch: seconds and activations proportional (E)."""
    return replace(c, **{f: getattr(c, f) * k for f in _PER_SAMPLE})


def without_checkpoints(checkpointed: BertCosts, plain: BertCosts) -> BertCosts:
    """The figures of a stage that recomputes without checkpoints (RecomputationMode Auto:
    RecomputeThenBackpropagate with Grouped or Interleaved, RecomputeAndBackpropagateInterleaved
    with Sequential; IPU TensorFlow's default), from those of the same setting with a checkpoint
    after every layer (``checkpointed``) and without recomputation (``plain``): the seconds are
    ``checkpointed``'s (the last stage, which recomputes nothing, takes ``plain``'s: the
    caller's), the stash only the stage's input (one checkpoint's worth, ``checkpointed``'s
    per-layer stash) per micro-batch in flight, and every layer's activations live at once for
    the micro-batch being backpropagated, as without recomputation at one micro-batch in flight
    (``plain``'s per-layer stash and working set; E: ipusim's lowering re-creates a stage's
    forward values from its input, so they are the same values)."""
    return replace(
        checkpointed, working=plain.working, stash=0.0, held=plain.stash, kept=checkpointed.stash
    )
