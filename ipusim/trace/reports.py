"""Reports on a trace and on memory plans, as pandas DataFrames (pure functions).

- :func:`utilisation`: per IPU, the time and share of the run spent in each state, idle included,
  and the FLOP rate achieved against the peak.
- :func:`throughput`: samples per simulated second.
- :func:`memory_report` / :func:`memory_items`: per-IPU SRAM use by category against the budget,
  and the long list of what occupies it.
- :func:`timeline_summary`: seconds per IPU, track and phase.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ipusim.cost.units import PS_PER_S
from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.lowering.liveness import ALWAYS_LIVE, LIVENESS_CATEGORIES, NOT_ALWAYS_LIVE
from ipusim.lowering.program import MEMORY_CATEGORIES, IPUMemoryPlan
from ipusim.trace.records import HOST, IPU_STATE_TRACKS, TRACE_PHASES, TRACKS, Trace, TraceError

#: Shares are whole multiples of 2**-53: every partial sum of them is exact in float64, so the
#: shares of a row add up to exactly 1.0 in any order of summation.
_SHARE_BITS = 53
_SHARE_UNITS = 1 << _SHARE_BITS

#: The states of an IPU in a utilisation report: its state tracks, then idle.
UTILISATION_STATES = (*IPU_STATE_TRACKS, "idle")


def state_column(state: str, suffix: str) -> str:
    """Column name of a state in :func:`utilisation` (``"host-io", "s"`` → ``"host_io_s"``)."""
    return f"{state.replace('-', '_')}_{suffix}"


def category_column(category: str) -> str:
    """Column name of a memory category (``"optimizer-state"`` → ``"optimizer_state_bytes"``)."""
    return f"{category.replace('-', '_')}_bytes"


def _apportion(parts_ps: Sequence[int], total_ps: int) -> list[float]:
    """Shares of ``parts_ps`` (summing to ``total_ps``) that add up to exactly 1.0.

    Each share is ``part / total`` rounded to a multiple of 2**-53 by the largest-remainder
    method (ties to the earlier part), so it is within 2**-53 of the exact ratio.
    """
    if total_ps == 0:
        return [0.0] * (len(parts_ps) - 1) + [1.0]
    scaled = [part * _SHARE_UNITS for part in parts_ps]
    units = [value // total_ps for value in scaled]
    remainders = [value % total_ps for value in scaled]
    missing = _SHARE_UNITS - sum(units)
    for k in sorted(range(len(units)), key=lambda k: (-remainders[k], k))[:missing]:
        units[k] += 1
    return [u / _SHARE_UNITS for u in units]


def _check_peaks(peak_flops_per_s: Mapping[int, float] | None) -> dict[int, float]:
    if peak_flops_per_s is None:
        return {}
    peaks = {}
    for ipu, peak in peak_flops_per_s.items():
        if not isinstance(ipu, int | np.integer) or ipu < 0:
            raise ConfigurationError(f"peak_flops_per_s keys must be IPU indices >= 0; got {ipu!r}")
        if not (isinstance(peak, int | float | np.number) and math.isfinite(peak) and peak > 0):
            raise ConfigurationError(
                f"peak_flops_per_s[{ipu}] must be a positive finite FLOP/s figure; got {peak!r}"
            )
        peaks[int(ipu)] = float(peak)
    return peaks


def _device_slot(trace: Trace, ipu: int) -> int:
    """The counters' column standing for ``ipu`` (replica r's IPUs are replica 0's), or -1."""
    if trace.replicas > 1:
        per = trace.ipus_per_replica
        if ipu >= trace.replicas * per:
            return -1
        ipu = ipu % per
    return trace.counters.slot(ipu)


def utilisation(
    trace: Trace,
    peak_flops_per_s: Mapping[int, float] | None = None,
    end_ps: int | None = None,
) -> pd.DataFrame:
    """Per IPU, where the run's time went (from the trace's whole-run counters).

    The run lasts from 0 to ``end_ps`` (default: the end of the trace). Every IPU of the trace
    (every replica's; and every IPU named in ``peak_flops_per_s``) gets a row with, for each
    state of :data:`UTILISATION_STATES` (the state tracks and ``idle`` = the time in no state):

    - ``<state>_s``: seconds in the state (``host-io`` → ``host_io_s``);
    - ``<state>_share``: its share of the run. Shares are computed from integer picoseconds and
      add up to exactly 1.0 (each is within 2**-53 of the exact ratio).

    plus ``ipu``, ``total_s``, ``flops`` (all FLOPs of the IPU), ``achieved_flops_per_s``
    (``flops / total_s``), ``peak_flops_per_s`` and ``fraction_of_peak`` (NaN without a peak).

    Args:
        trace: the trace of the run.
        peak_flops_per_s: IPU index → its peak FLOP/s, when known.
        end_ps: end of the run (picoseconds); at least the end of every IPU record.

    Raises:
        TraceError: if two states of one IPU overlap, or ``end_ps`` cuts an IPU record short.
        ValueError: if a peak or ``end_ps`` is invalid.
    """
    peaks = _check_peaks(peak_flops_per_s)
    total_ps = _run_end_ps(trace, end_ps)
    totals = trace.totals()
    state_ps = totals.state_ps()
    flops = totals.flops.sum(axis=(1, 2))
    ipus = sorted(set(trace.ipus) | set(peaks))
    total_s = total_ps / PS_PER_S
    by_slot: dict[int, dict[str, float | int]] = {}  # replicas share their replica-0 figures
    records = []
    for ipu in ipus:
        slot = _device_slot(trace, ipu)
        figures = by_slot.get(slot)
        if figures is None:
            parts = [int(v) for v in state_ps[slot]] if slot >= 0 else [0] * len(IPU_STATE_TRACKS)
            parts.append(total_ps - sum(parts))
            shares = _apportion(parts, total_ps)
            figures = {"total_s": total_s}
            for state, part in zip(UTILISATION_STATES, parts):
                figures[state_column(state, "s")] = part / PS_PER_S
            for state, share in zip(UTILISATION_STATES, shares):
                figures[state_column(state, "share")] = share
            figures["flops"] = int(flops[slot]) if slot >= 0 else 0
            figures["achieved_flops_per_s"] = figures["flops"] / total_s if total_ps else math.nan
            by_slot[slot] = figures
        peak = peaks.get(ipu, math.nan)
        records.append(
            {
                "ipu": ipu,
                **figures,
                "peak_flops_per_s": peak,
                "fraction_of_peak": figures["achieved_flops_per_s"] / peak,
            }
        )
    return pd.DataFrame(records, columns=_utilisation_columns()).astype({"ipu": "int64"})


def _run_end_ps(trace: Trace, end_ps: int | None) -> int:
    """The end of the run: ``end_ps`` (checked against the IPU records) or the trace's end."""
    if trace.states_checked:
        # The engine's states never overlap and end by the run's end: no record is read.
        latest = trace.end_ps if trace.counters.ipus else 0
    else:
        trace.check_ipu_states()
        ipu_col, end_col = trace.codes("ipu"), trace.codes("end_ps")
        on_ipu = ipu_col != HOST
        latest = int(end_col[on_ipu].max()) if on_ipu.any() else 0
    if end_ps is None:
        return trace.end_ps
    if not isinstance(end_ps, int | np.integer) or isinstance(end_ps, bool):
        raise ConfigurationError(f"end_ps must be an integer number of picoseconds; got {end_ps!r}")
    total_ps = int(end_ps)
    if total_ps < latest:
        what = "the run" if trace.states_checked else "the last IPU record"
        raise TraceError(
            f"end_ps ({total_ps}) is before the end of {what} ({latest} ps); "
            f"pass the end of the run, or None to use the trace's end"
        )
    return total_ps


def _utilisation_columns() -> list[str]:
    return [
        "ipu",
        "total_s",
        *(state_column(s, "s") for s in UTILISATION_STATES),
        *(state_column(s, "share") for s in UTILISATION_STATES),
        "flops",
        "achieved_flops_per_s",
        "peak_flops_per_s",
        "fraction_of_peak",
    ]


def throughput(samples: int, trace_or_seconds: Trace | float) -> float:
    """Samples per simulated second.

    Args:
        samples: samples processed (>= 0).
        trace_or_seconds: the run's trace (its end is the duration) or its duration in seconds.

    Raises:
        ValueError: if ``samples`` is negative or the duration is not positive.
    """
    if not isinstance(samples, int | np.integer) or isinstance(samples, bool) or samples < 0:
        raise ConfigurationError(f"samples must be an integer >= 0; got {samples!r}")
    if isinstance(trace_or_seconds, Trace):
        seconds = trace_or_seconds.end_ps / PS_PER_S
    else:
        seconds = float(trace_or_seconds)
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigurationError(
            f"the run's duration must be a positive number of seconds; got {seconds!r} "
            f"(an empty trace has no duration)"
        )
    return int(samples) / seconds


def _memory_columns() -> list[str]:
    return [
        "ipu",
        *(category_column(c) for c in MEMORY_CATEGORIES),
        "total_bytes",
        "budget_bytes",
        "fraction_of_budget",
        "max_tile_bytes",
        "tile_budget_bytes",
        "fraction_of_tile_budget",
    ]


def _check_plans(plans: Sequence[IPUMemoryPlan]) -> list[IPUMemoryPlan]:
    plans = list(plans)
    seen: set[int] = set()
    for plan in plans:
        if not isinstance(plan, IPUMemoryPlan):
            raise InvalidTypeError(
                f"plans must hold IPUMemoryPlan objects; got {type(plan).__name__}"
            )
        if plan.ipu in seen:
            raise ConfigurationError(f"two memory plans for IPU {plan.ipu}; give one plan per IPU")
        seen.add(plan.ipu)
        for item in plan.items:
            if item.category not in MEMORY_CATEGORIES:
                raise ConfigurationError(
                    f"memory item {item.name!r} on IPU {plan.ipu} has category "
                    f"{item.category!r}; expected one of {MEMORY_CATEGORIES}"
                )
    return sorted(plans, key=lambda plan: plan.ipu)


def memory_report(
    plans: Sequence[IPUMemoryPlan], replicas: int = 1, ipus_per_replica: int = 1
) -> pd.DataFrame:
    """Per IPU, SRAM use by category against the budget.

    With ``replicas`` > 1, ``plans`` are replica 0's and every replica gets a copy of each row
    (replica r's IPU ``r * ipus_per_replica + i`` holds what replica 0's IPU ``i`` holds).

    Columns: ``ipu``; ``<category>_bytes`` for each of :data:`MEMORY_CATEGORIES` in order
    (``optimizer-state`` → ``optimizer_state_bytes``); ``total_bytes`` (their sum);
    ``budget_bytes`` and ``fraction_of_budget``; ``max_tile_bytes`` (the fullest tile),
    ``tile_budget_bytes`` and ``fraction_of_tile_budget`` (NaN when a budget is 0).

    Raises:
        ValueError: if two plans share an IPU or an item has an unknown category.
    """
    records = []
    for plan in _check_plans(plans):
        by_category = plan.by_category()
        row: dict[str, float | int] = {"ipu": plan.ipu}
        row.update((category_column(c), by_category[c]) for c in MEMORY_CATEGORIES)
        total = sum(by_category[c] for c in MEMORY_CATEGORIES)
        max_tile = max(plan.tile_bytes, default=0)
        row.update(
            total_bytes=total,
            budget_bytes=plan.budget_bytes,
            fraction_of_budget=total / plan.budget_bytes if plan.budget_bytes else math.nan,
            max_tile_bytes=max_tile,
            tile_budget_bytes=plan.tile_budget_bytes,
            fraction_of_tile_budget=(
                max_tile / plan.tile_budget_bytes if plan.tile_budget_bytes else math.nan
            ),
        )
        records.append(row)
    columns = _memory_columns()
    dtypes = {c: ("float64" if c.startswith("fraction") else "int64") for c in columns}
    frame = pd.DataFrame(records, columns=columns).astype(dtypes)
    return _replicated(frame, replicas, ipus_per_replica)


def _replicated(frame: pd.DataFrame, replicas: int, ipus_per_replica: int) -> pd.DataFrame:
    """Replica 0's rows copied to every replica, IPUs renumbered, ordered by IPU (stable)."""
    if replicas <= 1 or frame.empty:
        return frame
    n = len(frame)
    out = pd.concat([frame] * replicas, ignore_index=True)
    offsets = np.repeat(np.arange(replicas, dtype=np.int64) * ipus_per_replica, n)
    out["ipu"] = out["ipu"].to_numpy() + offsets
    order = np.argsort(out["ipu"].to_numpy(), kind="stable")
    return out.iloc[order].reset_index(drop=True)


def memory_items(
    plans: Sequence[IPUMemoryPlan], replicas: int = 1, ipus_per_replica: int = 1
) -> pd.DataFrame:
    """Every memory item in long form: columns ``ipu``, ``name``, ``category``, ``bytes``.

    Rows are by IPU, in each plan's item order (replicas as in :func:`memory_report`).
    """
    rows = [
        (plan.ipu, item.name, item.category, item.bytes)
        for plan in _check_plans(plans)
        for item in plan.items
    ]
    frame = pd.DataFrame(rows, columns=["ipu", "name", "category", "bytes"])
    frame = frame.astype({"ipu": "int64", "name": "str", "category": "str", "bytes": "int64"})
    return _replicated(frame, replicas, ipus_per_replica)


def _liveness_columns() -> list[str]:
    return [
        "ipu",
        "step",
        "name",
        "phase",
        "stage",
        *(category_column(c) for c in LIVENESS_CATEGORIES),
        "always_live_bytes",
        "not_always_live_bytes",
        "total_bytes",
        "peak",
    ]


def liveness_report(
    plans: Sequence[IPUMemoryPlan], replicas: int = 1, ipus_per_replica: int = 1
) -> pd.DataFrame:
    """Live bytes per IPU and program step, always-live and not-always-live, by category (like
    PopVision's liveness report).

    One row per program step (an op, in the order the IPU runs them) of every IPU whose plan
    has a liveness analysis (replicas as in :func:`memory_report`). Columns: ``ipu``, ``step``,
    ``name`` (the op), ``phase``, ``stage``; ``<category>_bytes`` for each category of
    :data:`~ipusim.lowering.liveness.LIVENESS_CATEGORIES` (always-live: weights, optimizer
    state, gradient accumulators, code, exchange buffers; not-always-live: stash, activations,
    temporaries of matmuls and convolutions); ``always_live_bytes``, ``not_always_live_bytes``,
    ``total_bytes`` (their sum); ``peak`` (True on the IPU's step with the most live bytes,
    whose total equals the plan's total).
    """
    parts = []
    for plan in _check_plans(plans):
        live = plan.liveness
        if live is None or not live.step_names:
            continue
        n = len(live.step_names)
        data: dict[str, object] = {
            "ipu": np.full(n, plan.ipu, dtype=np.int64),
            "step": np.arange(n, dtype=np.int64),
            "name": list(live.step_names),
            "phase": list(live.step_phases),
            "stage": np.array(live.step_stages, dtype=np.int64),
        }
        for category in LIVENESS_CATEGORIES:
            data[category_column(category)] = live.by_category[category]
        always = np.sum([live.by_category[c] for c in ALWAYS_LIVE], axis=0)
        varying = np.sum([live.by_category[c] for c in NOT_ALWAYS_LIVE], axis=0)
        data["always_live_bytes"] = always
        data["not_always_live_bytes"] = varying
        data["total_bytes"] = always + varying
        data["peak"] = np.arange(n) == live.peak_step
        parts.append(pd.DataFrame(data))
    columns = _liveness_columns()
    if not parts:
        frame = pd.DataFrame({c: [] for c in columns})
    else:
        frame = pd.concat(parts, ignore_index=True)[columns]
    dtypes = {c: "int64" for c in columns if c not in ("name", "phase", "peak")}
    frame = frame.astype({**dtypes, "name": "str", "phase": "str", "peak": "bool"})
    return _replicated(frame, replicas, ipus_per_replica)


def timeline_summary(trace: Trace) -> pd.DataFrame:
    """Time per IPU, track and phase over the whole run (the host as IPU -1; every replica's
    IPUs), from the trace's counters.

    Columns: ``ipu``, ``track``, ``phase``, ``records``, ``seconds`` (summed durations),
    ``flops``, ``bytes``. Rows are sorted by IPU (host first), track (in
    :data:`~ipusim.trace.TRACKS` order) and phase (in :data:`~ipusim.trace.TRACE_PHASES` order).
    """
    columns = ["ipu", "track", "phase", "records", "seconds", "flops", "bytes"]
    totals = trace.totals()
    slot, track, phase = np.nonzero(totals.records)
    base_ipu = np.array(totals.slots, dtype=np.int64)[slot]
    rows = {
        "ipu": base_ipu,
        "track": np.array(TRACKS, dtype=object)[track],
        "phase": np.array(TRACE_PHASES, dtype=object)[phase],
        "records": totals.records[slot, track, phase],
        "seconds": totals.duration_ps[slot, track, phase] / PS_PER_S,
        "flops": totals.flops[slot, track, phase],
        "bytes": totals.bytes[slot, track, phase],
        "_track": track,
        "_phase": phase,
    }
    if trace.replicas > 1:
        device = base_ipu != HOST
        per = trace.ipus_per_replica
        parts = [{k: v[~device] for k, v in rows.items()}]
        for r in range(trace.replicas):
            part = {k: v[device] for k, v in rows.items()}
            part["ipu"] = part["ipu"] + r * per
            parts.append(part)
        rows = {k: np.concatenate([p[k] for p in parts]) for k in rows}
    order = np.lexsort((rows["_phase"], rows["_track"], rows["ipu"]))
    out = pd.DataFrame({c: rows[c][order] for c in columns})
    dtypes = {"track": "str", "phase": "str", "seconds": "float64"}
    dtypes |= dict.fromkeys(("ipu", "records", "flops", "bytes"), "int64")
    return out.astype(dtypes).reset_index(drop=True)
