"""Uncertainty you can see: how much a host-bound row's prediction depends on the host.

A row whose time goes mostly to host resources (the input pipeline, the host link's stream
copies, the per-execution round trip) rests on figures flagged E (estimated) or D (derived,
fitted): the host preset's speed ratios and the fitted host figures. Where the published row does
not say which server drove the IPUs, every host preset plausible for the row's system
(:func:`ipusim.hardware.hosts.plausible_hosts`) is simulated again, timing only, and the range of
the predictions is reported beside the figures the host terms use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ipusim.hardware import load_system, parse_flags
from ipusim.hardware.hosts import REFERENCE_HOST, default_host, load_host, plausible_hosts

#: The bottleneck resources that are the host's (``ipusim.trace.bottleneck``).
HOST_RESOURCES = ("host input pipeline", "host link", "host round trip")

#: A row is host-bound for this section when host resources take at least this share of the
#: critical IPU's time (or one of them is the bottleneck).
HOST_SHARE = 0.25

#: What each host resource's time is computed from: (figure, where its flag is read).
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
        ("host.per_execution_overhead (or the row's fitted host-overhead)", "fitted"),
        ("host preset round_trip_scale", "round_trip_scale"),
    ),
}


@dataclass(frozen=True)
class HostRange:
    """A host-bound row's predictions across the plausible host presets of its system.

    Attributes:
        row_id: the row.
        host: the preset the table's prediction used.
        predictions: preset name -> predicted throughput (the row's items/s).
        depends_on: the figures flagged E or D that the row's host terms use, with their flags.
    """

    row_id: str
    host: str
    predictions: Mapping[str, float]
    depends_on: tuple[str, ...]

    @property
    def low(self) -> float:
        return min(self.predictions.values())

    @property
    def high(self) -> float:
        return max(self.predictions.values())


def host_share(outcome: Any) -> float:
    """Share of the critical IPU's time that host resources take."""
    return sum(outcome.shares.get(r, 0.0) for r in HOST_RESOURCES)


def is_host_bound(outcome: Any) -> bool:
    return outcome.bound in HOST_RESOURCES or host_share(outcome) >= HOST_SHARE


def _flagged(outcome: Any, system: Any, preset: Any) -> tuple[str, ...]:
    """The E / D figures behind the host resources that take time in ``outcome``."""
    out: list[str] = []
    sources = system.sources
    for resource in HOST_RESOURCES:
        if outcome.shares.get(resource, 0.0) < 0.05:
            continue
        for name, key in _FIGURES[resource]:
            if key == "fitted":
                flags = {"D"}
            else:
                text = sources.get(key) if key.startswith("host.") else preset.sources.get(key)
                flags = set(parse_flags(text)) if text else set()
            kept = sorted(flags & {"E", "D"})
            if kept:
                out.append(f"{name} ({'/'.join(kept)})")
    return tuple(dict.fromkeys(out))


def host_overrides(row: Any, host: str) -> dict[str, Any]:
    """The run overrides that put ``row`` on the host preset ``host``: the preset, and the row's
    own fitted round trip (``host-overhead``, fitted on the reference host) rescaled by the
    preset's ``round_trip_scale`` as the system's round trip is."""
    overrides: dict[str, Any] = {"arg:host": host}
    if "host-overhead" in row.args:
        ratio = load_host(host).round_trip_scale / load_host(REFERENCE_HOST).round_trip_scale
        overrides["arg:host-overhead"] = float(row.args["host-overhead"]) * ratio
    return overrides


def host_range(outcome: Any, runner: Callable[[Any, Mapping[str, Any]], Any]) -> HostRange:
    """``outcome``'s row simulated again on every plausible host preset of its system.

    Args:
        outcome: the row's outcome on its own host (``validation.run.Outcome``).
        runner: ``runner(row, overrides)`` -> Outcome (``validation.run.run_row``).
    """
    row = outcome.row
    system = load_system(str(row.args.get("system") or "IPU"))
    own = str(row.args.get("host") or default_host(system))
    predictions = {own: outcome.predicted}
    for host in plausible_hosts(system):
        if load_host(host).name not in predictions:
            predictions[load_host(host).name] = runner(row, host_overrides(row, host)).predicted
    return HostRange(row.id, own, predictions, _flagged(outcome, system, load_host(own)))


def _rate(value: float) -> str:
    return f"{value / 1e3:.1f}k" if value >= 1e4 else f"{value:,.0f}"


def format_ranges(ranges: Mapping[str, HostRange], measured: Mapping[str, float]) -> list[str]:
    """One line per host-bound row: the range across host presets and what it depends on."""
    lines = []
    for r in ranges.values():
        each = ", ".join(f"{h} {_rate(v)}" for h, v in r.predictions.items())
        inside = "inside" if r.low <= measured[r.row_id] <= r.high else "outside"
        lines.append(
            f"host range {r.row_id}: {_rate(r.low)}-{_rate(r.high)} items/s across the host "
            f"presets of its system ({each}; table used {r.host}; measured "
            f"{_rate(measured[r.row_id])}, {inside} the range); depends on "
            f"{', '.join(r.depends_on) or 'no E/D figure'}"
        )
    return lines
