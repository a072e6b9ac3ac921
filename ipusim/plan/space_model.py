"""A user's Keras model's configuration space: IPUs per replica and replicas, the layers of
each pipeline stage (cut at the model's layer boundaries by :func:`best_splits`), micro-batch and
gradient accumulation for the global batch, recomputation (and checkpoints:
:mod:`~ipusim.plan.space_model_recompute`), availableMemoryProportion
(ResNet-50's profiled and interpolated values; for pipelines see
:mod:`~ipusim.plan.space_model_amp`), and the options of
:mod:`ipusim.plan.options`: schedule, optimizer-state offloading and sharding, I/O tiles.

The model runs through ``workloads/keras_model.py`` (``--model`` names the function that builds
it). Estimates come from :class:`~ipusim.plan.profile.Profile` s of its own lowering, one group
per layer: data parallel, the configuration itself at :data:`REFERENCE_BATCHES`; pipelined
over ``k`` IPUs, a Sequential reference run split evenly by layer count at each micro-batch
and profiled proportion tried, whose per-layer seconds, bytes, working activations and one
micro-batch's stash the dynamic programme re-balances for every schedule (its stash held per
micro-batch in flight), optimizer-state setting and device mapping.

Device mappings: ipusim's lowering puts stage ``s`` on IPU ``device_mapping[s]``; stages sharing
an IPU add up in its memory and run one after the other in a time step (the Interleaved schedule
refuses them); the IPUs per replica are ``max + 1`` rounded up to a power of two; a copy between
the two IPUs of a pair is faster than between neighbours. The search tries stage ``i`` on IPU
``i`` and one more stage holding the last few layers mapped back to IPU 0 (as Graphcore's BERT
puts its head beside the embedding whose weights it shares; ipusim keeps a shared variable on
the first stage that reads it, so the mapping changes the result through IPU 0's memory and time
and the copies between the stages). With one IPU per replica, recomputation checkpoints are
searched as stages all mapped to that IPU (:mod:`~ipusim.plan.space_model_recompute`). Not
searched: permutations of the IPUs (the default already puts every other boundary inside a
pair) and several contiguous stages on one IPU of a multi-IPU pipeline (measured no smaller
and slower: :mod:`~ipusim.plan.space_model_recompute`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.lowering.schedules import in_flight
from ipusim.lowering.supersteps import element_bytes
from ipusim.plan import options, profile
from ipusim.plan.partition import Split, best_splits
from ipusim.plan.space import Candidate, fastest_first
from ipusim.plan.space_model_amp import proportion_references
from ipusim.plan.space_model_recompute import checkpoint_gives, checkpoint_settings, even_split
from ipusim.plan.space_resnet import EXTRA_PROPORTIONS, MEMORY_PROPORTIONS

__all__ = ["layer_names", "model_candidates"]

#: IPUs per replica tried (powers of two, as IPU systems are built).
IPUS_PER_REPLICA = (1, 2, 4, 8, 16)
#: Micro-batches profiled per pipeline width, at most (E: bounds the lowerings a search costs).
PIPELINE_BATCHES = 4
#: Estimates above this multiple of the budget are pruned (E, as BERT's space).
PRUNE_FACTOR = 1.3
#: Data-parallel micro-batches profiled to interpolate the others: the nearest to each (E, as
#: ResNet-50's space, and the largest tried: a matmul's seconds stop growing slower than the
#: micro-batch once its tiles are busy, M: ``wider`` with checkpoints on a GC200, seconds per
#: micro-batch 2.10e-4, 2.34e-4 and 3.12e-4 at 4, 16 and 32, so a line through 4 and 16
#: put 32 at 10% faster than simulated).
REFERENCE_BATCHES = (4, 16, 64)
#: Splits kept per pipeline setting (the dynamic programme's best and the next best it met).
SPLITS_KEPT = 3
#: Layers a last stage mapped back to IPU 0 holds at most (E: a model's head, such as an output
#: projection sharing the embedding's weights; each count is a dynamic programme of its own).
TAIL_LAYERS = 3


def layer_names(reference: str, needs_loss: bool = True) -> list[str]:
    """The model's layers in pipeline-assignment order (the order stages take them); the
    model must be compiled with a loss if it ``needs_loss`` (to be trained)."""
    return _built(reference, needs_loss)[0]


def _built(reference: str, needs_loss: bool = True) -> tuple[list[str], int]:
    """:func:`layer_names`, and the slots per variable of the model's compiled optimizer."""
    import ipusim
    from ipusim.config import reset_ipu_configuration
    from workloads.keras_model import builder

    try:
        with ipusim.IPUStrategy().scope():
            model = builder(reference, needs_loss=needs_loss)()
            names = [a.layer.name for a in model.get_pipeline_stage_assignment()]
            return names, options.optimizer_slots(model.optimizer)
    finally:
        reset_ipu_configuration()


def _per_layer(layer: str) -> str:
    return layer


def _executions(accumulation: int) -> int:
    """Weight updates a candidate runs (about 16 micro-batches, E: enough for a steady state)."""
    return max(1, 16 // accumulation)


def model_candidates(
    args: dict[str, Any], num_ipus: int, global_batch: int, precision: str
) -> list[Candidate]:
    """The configurations of ``args["model"]`` on ``num_ipus`` IPUs, fastest first (estimates).

    Raises:
        ConfigurationError: no ``model`` in ``args``, or a model with no layers to place.
    """
    if "model" not in args:
        raise ConfigurationError("planning a Keras model needs args['model'] (module:function)")
    names, slots = _built(str(args["model"]))
    if not names:
        raise ConfigurationError(f"the model {args['model']!r} has no layers to place on IPUs")
    base = {**args, "precision": precision}
    out: list[Candidate] = []
    for ipr in IPUS_PER_REPLICA:
        if ipr > num_ipus or num_ipus % ipr or ipr > len(names):
            continue
        replicas = num_ipus // ipr
        per_replica, rem = divmod(global_batch, replicas)
        if rem:
            continue
        mbs = [m for m in range(1, min(per_replica, 64) + 1) if per_replica % m == 0]
        if ipr == 1:
            dp = {**base, "replicas": replicas}
            for extra in checkpoint_settings(names):
                out += _data_parallel(dp, mbs, per_replica, global_batch, slots, extra)
        else:
            for mb in mbs[-PIPELINE_BATCHES:]:
                out += _pipelined(base, names, ipr, replicas, mb, per_replica // mb, slots)
    return options.counted(fastest_first(options.undominated(out)), len(out))


def _data_parallel(
    base: dict[str, Any],
    mbs: list[int],
    per_replica: int,
    global_batch: int,
    slots: int,
    extra: dict[str, Any],
) -> list[Candidate]:
    """One IPU per replica, profiled at :data:`REFERENCE_BATCHES` as the workload runs by
    default (the optimizer state offloaded with accumulation, or in a pipeline, where there is
    Streaming Memory, as IPU TensorFlow does) at the two profiled availableMemoryProportion
    values (the others interpolated), for every optimizer-state and I/O tile option; ``extra``:
    the recomputation checkpoints' ``[args]`` (:mod:`~ipusim.plan.space_model_recompute`)."""

    def figures(proportion: float) -> dict[int, tuple[float, ...]]:
        setting = {**base, "stages": 1, **extra, "memory-proportion": proportion}
        return profile.per_micro_batch(
            "keras_model", setting, _per_layer, mbs, per_replica, REFERENCE_BATCHES, _executions
        )

    out = []
    # availableMemoryProportion as ResNet-50's space: two profiled, the others interpolated
    for proportion, lo, hi, w in options.interpolated(MEMORY_PROPORTIONS, EXTRA_PROPORTIONS):
        low, high = figures(lo), figures(hi)
        for mb in sorted(set(low) & set(high)):
            fig = options.lerp(low[mb], high[mb], w)
            args = {**base, "memory-proportion": proportion}
            out += _data_parallel_at(args, mb, fig, (per_replica, global_batch), slots, extra)
    return out


def _data_parallel_at(
    base: dict[str, Any],
    mb: int,
    fig: tuple[float, ...],
    batches: tuple[int, int],
    slots: int,
    extra: dict[str, Any],
) -> list[Candidate]:
    """:func:`_data_parallel`'s candidates at micro-batch ``mb`` whose figures are ``fig``
    (``batches``: the replica's share and the global batch)."""
    from ipusim.hardware import load_system

    system = str(base["system"])
    ref = ("on" if load_system(system).streaming_memory is not None else "off", False)
    sizes = (slots, element_bytes(str(base["precision"])))
    out, (per_replica, global_batch) = [], batches
    acc = per_replica // mb
    args = {**base, "micro-batch": mb, "accumulation": acc, "stages": 1, **extra}
    args["steps"] = acc * _executions(acc)
    replicas = base["replicas"]
    gives = "nothing notable" if replicas == 1 else "gradient all-reduce"
    # checkpoint stages are a pipeline: its optimizer-state options and default at any accumulation
    variants = options.data_parallel_variants(
        fig, acc, system, replicas, ref, sizes, pipelined=bool(extra)
    )
    for state, io, step, used in variants:
        if io and extra:  # the Sequential schedule does not overlap the infeed (as ResNet-50's)
            continue
        text = "; ".join([gives, *checkpoint_gives(extra), *options.gives_up(state, io)])
        a = options.setting_args(args, state, io)
        out.append(Candidate.of(a, global_batch / step, text, used, fig[4], fig[1]))
    return out


def _pipelined(
    base: dict[str, Any], names: list[str], ipr: int, replicas: int, mb: int, acc: int, slots: int
) -> list[Candidate]:
    """The pipelines of ``names`` over ``ipr`` IPUs at micro-batch ``mb`` (``acc`` from the
    global batch), from a reference run per profiled availableMemoryProportion
    (:mod:`~ipusim.plan.space_model_amp`)."""
    run = {**base, "replicas": replicas, "micro-batch": mb, "accumulation": acc, "stages": ipr}
    run |= {"steps": acc * _executions(acc), "split": even_split(names, ipr)}
    out = []
    for proportion, ref in proportion_references(run, lambda r: _reference(r, names, slots)):
        out += _pipelined_at(ref, {**run, "memory-proportion": proportion}, names, ipr, acc)
    return out


def _pipelined_at(
    ref: _Reference, run: dict[str, Any], names: list[str], ipr: int, acc: int
) -> list[Candidate]:
    """:func:`_pipelined`'s candidates from one reference: per device mapping, schedule (with
    its depth rule), recomputation and optimizer-state setting, the best splits and their I/O
    tile variants."""
    replicas = run["replicas"]
    out, found = [], {}
    for mapping in _mappings(len(names), ipr):
        stages = len(mapping)
        for schedule in options.schedules(stages, ipr):
            if not options.accumulation_ok(schedule, stages, ipr, acc):
                continue
            alive = tuple(in_flight(schedule, stages, s, acc) for s in range(stages))
            for recompute, setting in itertools.product((False, True), ref.settings(replicas)):
                pipe = _Pipe(ref, mapping, alive, recompute, ref.per_var(setting, replicas))
                # The splits depend on the memory only where some stage could be refused.
                key = (mapping, recompute, *((alive, pipe.per_var) if pipe.tight() else ()))
                if key not in found:
                    found[key] = pipe.splits()
                for bounds in found[key]:
                    plan = (schedule, recompute, setting, mapping)
                    out += _pipeline_candidates(pipe, bounds, run, plan, names)
    return out


def _mappings(layers: int, ipr: int) -> list[tuple[int, ...]]:
    """Device mappings that change the simulation: stage ``i`` on IPU ``i``, and (with a layer
    to spare) one more stage mapped back to IPU 0, as Graphcore's BERT keeps its head beside
    the embedding whose weights it shares. Left out: permutations of the IPUs (E: the default
    puts every other boundary inside an IPU pair, the most a chain can have) and more stages
    cycling over the IPUs or sharing one (``[0, 1, 0, 1]``, ``[0, 0, 1, 1]``: an IPU then runs
    its stages one after the other, as one stage would, over more fill, drain and sync steps;
    slower and no smaller in the simulation on tests/plan/_models.py's models)."""
    default = tuple(range(ipr))
    return [default, (*default, 0)] if layers > ipr else [default]


@dataclass(frozen=True)
class _Reference:
    """A reference run's per-layer figures as prefix sums (``sums[key][i]``: layers before
    ``i``; keys ``fwd``, ``bwd`` seconds per micro-batch, ``var`` weight bytes, ``held``
    gradient accumulators, ``act`` working activations (E: a stage's is the sum of its
    layers'), ``stash`` the stash of one micro-batch in flight) and its run's."""

    sums: dict[str, tuple[float, ...]]
    fixed: float
    budget: float
    ratio: float
    update_per_byte: float
    overhead: float
    infeed: float
    host: float
    sizes: tuple[int, int]
    system: str

    def passes(self, first: int, stop: int, recompute: bool) -> tuple[float, float]:
        """Forward and backward seconds of layers ``first .. stop - 1`` per micro-batch (the
        backward pass re-runs the forward when recomputing)."""
        fwd, bwd = self.span("fwd", first, stop), self.span("bwd", first, stop)
        return fwd, bwd + fwd * recompute

    def seconds(
        self, schedule: str, acc: int, passes: list[tuple[float, float]], mapping: tuple[int, ...]
    ) -> float:
        """Seconds of ``acc`` micro-batches through IPUs whose passes take ``passes`` (per IPU),
        stage ``s`` on IPU ``mapping[s]``, with the infeed copies of the inputs on the first
        stage's IPU and of the targets on the last's (none with I/O tiles: ``infeed`` 0)."""
        ends = list(passes)
        for ipu in (mapping[0], mapping[-1]):
            ends[ipu] = (ends[ipu][0] + self.infeed, ends[ipu][1])
        stages = len(mapping)
        return options.schedule_seconds(schedule, acc, ends, self.overhead, stages)

    def span(self, key: str, first: int, stop: int) -> float:
        return self.sums[key][stop] - self.sums[key][first]

    def settings(self, replicas: int) -> list[tuple[str, bool]]:
        """Optimizer-state settings the system allows (no offload without Streaming Memory)."""
        allowed = options.state_options(replicas)
        return [s for s in allowed if math.isfinite(self.transfer(s, replicas, 1, 0))]

    def per_var(self, setting: tuple[str, bool], replicas: int) -> float:
        """On-chip optimizer-state bytes per weight byte at ``setting``."""
        return options.state_bytes(1.0 / self.sizes[1], self.sizes[0], *setting, replicas)

    def transfer(self, setting: tuple[str, bool], replicas: int, ipr: int, var: float) -> float:
        """Seconds of the update's collectives and Streaming Memory traffic on an IPU holding
        ``var`` weight bytes (:func:`~ipusim.plan.options.update_transfer_s`)."""
        elements = int(var / self.sizes[1])
        return options.update_transfer_s(self.system, replicas, ipr, setting, elements, self.sizes)


def _reference(run: dict[str, Any], names: list[str], slots: int) -> _Reference | None:
    """Profile ``run`` as a Sequential pipeline (one micro-batch in flight per stage, so each
    layer's activations are one micro-batch's; any accumulation passes its depth rule) with the
    optimizer state where it takes least memory; None when that does not fit. Its ``overhead``
    is the run's inter-IPU syncs and copies per stage and micro-batch (two steps), its ``host``
    what the run measured beyond its IPUs' work per weight update (E: calibrated on the
    reference, as a constant per update: host time in series with the device's)."""
    from ipusim.hardware import load_system

    system, replicas, acc = str(run["system"]), run["replicas"], run["accumulation"]
    state = ("on" if load_system(system).streaming_memory is not None else "off", False)
    run = options.setting_args({**run, "schedule": "sequential"}, state, 0)
    key = ("keras_model", repr(sorted(run.items())))
    ref = profile.cached(key, lambda: profile.workload_report("keras_model", run), _per_layer)
    if ref is None:
        return None
    costs = [ref.groups.get(n, profile.GroupCost()) for n in names]
    sizes = (slots, element_bytes(str(run["precision"])))
    own = options.state_bytes(1.0 / sizes[1], slots, *state, replicas)
    per_layer = {
        "fwd": [c.forward_s for c in costs],
        "bwd": [c.backward_s for c in costs],
        "var": [c.weight_bytes for c in costs],
        "held": [c.state_bytes - own * c.weight_bytes for c in costs],
        "act": [c.activation_bytes * (1 - ref.ipu_stash.get(c.ipu, 0.0)) for c in costs],
        "stash": [c.activation_bytes * ref.ipu_stash.get(c.ipu, 0.0) for c in costs],
    }
    sums = {k: tuple(itertools.accumulate(v, initial=0.0)) for k, v in per_layer.items()}
    heaviest = max(sum(c.weight_bytes for c in costs if c.ipu == i) for i in ref.ipu_fixed)
    steps, stages = run["steps"], run["stages"]
    out = _Reference(
        sums, max(ref.ipu_fixed.values()), ref.budget_bytes, max(ref.ipu_tile_ratio.values()),
        ref.update_s / max(heaviest, 1.0), ref.link_s / (steps * stages),
        ref.infeed_s / steps, 0.0, sizes, system,
    )  # fmt: skip
    passes = [(0.0, 0.0)] * (stages - 1)
    layers = [out.passes(0, len(names), False), *passes]
    device = out.seconds("sequential", acc, layers, tuple(range(stages)))
    device += ref.update_s + out.transfer(state, replicas, stages, heaviest)
    measured = ref.sample_s * run["micro-batch"] * acc * replicas
    return replace(out, host=max(0.0, measured - device))


@dataclass(frozen=True)
class _Pipe:
    """A pipeline's stages on IPUs (``mapping[s]``: stage ``s``'s IPU; ``alive[s]``: its
    micro-batches in flight) at one recomputation and optimizer-state setting (``per_var``:
    on-chip state bytes per weight byte)."""

    ref: _Reference
    mapping: tuple[int, ...]
    alive: tuple[int, ...]
    recompute: bool
    per_var: float

    def passes(self, first: int, stop: int) -> tuple[float, float]:
        """:meth:`_Reference.passes` at this pipeline's recomputation."""
        return self.ref.passes(first, stop, self.recompute)

    def bytes(self, spans: list[tuple[int, int, int]]) -> float:
        """Bytes of an IPU holding the stages ``(first, stop, stage)`` of ``spans``."""
        r, total = self.ref, self.ref.fixed
        for first, stop, s in spans:
            var = r.span("var", first, stop)
            total += var * (1 + self.per_var) + r.span("held", first, stop)
            total += r.span("act", first, stop) + r.span("stash", first, stop) * self.alive[s]
        return total

    def splits(self) -> list[tuple[int, ...]]:
        """Stage boundaries of the best splits estimated to fit within the pruning margin;
        with a last stage back on IPU 0, the best per layer count it holds."""
        layers, ipr = len(self.ref.sums["fwd"]) - 1, max(self.mapping) + 1
        if len(self.mapping) == ipr:
            return [s.bounds for s in self._splits(layers, [])]
        out = []
        for tail in range(1, min(TAIL_LAYERS, layers - ipr) + 1):
            last = [(layers - tail, layers, len(self.mapping) - 1)]
            out += [(*s.bounds, layers) for s in self._splits(layers - tail, last)]
        return out

    def tight(self) -> bool:
        """Whether a stage could be estimated not to fit: all the layers on the IPU holding
        the most micro-batches would not."""
        layers = len(self.ref.sums["fwd"]) - 1
        fullest = max(range(len(self.alive)), key=self.alive.__getitem__)
        return self.bytes([(0, layers, fullest)]) > PRUNE_FACTOR * self.ref.budget

    def _splits(self, layers: int, last: list[tuple[int, int, int]]) -> list[Split]:
        """:func:`best_splits` of the first ``layers`` over the IPUs, IPU 0 also holding the
        stage ``last`` (if any)."""
        seconds = list(itertools.accumulate(sum(self.passes(i, i + 1)) for i in range(layers)))
        seconds.insert(0, 0.0)
        extra = sum(sum(self.passes(a, b)) for a, b, _ in last)
        limit = PRUNE_FACTOR * self.ref.budget

        def time(a: int, b: int, s: int) -> float:
            return seconds[b] - seconds[a] + (extra if s == 0 else 0.0)

        def fits(a: int, b: int, s: int) -> bool:
            return self.bytes([(a, b, s), *(last if s == 0 else [])]) <= limit

        return best_splits(layers, max(self.mapping) + 1, time, fits, keep=SPLITS_KEPT)


def _pipeline_candidates(
    pipe: _Pipe,
    bounds: tuple[int, ...],
    run: dict[str, Any],
    plan: tuple[str, bool, tuple[str, bool], tuple[int, ...]],
    names: list[str],
) -> list[Candidate]:
    """One split's candidates (one per I/O tile count); ``plan``: schedule, recomputation,
    optimizer-state setting and device mapping."""
    schedule, recompute, setting, mapping = plan
    ref, ipr, replicas = pipe.ref, max(mapping) + 1, run["replicas"]
    spans = [(a, b, s) for s, (a, b) in enumerate(zip(bounds, bounds[1:]))]
    per_ipu = [[sp for sp in spans if mapping[sp[2]] == i] for i in range(ipr)]
    ipu_bytes = [pipe.bytes(on) for on in per_ipu]
    heaviest = max(sum(ref.span("var", a, b) for a, b, _ in on) for on in per_ipu)
    update = ref.update_per_byte * heaviest + ref.transfer(setting, replicas, ipr, heaviest)
    per_stage = [[pipe.passes(a, b) for a, b, _ in on] for on in per_ipu]
    passes = [(sum(f for f, _ in p), sum(b for _, b in p)) for p in per_stage]
    args = {**run, "stages": len(mapping), "split": [names[b - 1] for b in bounds[1:-1]]}
    args["schedule"] = schedule
    gives = [f"pipeline fill and drain over {len(mapping)} stages"]
    if schedule != "grouped":
        gives.append(f"{schedule} schedule")
    if len(mapping) > ipr:
        args["device-mapping"] = list(mapping)
        gives.append("last stage shares IPU 0 with the first")
    if recompute:
        args["recompute"] = True
        gives.append("recomputes the forward pass")
    out = []
    for io in options.io_options(schedule == "grouped"):
        feed = replace(ref, infeed=0.0) if io else ref
        # I/O tiles on the IPUs with host I/O (the first and last stages'): fewer tiles for
        # compute (slower) and a smaller budget (same busiest tile)
        share = options.compute_share(str(run["system"]), io)
        shares = [share if i in (mapping[0], mapping[-1]) else 1.0 for i in range(ipr)]
        slowed = [(k * f, k * b) for (f, b), k in zip(passes, map(options.io_slowdown, shares))]
        step = feed.seconds(schedule, run["accumulation"], slowed, mapping)
        speed = replicas * run["micro-batch"] * run["accumulation"] / (step + update + ref.host)
        text = "; ".join([*gives, *options.gives_up(setting, io)])
        a = options.setting_args(args, setting, io)
        fullest = max(range(ipr), key=lambda i: ipu_bytes[i] / shares[i])
        budget = (ref.budget * shares[fullest], ref.ratio * shares[fullest])
        out.append(Candidate.of(a, speed, text, ipu_bytes[fullest], *budget))
    return out
