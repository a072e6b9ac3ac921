"""What a sweep prints: one short line per finished configuration, then a table, best first,
with the configurations that failed or did not fit and a one-line reason for each.

``[3/12] schedule=grouped accumulation=16: 496.3 samples/s`` as each configuration ends, then::

      schedule  accumulation samples/s bubble all-reduce ms memory note
       grouped            64   1,395.1  13.6%          22      87%
    ...
    sequential           128         -      -             -      - out of memory: ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["THROUGHPUT", "config_label", "one_line", "progress_line", "summary_table"]

#: The figure a sweep's table is sorted by when the rows have it (best first).
THROUGHPUT = "throughput_samples_per_s"
#: Figures shown in the table when present (besides the configuration keys): column title and
#: how a value is written.
_FIGURES: dict[str, tuple[str, str] | tuple[str, str, float]] = {
    THROUGHPUT: ("samples/s", "{:,.1f}"),
    "throughput": ("throughput", "{:,.6g}"),
    "bubble": ("bubble", "{:.1%}"),
    "exposed_all_reduce_s": ("all-reduce ms", "{:.3g}", 1e3),
    "memory_fraction_of_budget": ("memory", "{:.0%}"),
}
#: Longest reason kept on a line (characters).
_REASON_CHARS = 110


def one_line(text: str, limit: int = _REASON_CHARS) -> str:
    """The first line of ``text``, cut to ``limit`` characters with an ellipsis."""
    first = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def config_label(config: Mapping[str, Any]) -> str:
    """``key=value key=value`` of a configuration (strings unquoted)."""
    return " ".join(f"{k}={v}" for k, v in config.items())


def _outcome(record: Mapping[str, Any]) -> str:
    if note := _note(record):
        return note
    value = (record.get("row") or {}).get(THROUGHPUT)
    return f"{value:,.1f} samples/s" if isinstance(value, int | float) else "done"


def progress_line(done: int, total: int, record: Mapping[str, Any]) -> str:
    """The line printed when a configuration finishes: its place, settings and outcome."""
    return f"[{done}/{total}] {config_label(record.get('config') or {})}: {_outcome(record)}"


def _note(row: Mapping[str, Any] | pd.Series) -> str:
    """Why a configuration has no figures (failed, out of memory), or ""."""
    if row.get("error"):
        return "failed: " + one_line(row["error"])
    if row.get("oom"):
        return "out of memory: " + one_line(row.get("oom_reason") or "")
    return ""


def summary_table(frame: pd.DataFrame, keys: Sequence[str], sort_by: str | None = None) -> str:
    """The sweep's table: completed configurations best first (by ``sort_by``, descending),
    then the failed and out-of-memory ones with their one-line reason.

    Args:
        frame: the sweep's DataFrame (:func:`~ipusim.sweep.run_sweep`).
        keys: the configuration keys (the study's ``keys``), shown first.
        sort_by: the figure to rank by (default ``throughput_samples_per_s``, else
            ``throughput``); the study's order when the rows have neither.
    """
    if frame.empty:
        return "(no configurations)"
    if sort_by is None:
        sort_by = next((c for c in (THROUGHPUT, "throughput") if c in frame.columns), "")
    notes = frame.apply(_note, axis=1)
    ok = notes == ""
    ranked = frame[ok]
    if sort_by in frame.columns:
        ranked = ranked.sort_values(sort_by, ascending=False, kind="stable")
    ordered = pd.concat([ranked, frame[~ok]])
    table = ordered[list(keys)].copy()
    for column, (title, form, *scale) in _FIGURES.items():
        if column in ordered.columns:
            factor = scale[0] if scale else 1
            table[title] = [
                "-" if not good or pd.isna(v) else form.format(v * factor)
                for v, good in zip(ordered[column], ok[ordered.index])
            ]
    if not ok.all():
        table["note"] = notes[ordered.index]
    text: str = table.to_string(index=False)  # pandas has no type information here
    return text
