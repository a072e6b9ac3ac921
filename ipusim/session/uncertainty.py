"""Uncertainty you can see: a host-bound run's throughput across the plausible host presets.

A run whose time goes mostly to the host (its input pipeline, the host link's stream copies, the
per-execution round trip) rests on figures flagged E or D: the host preset's speed ratios and the
host figures fitted to calibration rows. :func:`host_range` simulates the same lowered run again,
timing only, on every host preset plausible for its system
(:func:`ipusim.hardware.hosts.plausible_hosts`) and returns the range, with the figures it rests
on. Figures the user gave (``host_dataset_rate``, ``host_overhead_s``) are measurements of the
user's host and stay as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ipusim.errors import IncompatibleStateError

if TYPE_CHECKING:
    from ipusim.hardware.hosts import HostPreset
    from ipusim.hardware.specs import SystemSpec
    from ipusim.trace import Report

__all__ = ["HOST_RESOURCES", "HostRange", "depends_on", "host_range", "host_range_line"]

#: The bottleneck resources that are the host's (``ipusim.trace.bottleneck``).
HOST_RESOURCES = ("host input pipeline", "host link", "host round trip")

#: What each host resource's time is computed from: (figure, where its flag is read: a system
#: source path, a host preset source key, or "fitted").
_FIGURES = {
    "host input pipeline": (
        ("host preset compute_scale", "compute_scale"),
        ("host preset call_scale", "call_scale"),
    ),
    "host link": (
        ("host.stream_bandwidth", "host.stream_bandwidth_bytes_per_s"),
        ("host.stream_copy_overhead", "host.stream_copy_overhead_s"),
        ("host.h2d_bandwidth", "host.h2d_bandwidth_bytes_per_s"),
    ),
    "host round trip": (
        ("host.per_execution_overhead (or a fitted host-overhead)", "fitted"),
        ("host preset round_trip_scale", "round_trip_scale"),
    ),
}


@dataclass(frozen=True)
class HostRange:
    """A run's throughput across the plausible host presets of its system.

    Attributes:
        host: the preset the run used.
        predictions: preset name -> throughput (samples/s).
        depends_on: the figures flagged E or D behind the run's host time, with their flags.
    """

    host: str
    predictions: Mapping[str, float]
    depends_on: tuple[str, ...]

    @property
    def low(self) -> float:
        return min(self.predictions.values())

    @property
    def high(self) -> float:
        return max(self.predictions.values())

    def __str__(self) -> str:
        each = ", ".join(f"{h} {v:,.0f}" for h, v in self.predictions.items())
        return (
            f"host-bound: {self.low:,.0f}-{self.high:,.0f} samples/s across the host presets of "
            f"this system ({each}; ran on {self.host}); rests on "
            f"{', '.join(self.depends_on) or 'no E/D figure'}"
        )


def depends_on(
    shares: Mapping[str, float], system: SystemSpec, preset: HostPreset
) -> tuple[str, ...]:
    """The E / D figures behind the host resources that take at least 5% of the time."""
    from ipusim.hardware import parse_flags

    out: list[str] = []
    for resource in HOST_RESOURCES:
        if shares.get(resource, 0.0) < 0.05:
            continue
        for name, key in _FIGURES[resource]:
            if key == "fitted":
                flags = {"D"}
            else:
                text = system.sources.get(key) if key.startswith("host.") else None
                text = text if text is not None else preset.sources.get(key)
                flags = set(parse_flags(text)) if text else set()
            kept = sorted(flags & {"E", "D"})
            if kept:
                out.append(f"{name} ({'/'.join(kept)})")
    return tuple(dict.fromkeys(out))


def host_range(report: Report) -> HostRange:
    """``report``'s run simulated again on each plausible host preset of its system.

    Raises:
        IncompatibleStateError: ``report`` was not simulated in this process (loaded from disk).
    """
    from ipusim.hardware.hosts import load_host, plausible_hosts, with_host
    from ipusim.session.run import host_preset_name, simulate

    what_if = getattr(report, "what_if", None)
    if what_if is None:
        raise IncompatibleStateError(
            "host_range needs a report simulated in this process (a loaded report keeps no "
            "program to simulate again); simulate the run and pass its report"
        )
    lowered, executions = what_if.lowered, what_if.executions
    current = str(report.extra.get("host") or host_preset_name(lowered))
    predictions = {current: report.throughput_samples_per_s}
    for name in plausible_hosts(lowered.system):
        if name in predictions:
            continue
        system = with_host(lowered.system, name, current=current)
        run = lowered.on(lowered.plan.with_system(system))
        predictions[name] = simulate(run, executions, publish=False).report.throughput_samples_per_s
    shares = report.bottleneck.shares
    return HostRange(current, predictions, depends_on(shares, lowered.system, load_host(current)))


def host_range_line(report: Report) -> str | None:
    """:func:`host_range` in words when ``report``'s run is bound by a host resource and can be
    simulated again; None otherwise (a device-bound or loaded report)."""
    if getattr(report, "what_if", None) is None or report.bottleneck.resource not in HOST_RESOURCES:
        return None
    return str(host_range(report))
