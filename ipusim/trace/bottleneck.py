"""What bounds a run: every picosecond of the critical IPU's time, attributed to one resource.

The critical IPU is the busiest one (least idle; ties: the lowest index). Its time from 0 to the
run's end is split as follows:

- its state tracks: ``compute`` → device compute, ``exchange`` → exchange, ``sync`` → sync,
  ``link`` → IPU-Links / all-reduce (pipeline copies and collectives), ``remote`` → Streaming
  Memory; on ``host-io``, copies → host link, an infeed stall → the host input pipeline when the
  host's dataset producer is rate-limited (it records ``dataset`` work) and the host link
  otherwise, an outfeed stall → host round trip (the host drains the outfeed too slowly);
- idle time while the host is busy with its per-execution work (execution overhead, weight
  read-back, callbacks, outfeed drain) → host round trip;
- the rest of the idle time → pipeline bubble in a pipelined run (stages waiting for each other),
  host round trip otherwise (the IPU waits for the host to launch it).

The resource with the largest share bounds the run. Shares are exact fractions of integer
picoseconds and add up to 1. Everything comes from the trace's whole-run counters (time per IPU,
track and record name, and each IPU's idle time overlapping the host's round-trip work), so the
answer covers the whole run whatever detail the trace kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ipusim.trace.counters import count_named, time_named
from ipusim.trace.records import HOST, TRACKS, Trace

#: The resources a run can be bound by, in report order.
RESOURCES = (
    "device compute",
    "exchange",
    "sync",
    "host input pipeline",
    "host round trip",
    "host link",
    "IPU-Links / all-reduce",
    "Streaming Memory",
    "pipeline bubble",
)

_TRACK_RESOURCE = {
    "compute": "device compute",
    "exchange": "exchange",
    "sync": "sync",
    "link": "IPU-Links / all-reduce",
    "remote": "Streaming Memory",
}
_DEVICE = ("device compute", "exchange", "sync", "IPU-Links / all-reduce", "Streaming Memory")


@dataclass(frozen=True)
class Bottleneck:
    """The resource that bounds a run, with every resource's share of the critical IPU's time.

    Attributes:
        resource: one of :data:`RESOURCES`.
        share: its share of the run (0..1).
        shares: every resource's share (they add up to 1).
        ipu: the critical IPU.
        device_samples_per_s: what the device alone could take: samples per second of the
            critical IPU's device work (compute, exchange, sync, links, Streaming Memory).
        samples_per_s: the run's throughput.
        advice: what would change the answer, in words.
    """

    resource: str
    share: float
    shares: Mapping[str, float] = field(default_factory=dict)
    ipu: int = 0
    device_samples_per_s: float = math.nan
    samples_per_s: float = math.nan
    advice: str = ""

    def __str__(self) -> str:
        return f"bound by {self.resource} ({100 * self.share:.1f}% of the time): {self.advice}"


def attribute(trace: Trace, end_ps: int, pipelined: bool) -> tuple[int, dict[str, int]]:
    """The critical IPU (of replica 0) and the picoseconds of its time given to each resource."""
    counters = trace.counters
    totals = trace.totals()
    slots = [k for k, ipu in enumerate(counters.slots) if ipu != HOST]
    busy = totals.busy_ps()
    active = [k for k in slots if totals.records[k].sum() > 0]
    if not active:
        return 0, {r: (end_ps if r == "host round trip" else 0) for r in RESOURCES}
    critical = max(active, key=lambda k: (int(busy[k]), -counters.slots[k]))
    per_track = totals.duration_ps[critical].sum(axis=1)
    out = dict.fromkeys(RESOURCES, 0)
    for track, resource in _TRACK_RESOURCE.items():
        out[resource] += int(per_track[TRACKS.index(track)])
    infeed_stall = int(time_named(trace.templates, counters, ["infeed stall"])[critical])
    outfeed_stall = int(time_named(trace.templates, counters, ["outfeed stall"])[critical])
    host = counters.slot(HOST)
    producer_limited = host >= 0 and count_named(trace.templates, counters, "dataset")[host] > 0
    out["host input pipeline" if producer_limited else "host link"] += infeed_stall
    out["host round trip"] += outfeed_stall
    host_io = int(per_track[TRACKS.index("host-io")])
    out["host link"] += host_io - infeed_stall - outfeed_stall
    idle_ps = max(int(end_ps) - int(busy[critical]), 0)
    waiting = min(int(counters.waiting_ps[critical]), idle_ps)
    out["host round trip"] += waiting
    out["pipeline bubble" if pipelined else "host round trip"] += idle_ps - waiting
    return int(counters.slots[critical]), out


def find_bottleneck(
    trace: Trace,
    end_ps: int,
    samples: int,
    *,
    pipelined: bool = False,
    context: Mapping[str, object] | None = None,
) -> Bottleneck:
    """What bounds the run recorded in ``trace``.

    Args:
        trace: the run's trace.
        end_ps: the end of the run (picoseconds).
        samples: samples the run processed (all replicas).
        pipelined: whether the program is a pipeline (idle time is then a bubble).
        context: figures for the advice (optional): ``host_dataset_rate`` (samples/s),
            ``steps_per_execution``, ``gradient_accumulation``, ``host_overhead_s``.
    """
    context = dict(context or {})
    critical, parts = attribute(trace, end_ps, pipelined)
    total = max(end_ps, 1)
    shares = {r: parts[r] / total for r in RESOURCES}
    resource = max(RESOURCES, key=lambda r: (parts[r], -RESOURCES.index(r)))
    device_ps = sum(parts[r] for r in _DEVICE)
    device_rate = samples / (device_ps / 1e12) if device_ps else math.inf
    rate = samples / (end_ps / 1e12) if end_ps else math.nan
    advice = _advice(resource, shares, rate, device_rate, context)
    return Bottleneck(resource, shares[resource], shares, critical, device_rate, rate, advice)


def _rate(value: float) -> str:
    if not math.isfinite(value):
        return "unlimited"
    return f"{value / 1e3:,.1f}k" if value >= 1e4 else f"{value:,.0f}"


def _advice(
    resource: str,
    shares: Mapping[str, float],
    rate: float,
    device_rate: float,
    context: Mapping[str, object],
) -> str:
    device = f"the device alone could take {_rate(device_rate)} samples/s"
    if resource == "host input pipeline":
        produced = context.get("host_dataset_rate")
        if isinstance(produced, int | float) and produced > 0:
            rate = float(produced)
        return (
            f"host-bound: the input pipeline delivers {_rate(rate)} samples/s; {device}. A faster "
            "input pipeline (more host threads, caching, fewer per-element transformations, "
            "prefetch) would raise throughput."
        )
    if resource == "host round trip":
        spe = context.get("steps_per_execution")
        more = f" (now {spe})" if spe else ""
        return (
            f"host-bound: the IPU waits for the host's per-execution work; {device}. A larger "
            f"steps_per_execution{more} amortises the round trip."
        )
    if resource == "host link":
        return (
            f"bound by host I/O copies over the host link; {device}. Fewer bytes per sample "
            "(8-bit or fp16 inputs), or fewer replicas sharing a host link, would help."
        )
    if resource == "pipeline bubble":
        ga = context.get("gradient_accumulation")
        more = f" (now {ga})" if ga else ""
        return (
            "stages wait for each other (pipeline ramp-up / ramp-down and unbalanced stages). "
            f"More gradient accumulation{more} or better balanced stages would shrink it."
        )
    if resource == "IPU-Links / all-reduce":
        return (
            "inter-IPU traffic (pipeline copies, gradient all-reduce) bounds the run; more "
            "accumulation amortises the all-reduce, fewer stage boundaries cut the copies."
        )
    if resource == "Streaming Memory":
        return (
            "Streaming Memory traffic (offloaded optimizer state, activations or weights) "
            "bounds the run; more accumulation amortises it, or keep the state on chip if it fits."
        )
    compute_like = shares["device compute"] + shares["exchange"] + shares["sync"]
    return (
        f"device-bound ({100 * compute_like:.0f}% of the time in compute sets, exchange and "
        f"syncs); {device}. A larger micro-batch, fp16, or more replicas would raise throughput."
    )
