"""What the figures accept: a :class:`~ipusim.trace.Report`, a :class:`~ipusim.trace.Trace`,
report tables, memory plans, or a path to a saved report folder or ``trace.npz``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ipusim.lowering.program import MEMORY_CATEGORIES, IPUMemoryPlan
from ipusim.trace import Report, Trace, memory_report, utilisation
from ipusim.trace.reports import UTILISATION_STATES, category_column, state_column

PathLike = str | os.PathLike[str]


def load(source: Report | Trace | PathLike) -> Report | Trace:
    """A report or a trace, reading it from disk when given a path.

    Args:
        source: a :class:`Report` or :class:`Trace` (returned as is), a report folder written by
            :meth:`Report.save` (read with :meth:`Report.load`), or a ``.npz`` trace file written
            by :meth:`Trace.save`.

    Raises:
        FileNotFoundError: if the path does not exist.
        TypeError: if ``source`` is none of these.
    """
    if isinstance(source, Report | Trace):
        return source
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if path.is_dir():
            return Report.load(path)
        if path.is_file():
            return Trace.load(path)
        raise FileNotFoundError(
            f"no report folder or trace file at {str(path)!r}; pass a folder written by "
            f"Report.save or a trace.npz written by Trace.save"
        )
    raise TypeError(
        f"expected a Report, a Trace or the path of a report folder or trace.npz; got "
        f"{type(source).__name__}"
    )


def trace_of(source: Report | Trace | PathLike) -> tuple[Trace, Report | None]:
    """The trace of ``source`` and, when it is (or names) a report, the report."""
    loaded = load(source)
    if isinstance(loaded, Report):
        return loaded.trace, loaded
    return loaded, None


def _require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str, fix: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"the {what} DataFrame lacks columns {missing}; it has {list(frame.columns)}; {fix}"
        )


def utilisation_table(source: Report | Trace | pd.DataFrame | PathLike) -> pd.DataFrame:
    """A utilisation table (:func:`ipusim.trace.utilisation`) from a report, trace, path or table.

    Raises:
        ValueError: if a given DataFrame lacks the ``ipu`` or share columns.
    """
    if isinstance(source, pd.DataFrame):
        needed = ["ipu", *(state_column(s, "share") for s in UTILISATION_STATES)]
        _require_columns(
            source, needed, "utilisation", "pass Report.utilisation or ipusim.trace.utilisation()"
        )
        return source
    loaded = load(source)
    if isinstance(loaded, Report):
        return loaded.utilisation
    return utilisation(loaded)


def memory_table(
    source: Report | pd.DataFrame | Sequence[IPUMemoryPlan] | PathLike,
) -> pd.DataFrame:
    """A memory table (:func:`ipusim.trace.memory_report`) from a report, plans, path or table.

    Raises:
        ValueError: if a given DataFrame lacks the ``ipu``, category or budget columns.
        TypeError: if ``source`` is a trace (it holds no memory) or of another type.
    """
    if isinstance(source, pd.DataFrame):
        needed = ["ipu", *(category_column(c) for c in MEMORY_CATEGORIES), "budget_bytes"]
        _require_columns(
            source, needed, "memory", "pass Report.memory or ipusim.trace.memory_report()"
        )
        return source
    if _is_plans(source):
        return memory_report(list(source))
    loaded = load(source)
    if isinstance(loaded, Trace):
        raise TypeError(
            "a trace holds no memory figures; pass a Report, its folder, Report.memory or the "
            "memory plans"
        )
    return loaded.memory


def plans_of(source: Report | IPUMemoryPlan | Sequence[IPUMemoryPlan] | PathLike) -> list:
    """The memory plans of ``source`` (a report from a run, one plan, or a sequence of plans).

    Raises:
        ValueError: if ``source`` is a report without plans (one loaded from a folder).
        TypeError: if ``source`` is a trace or of another type.
    """
    if isinstance(source, IPUMemoryPlan):
        return [source]
    if _is_plans(source):
        return list(source)
    loaded = load(source)
    if isinstance(loaded, Trace):
        raise TypeError(
            "a trace holds no memory plans; pass the Report of a run or its memory_plans"
        )
    if not loaded.memory_plans:
        from analysis.saved import saved_plans

        rebuilt = saved_plans(loaded)
        if rebuilt:
            return rebuilt
        raise ValueError(
            "this report has no memory plans and its folder no tiles.csv (it was saved by an "
            "ipusim that did not keep the tile map); save the report again, or pass the Report "
            "a run returned (model.last_simulation) or its memory_plans"
        )
    return list(loaded.memory_plans)


def _is_plans(source: Any) -> bool:
    return (
        isinstance(source, Sequence)
        and not isinstance(source, str)
        and len(source) > 0
        and all(isinstance(p, IPUMemoryPlan) for p in source)
    )
