"""One row of figures from a simulation :class:`~ipusim.trace.Report`, and saving sweep tables.

:func:`report_row` turns a report into the scalar figures a sweep compares across configurations:
throughput, where each IPU's time went, the pipeline bubble, the all-reduce time the IPUs wait
for, and memory. :func:`save` writes a sweep's table as Parquet or CSV.
"""

from __future__ import annotations

import importlib
import io
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
import pandas as pd

from ipusim._files import write_bytes_atomic
from ipusim.cost.units import PS_PER_S
from ipusim.trace.records import HOST, IPU_STATE_TRACKS, Trace
from ipusim.trace.reports import UTILISATION_STATES, state_column

if TYPE_CHECKING:
    from ipusim.trace.report import Report

__all__ = [
    "COLLECTIVE_PREFIXES",
    "bubble_share",
    "exposed_collective_s",
    "oom_figures",
    "report_row",
    "save",
]

#: Names of link records that are gradient / weight collectives.
COLLECTIVE_PREFIXES = ("all-reduce", "reduce-scatter", "all-gather")


def _union_ps(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of intervals [start, end) (picoseconds)."""
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    # A new merged segment starts wherever an interval begins after everything before it ended.
    breaks = np.flatnonzero(s[1:] > reach[:-1])
    seg_starts = np.concatenate(([s[0]], s[breaks + 1]))
    seg_ends = np.concatenate((reach[breaks], [reach[-1]]))
    return int((seg_ends - seg_starts).sum())


def bubble_share(trace: Trace) -> float:
    """Mean share of the device-busy time that an IPU sits idle (the pipeline bubble).

    The device is busy whenever at least one IPU is in a state (compute, exchange, sync,
    host-io, link, remote). Each IPU's idle share is ``1 − busy_i / busy_any``; the result is
    their mean. Host gaps between executions, when no IPU works, do not count, so an unpipelined
    run has a bubble of 0 and uniform pipeline stages under the Grouped schedule (S stages, M
    micro-batches, no syncs or copies) have ``(S − 1) / (M + S − 1)`` apart from the weight
    update. It is measured over the records the trace kept (its first executions when a long run
    keeps counters only for the rest).

    Returns:
        The bubble share in [0, 1]; 0.0 for a trace with no IPU record.
    """
    ipu = trace["ipu"]
    on_ipu = (ipu != HOST) & np.isin(trace["track"], IPU_STATE_TRACKS)
    if not on_ipu.any():
        return 0.0
    starts, ends = trace["start_ps"][on_ipu], trace["end_ps"][on_ipu]
    busy_any = _union_ps(starts, ends)
    if busy_any == 0:
        return 0.0
    ipus = ipu[on_ipu]
    durations = ends - starts
    shares = [
        (busy_any - int(durations[ipus == i].sum())) / busy_any for i in sorted(set(ipus.tolist()))
    ]
    return float(sum(shares) / len(shares))


def exposed_collective_s(trace: Trace, ipu: int = 0) -> float:
    """Seconds IPU ``ipu`` spends in all-reduce / reduce-scatter / all-gather on its links, over
    the whole run (from the trace's counters, whatever detail it kept).

    An IPU's states never overlap, so this time is not hidden behind compute: it is exposed.
    """
    from ipusim.trace.counters import time_named

    names = [n for n in trace.names if n.startswith(COLLECTIVE_PREFIXES)]
    slot = trace.counters.slot(ipu % trace.ipus_per_replica if trace.replicas > 1 else ipu)
    if slot < 0 or not names:
        return 0.0
    return int(time_named(trace.templates, trace.counters, names)[slot]) / PS_PER_S


def _number(value: Any) -> float | int | None:
    # A Python number or a numpy scalar (pandas' reductions); ``item()`` makes it a Python one.
    number: float | int = value.item() if hasattr(value, "item") else value
    if isinstance(number, float) and not math.isfinite(number):
        return None
    return number


def report_row(report: Report) -> dict[str, Any]:
    """The scalar figures of one simulated run, as one sweep row.

    Keys:
        ``throughput_samples_per_s``, ``simulated_s``, ``samples``, ``steps``, ``system_name``,
        ``ipus_used`` (IPUs in the report, all replicas);
        ``<state>_share`` and ``<state>_share_max`` for every state of the utilisation report
        (``compute``, ``exchange``, ``sync``, ``host_io``, ``link``, ``remote``, ``idle``): the
        mean over IPUs and the largest IPU's share of the run;
        ``fraction_of_peak``: mean over IPUs of achieved / peak FLOP/s;
        ``bubble``: see :func:`bubble_share`;
        ``exposed_all_reduce_s``: see :func:`exposed_collective_s` (IPU 0);
        ``memory_max_bytes``, ``memory_budget_bytes``, ``memory_fraction_of_budget``,
        ``memory_max_tile_fraction``: the fullest IPU's SRAM total, its budget, the largest
        fraction of budget and of a tile's budget over the IPUs (None without memory plans);
        ``oom`` (False) and ``oom_reason`` ("").

    Non-finite numbers become None.
    """
    util = report.utilisation
    row: dict[str, Any] = {
        "throughput_samples_per_s": _number(report.throughput_samples_per_s),
        "simulated_s": _number(report.seconds),
        "samples": int(report.samples),
        "steps": int(report.steps),
        "system_name": report.system_name,
        "ipus_used": len(util),
    }
    for state in UTILISATION_STATES:
        column = state_column(state, "share")
        values = util[column]
        row[column] = _number(values.mean()) if len(values) else None
        row[column + "_max"] = _number(values.max()) if len(values) else None
    fractions = util["fraction_of_peak"]
    row["fraction_of_peak"] = _number(fractions.mean()) if len(fractions) else None
    row["bubble"] = bubble_share(report.trace)
    row["exposed_all_reduce_s"] = exposed_collective_s(report.trace, 0)
    memory = report.memory
    if len(memory):
        fullest = memory.loc[memory["total_bytes"].idxmax()]
        row["memory_max_bytes"] = int(fullest["total_bytes"])
        row["memory_budget_bytes"] = int(fullest["budget_bytes"])
        row["memory_fraction_of_budget"] = _number(memory["fraction_of_budget"].max())
        row["memory_max_tile_fraction"] = _number(memory["fraction_of_tile_budget"].max())
    else:
        row.update(
            memory_max_bytes=None,
            memory_budget_bytes=None,
            memory_fraction_of_budget=None,
            memory_max_tile_fraction=None,
        )
    row["oom"] = False
    row["oom_reason"] = ""
    return row


def oom_figures(error: BaseException) -> dict[str, Any]:
    """The row of a configuration that does not fit: ``oom`` True and the error's message."""
    return {"oom": True, "oom_reason": str(error)}


def _have_pyarrow() -> bool:
    try:
        importlib.import_module("pyarrow")  # by name: an optional dependency without stubs
    except ImportError:
        return False
    return True


def save(df: pd.DataFrame, path: str | os.PathLike[str], stream: TextIO | None = None) -> Path:
    """Write a sweep table atomically: Parquet for ``.parquet``, CSV for ``.csv``.

    Parquet needs pyarrow. Without it the table is written as CSV next to the requested path
    (same name, ``.csv``) and a note saying so goes to ``stream`` (stderr by default).

    Args:
        df: the table.
        path: the target file; its suffix picks the format.
        stream: where the fallback note goes.

    Returns:
        The path written.

    Raises:
        SweepError: for another suffix, or a table Parquet cannot hold.
    """
    from ipusim.sweep.errors import SweepError

    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise SweepError(
            f"save: cannot tell the format of {str(target)!r} from its suffix "
            f"{target.suffix!r}; use a name ending in .parquet or .csv"
        )
    if suffix == ".parquet" and not _have_pyarrow():
        fallback = target.with_suffix(".csv")
        print(
            f"note: pyarrow is not installed, so {str(target)!r} cannot be written as Parquet; "
            f"writing {str(fallback)!r} (CSV) instead. `pip install pyarrow` (or ipusim's "
            "`parquet` extra) for Parquet.",
            file=stream if stream is not None else sys.stderr,
        )
        target, suffix = fallback, ".csv"
    if suffix == ".csv":
        data = df.to_csv(index=False).encode("utf-8")
    else:
        buffer = io.BytesIO()
        try:
            df.to_parquet(buffer, index=False)
        except (TypeError, ValueError) as exc:  # pyarrow's ArrowInvalid / ArrowTypeError
            raise SweepError(
                f"save: the table cannot be stored as Parquet ({exc}); a column probably mixes "
                "types. Save it as .csv instead."
            ) from None
        data = buffer.getvalue()
    return write_bytes_atomic(target, data)
