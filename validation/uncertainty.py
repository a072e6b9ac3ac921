"""Uncertainty you can see: how much a host-bound row's prediction depends on the host.

A row whose time goes mostly to host resources (the input pipeline, the host link's stream
copies, the per-execution round trip) rests on figures flagged E (estimated) or D (derived,
fitted): the host preset's speed ratios and the fitted host figures. Where the published row does
not say which server drove the IPUs, every host preset plausible for the row's system
(:func:`ipusim.hardware.hosts.plausible_hosts`) is simulated again, timing only, and the range of
the predictions is reported beside the figures the host terms use
(:func:`ipusim.session.uncertainty.depends_on`, which :func:`ipusim.session.uncertainty.host_range`
uses for a user's run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ipusim.hardware import load_system
from ipusim.hardware.hosts import REFERENCE_HOST, default_host, load_host, plausible_hosts
from ipusim.session.uncertainty import HOST_RESOURCES, depends_on
from ipusim.session.uncertainty import HostRange as SessionHostRange

#: A row is host-bound for this section when host resources take at least this share of the
#: critical IPU's time (or one of them is the bottleneck).
HOST_SHARE = 0.25


@dataclass(frozen=True)
class HostRange(SessionHostRange):
    """A host-bound row's predictions across the plausible host presets of its system: a user
    run's range (:class:`ipusim.session.uncertainty.HostRange`) with the row it belongs to.

    Attributes:
        row_id: the row (``predictions`` are in the row's items/s).
    """

    row_id: str


def host_share(outcome: Any) -> float:
    """Share of the critical IPU's time that host resources take."""
    return sum(outcome.shares.get(r, 0.0) for r in HOST_RESOURCES)


def is_host_bound(outcome: Any) -> bool:
    return outcome.bound in HOST_RESOURCES or host_share(outcome) >= HOST_SHARE


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
    figures = depends_on(outcome.shares, system, load_host(own))
    return HostRange(host=own, predictions=predictions, depends_on=figures, row_id=row.id)


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


#: The resource whose time each fitted hardware constant sets (validation/fit.py keys).
_RESOURCE_OF = {
    "gw_link.collective_bandwidth": "IPU-Links / all-reduce",
    "host.per_execution_overhead": "host round trip",
    "host.stream_bandwidth": "host link",
    "host.stream_copy_overhead": "host link",
    "streaming_memory.bandwidth_per_ipu": "Streaming Memory",
}

#: A row depends on a fitted constant when its resource takes at least this share of the time,
#: and is listed when the constant's leave-one-out values move its prediction by this much.
CONSTANT_SHARE = 0.10
MOVES = 0.01


@dataclass(frozen=True)
class ConstantRange:
    """A row's predictions with a fitted (D) constant at the ends of its leave-one-out values.

    Attributes:
        row_id / key: the row and the constant.
        values: the constant's values tried (its leave-one-out refits), in its unit's text.
        predictions: the row's predicted throughput at each.
    """

    row_id: str
    key: str
    values: tuple[str, ...]
    predictions: tuple[float, ...]


def _spans_pods(row: Any) -> bool:
    system = load_system(str(row.args.get("system") or "IPU"))
    return system.num_ipus > system.ipus_per_pod


def constant_ranges(
    fits: Any, outcomes: Any, runner: Callable[[Any, Mapping[str, Any]], Any]
) -> list[ConstantRange]:
    """For each fitted hardware constant, the rows it was *not* fitted to whose time its resource
    takes a share of: their predictions with the constant at its lowest and highest
    leave-one-out value (how far the figure is pinned down by its own rows), when they move it
    by 1% or more. The GW-Link rate only matters to rows spanning Pods."""
    out = []
    for fit in fits:
        constant = fit.constant
        resource = _RESOURCE_OF.get(constant.key)
        values = [v for v in fit.loo_values.values() if v is not None]
        if resource is None or len(values) < 1:
            continue
        ends = sorted({min(values), max(values)})
        for outcome in outcomes:
            row = outcome.row
            if row.id in constant.rows or outcome.shares.get(resource, 0.0) < CONSTANT_SHARE:
                continue
            if resource == "IPU-Links / all-reduce" and not _spans_pods(row):
                continue
            if constant.key == "host.per_execution_overhead" and "host-overhead" in row.args:
                continue  # the row gives its framework's round trip itself
            predicted = tuple(runner(row, constant.overrides(v)).predicted for v in ends)
            if max(abs(p / outcome.predicted - 1.0) for p in predicted) < MOVES:
                continue  # the figure does not move this row's prediction
            texts = tuple(constant.text(v) for v in ends)
            out.append(ConstantRange(row.id, constant.key, texts, predicted))
    return out


def format_constant_ranges(ranges: list[ConstantRange]) -> list[str]:
    """One line per row and fitted constant it rests on."""
    return [
        f"fitted-constant range {r.row_id}: {r.key} (D) at its leave-one-out values "
        f"{' / '.join(r.values)} gives {' / '.join(_rate(p) for p in r.predictions)} items/s"
        for r in ranges
    ]
