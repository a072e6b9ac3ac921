"""Inference plans: forward-only configurations (``model.predict``, or ``model.evaluate``) of a
workload.

No backward pass, optimizer state, gradient accumulation, stash or recomputation: a candidate is
IPUs per replica and replicas, the pipeline's stage split, the micro-batch (the global batch is
the samples of one device step over all replicas: micro-batch x replicas), the pipeline schedule
(Grouped, Interleaved where no IPU holds two stages, Sequential: each with IPU TensorFlow's depth
rule for inference, ``depth_multiple``), I/O tiles (where the simulator overlaps the infeed with
compute: one IPU or Grouped), the device iterations (``steps_per_execution``: a divisor of the
``steps`` micro-batches per replica the dataset holds) and, for BERT and ResNet-50,
availableMemoryProportion.

Estimates come from one forward-only reference run per (IPUs per replica, proportion), Grouped,
one execution, its layers split evenly over the stages and profiled (:mod:`ipusim.plan.profile`):
each unit's forward seconds and bytes are re-balanced by :func:`best_splits` (a stage's time is
its units' forward seconds; its bytes the reference's fixed bytes plus its units' weights and
share of activations). An execution of ``n`` micro-batches runs the lowering's own time steps
(:func:`~ipusim.lowering.schedules.time_steps`, inference), each as long as its slowest stage
(the first stage's with its infeed copies, unless I/O tiles overlap them; the last stage's
with its outfeed copies) plus what the reference spent per time step besides (exchange,
syncs), plus the host's round trip per execution
(the system's ``per_execution_overhead``). That execution's seconds are the plan's latency (the
host sees an execution's outputs when it ends): more device iterations amortise the round trip
and the pipeline's fill and drain, fewer return results sooner. The simulator judges.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.lowering.schedules import depth_multiple, time_steps
from ipusim.plan import options, profile
from ipusim.plan.partition import best_splits
from ipusim.plan.space import Candidate, fastest_first

# IPUs per replica tried, the pruning margin and the splits kept per reference run: the model
# space's.
from ipusim.plan.space_model import IPUS_PER_REPLICA, PRUNE_FACTOR, SPLITS_KEPT

__all__ = [
    "STEPS",
    "best_py",
    "inference_candidates",
    "inference_kind",
    "latency_rows",
    "within_latency",
]

#: Micro-batches per replica of a candidate's dataset unless ``[args]`` give ``steps`` or the
#: planner a dataset's samples (E: enough that a 16-stage pipeline's fill and drain costs under
#: a fifth; Graphcore's inference examples run hundreds of device iterations per execution).
STEPS = 64


@dataclass(frozen=True)
class Units:
    """How a workload's layers go into pipeline stages.

    Attributes:
        names: the profile groups a stage boundary may fall between, in order.
        group: maps a Keras layer name to its profile group.
        first / last: groups always in the first / last stage (embedding, head).
        split: the ``[args]`` that cut the units at ``bounds`` (as :attr:`Split.bounds`).
        proportions: availableMemoryProportion values tried (None: the workload's default).
        extra: ``[args]`` every candidate of the workload has.
    """

    names: list[str]
    group: Callable[[str], str | None]
    first: tuple[str, ...]
    last: tuple[str, ...]
    split: Callable[[tuple[int, ...]], dict[str, Any]]
    proportions: tuple[float | None, ...]
    extra: dict[str, Any]


def _units(workload: str, args: dict[str, Any], kind: str = "predict") -> Units:
    """The :class:`Units` of ``workload`` (``bert``, ``resnet50`` or ``keras_model``)."""
    if workload == "bert":
        from ipusim.plan.space import MEMORY_PROPORTIONS, BertShape, bert_group

        layers = [f"encoder_{i}" for i in range(BertShape.of(args).layers)]

        def counts(bounds: tuple[int, ...]) -> dict[str, Any]:
            return {"layers-per-ipu": [b - a for a, b in zip(bounds, bounds[1:])]}

        return Units(layers, bert_group, ("embedding",), ("head",), counts, MEMORY_PROPORTIONS, {})
    if workload == "resnet50":
        from ipusim.plan.space_resnet import BLOCKS, MEMORY_PROPORTIONS, resnet_group

        blocks = [b.removesuffix("_out") for b in BLOCKS]
        return Units(
            blocks,
            resnet_group,
            ("stem",),
            ("head",),
            lambda bounds: {"split": [BLOCKS[b - 1] for b in bounds[1:-1]]},
            MEMORY_PROPORTIONS,
            {"eight-bit-io": True},
        )
    from ipusim.plan.space_model import layer_names

    names = layer_names(str(args["model"]), needs_loss=kind == "evaluate")
    return Units(
        names,
        lambda layer: layer,
        (),
        (),
        lambda bounds: {"split": [names[b - 1] for b in bounds[1:-1]]},
        (None,),
        {},
    )


def inference_candidates(
    workload: str,
    args: dict[str, Any],
    num_ipus: int,
    global_batch: int,
    precision: str,
    kind: str = "predict",
    samples: int | None = None,
    max_latency_s: float | None = None,
) -> list[Candidate]:
    """The inference configurations of ``workload`` on ``num_ipus`` IPUs whose replicas share
    ``global_batch`` samples per device step, fastest first (estimates).

    Args:
        kind: ``predict`` or ``evaluate`` (which needs a loss, computed on the last stage).
        samples: the samples of the dataset (None: ``args["steps"]`` device steps, default
            :data:`STEPS`); the device iterations divide its device steps.
        max_latency_s: candidates whose estimated seconds per execution exceed it are left out.

    Raises:
        ConfigurationError: ``samples`` below the global batch.
    """
    units = _units(workload, args, kind)
    steps = _steps(args, global_batch, samples)
    base = {**args, **units.extra, "precision": precision, "accumulation": 1}
    base["inference"] = True if kind == "predict" else kind
    host_s = _host_s(base)
    out: list[Candidate] = []
    for ipr in IPUS_PER_REPLICA:
        replicas = num_ipus // ipr
        if ipr > min(num_ipus, len(units.names)) or num_ipus % ipr or global_batch % replicas:
            continue
        run = {**base, "replicas": replicas, "micro-batch": global_batch // replicas}
        run.update(stages=ipr, steps=steps)
        for proportion in units.proportions:
            if proportion is not None:
                run["memory-proportion"] = proportion
            out += _pipelined(workload, units, run, host_s, max_latency_s)
    return options.counted(fastest_first(options.undominated(out)), len(out))


def inference_kind(inference: bool | str) -> str:
    """``predict`` or ``evaluate`` for ``plan``'s ``inference`` (True: predict).

    Raises:
        ConfigurationError: any other value.
    """
    kind = "predict" if inference is True else inference
    if kind not in ("predict", "evaluate"):
        raise ConfigurationError(
            f"inference must be True, 'predict' or 'evaluate' (False: training); got {inference!r}"
        )
    return str(kind)


def _steps(args: dict[str, Any], global_batch: int, samples: int | None) -> int:
    """Device steps (micro-batches per replica) of the dataset: ``samples`` over the global
    batch (a last partial batch dropped, as ``drop_remainder``), else ``args["steps"]``."""
    if samples is None:
        return int(args.get("steps", STEPS))
    if samples < global_batch:
        raise ConfigurationError(
            f"the dataset's {samples} samples do not fill one device step of the global batch "
            f"{global_batch} (micro-batch x replicas); give a global batch of at most {samples}"
        )
    return samples // global_batch


def _host_s(args: dict[str, Any]) -> float:
    """The host's seconds per execution (``--host-overhead``, else the system's host preset)."""
    if args.get("host-overhead") is not None:
        return float(args["host-overhead"])
    from ipusim.hardware import load_system
    from ipusim.hardware.hosts import with_host

    system = with_host(load_system(str(args["system"])), str(args.get("host", "")))
    return float(system.host.per_execution_overhead_s)


@functools.cache
def _execution(
    schedule: str, fwd: tuple[float, ...], n: int, per_step: float, feeds: tuple[float, float]
) -> float:
    """Device seconds of ``n`` micro-batches through stages of ``fwd`` forward seconds, in the
    lowering's inference time steps (lock step: a step lasts as long as its slowest stage, the
    first stage's IPU copying each micro-batch's input in, the last stage's its outputs out:
    ``feeds`` seconds, per micro-batch). Past ``2 S`` micro-batches every added one adds the
    same full step(s) (the steady state), so a long execution is extrapolated from a short
    one's steps."""
    if n > 2 * len(fwd) + 1:
        short = 2 * len(fwd)
        one = _execution(schedule, fwd, short, per_step, feeds)
        more = _execution(schedule, fwd, short + 1, per_step, feeds) - one
        return one + (n - short) * more
    steps = time_steps(schedule, len(fwd), n, training=False)
    busy = list(fwd)
    busy[0] += feeds[0]
    busy[-1] += feeds[1]
    return sum(max(busy[s] for s, _, _ in step) + per_step for step in steps)


def _executions(steps: int, stages: int, ipus: int) -> Iterator[tuple[str, int, int]]:
    """``(schedule, io_tiles, device iterations)`` a pipeline of ``stages`` over ``ipus`` IPUs
    can run a dataset of ``steps`` micro-batches in: iterations dividing ``steps`` that are a
    multiple of the schedule's depth (IPU TensorFlow's rule for inference)."""
    for schedule in options.schedules(stages, ipus):
        need = depth_multiple(schedule, stages, False, ipus)
        for io in options.io_options(stages == 1 or schedule == "grouped"):
            for n in _divisors(steps):
                if n % need == 0:
                    yield schedule, io, n


def _divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending."""
    low = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*low, *(n // d for d in low)})


def _stage_groups(units: Units, first: int, stop: int, stage: int, stages: int) -> list[str]:
    """The profile groups of stage ``stage`` of ``stages`` holding units ``first .. stop - 1``."""
    head = list(units.first) if stage == 0 else []
    return head + units.names[first:stop] + (list(units.last) if stage == stages - 1 else [])


def _pipelined(
    workload: str, units: Units, run: dict[str, Any], host_s: float, max_latency_s: float | None
) -> list[Candidate]:
    """Splits of the units over ``run["stages"]`` IPUs, from the profile of an even split, with
    every schedule, I/O tile count and device iteration count."""
    stages, n = run["stages"], len(units.names)
    even = tuple((n * s) // stages for s in range(stages + 1))
    # The reference: Grouped, one execution of a multiple of the stages (independent of the
    # dataset's size, so every dataset shares it).
    ref_steps = stages * max(1, min(run["steps"], STEPS) // stages)
    ref_args = {**run, "steps": ref_steps, **(units.split(even) if stages > 1 else {})}
    key = (workload, repr(sorted(ref_args.items())))
    ref = profile.cached(key, lambda: profile.workload_report(workload, ref_args), units.group)
    if ref is None:
        return []
    zero = profile.GroupCost()
    fixed = max(ref.ipu_fixed.values())
    ratio = max(ref.ipu_tile_ratio.values())

    def groups(a: int, b: int, s: int) -> list[profile.GroupCost]:
        return [ref.groups.get(g, zero) for g in _stage_groups(units, a, b, s, stages)]

    def seconds(a: int, b: int, s: int) -> float:
        return sum(c.forward_s for c in groups(a, b, s))

    def used(a: int, b: int, s: int) -> float:
        return fixed + sum(
            c.weight_bytes + c.state_bytes + c.activation_bytes for c in groups(a, b, s)
        )

    def fwd(bounds: tuple[int, ...]) -> tuple[float, ...]:
        return tuple(seconds(a, b, s) for s, (a, b) in enumerate(zip(bounds, bounds[1:])))

    samples = run["replicas"] * run["micro-batch"]
    # What the reference spent per time step besides its stages' compute and the host's round
    # trip (E: exchange, syncs and host I/O taken as added to the compute, not overlapped).
    total = ref.sample_s * samples * ref_steps - host_s
    infeed = ref.infeed_s / ref_steps
    outfeed = ref.outfeed_s / ref_steps
    plain = _execution("grouped", fwd(even), ref_steps, 0.0, (infeed, outfeed))
    count = len(time_steps("grouped", stages, ref_steps, training=False))
    per_step = max(total - plain, 0.0) / count

    def fits(a: int, b: int, s: int) -> bool:
        return used(a, b, s) <= PRUNE_FACTOR * ref.budget_bytes

    out = []
    for split in best_splits(n, stages, seconds, fits, SPLITS_KEPT):
        bounds = split.bounds
        spans = list(zip(bounds, bounds[1:]))
        args = {**run, **(units.split(bounds) if stages > 1 else {})}
        for schedule, io, spe in _executions(run["steps"], stages, stages):
            # I/O tiles take the infeed copies off the first stage's timeline, and their tiles
            # from compute (slower) and from the budget (the busiest tile keeps what it held)
            share = options.compute_share(str(run["system"]), io)
            shares = [options.stage_share(share, s, stages) for s in range(stages)]
            feeds = (0.0 if io else infeed, outfeed)
            slowed = tuple(f * options.io_slowdown(h) for f, h in zip(fwd(bounds), shares))
            latency = host_s + _execution(schedule, slowed, spe, per_step, feeds)
            if max_latency_s is not None and latency > max_latency_s:
                continue
            a = _options(args, schedule, io, spe)
            # Each IPU against its own budget: a middle stage's IPU keeps every tile.
            held = max(used(lo, hi, s) * share / shares[s] for s, (lo, hi) in enumerate(spans))
            budget = (ref.budget_bytes * share, ratio * share)
            out.append(Candidate.of(a, samples * spe / latency, _gives(a), held, *budget))
    return out


def _options(args: dict[str, Any], schedule: str, io: int, spe: int) -> dict[str, Any]:
    """``args`` with a schedule, I/O tiles and device iterations (left out where default)."""
    out = dict(args)
    if schedule != "grouped":
        out["schedule"] = schedule
    if io:
        out["io-tiles"] = io
    if spe != args["steps"]:
        out["steps-per-execution"] = spe
    return out


def _gives(args: dict[str, Any]) -> str:
    """What an inference plan trades away, in words."""
    stages, steps = args["stages"], args["steps"]
    spe = args.get("steps-per-execution", steps)
    parts = [f"pipeline fill and drain over {stages} stages"] if stages > 1 else []
    if args.get("schedule") == "sequential":
        parts.append("one stage at a time (Sequential)")
    if args.get("io-tiles"):
        parts.append(f"{args['io-tiles']} tiles per IPU reserved for I/O")
    if spe < steps:
        parts.append(f"a host round trip every {spe} device iterations (results sooner)")
    return "; ".join(parts) or "nothing notable"


def latency_rows(
    rows: list[dict[str, Any]], max_latency_s: float | None = None
) -> list[dict[str, Any]]:
    """Simulated inference rows with ``latency_s``, the seconds of one execution (the host
    gets its outputs when it ends; executions run back to back): the device iterations'
    samples over the throughput. Rows over ``max_latency_s`` are left out."""
    return [
        {**row, "latency_s": _latency_s(row)}
        for row in rows
        if within_latency(row, max_latency_s) or not row["fits"]
    ]


def within_latency(row: dict[str, Any], max_latency_s: float | None = None) -> bool:
    """Whether a simulated inference row's execution takes at most ``max_latency_s`` seconds
    (always, without a bound)."""
    return max_latency_s is None or _latency_s(row) <= max_latency_s


def _latency_s(row: dict[str, Any]) -> float:
    """Seconds of one execution of a simulated inference row: its device iterations' samples
    over its throughput (inf when it has none)."""
    a = row["args"]
    samples = a.get("steps-per-execution", a["steps"]) * a["micro-batch"] * a["replicas"]
    return samples / row["throughput"] if row["throughput"] > 0 else math.inf


def best_py(args: dict[str, Any]) -> str:
    """The IPUConfig, stage assignment and pipelining options of an inference plan, to paste
    into an IPU TensorFlow 2 script (``model`` built in the strategy's scope)."""
    from ipusim.plan.output import config_py, stages_py

    replicas, steps = args["replicas"], args["steps"]
    spe = args.get("steps-per-execution", steps)
    call = "evaluate" if args.get("inference") == "evaluate" else "predict"
    lines = config_py(args, "inference configuration")
    if args["stages"] > 1:
        # The accumulation count is not used by inference: its pipeline runs steps_per_execution
        # micro-batches (IPU TensorFlow builds it with gradient_accumulation_count set so).
        stage_lines = stages_py({**args, "accumulation": spe, "offload": None})
        lines += [
            line for line in stage_lines if "optimizer_state" not in line and "offload" not in line
        ]
    lines += [
        f"model.compile({'loss=model.loss, ' if call == 'evaluate' else ''}"
        f"steps_per_execution={spe})  # device iterations per host round trip",
        f"# micro-batch (dataset batch size per replica): {args['micro-batch']}",
        f"model.{call}(dataset, steps={steps * replicas})",
    ]
    return "\n".join(lines) + "\n"
