"""Every per-report figure into one folder."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from analysis import style
from analysis.liveness import liveness_plot
from analysis.memory import memory_by_category, tile_histogram
from analysis.sources import PathLike, load
from analysis.timeline import timeline
from analysis.utilisation import utilisation_bars
from ipusim.trace import Report, Trace


def plot_report(
    report_or_folder: Report | Trace | PathLike,
    out_dir: str | os.PathLike[str],
    formats: Sequence[str] = ("png", "svg"),
) -> dict[str, list[Path]]:
    """Write the figures of one run into ``out_dir`` (created if missing), in every format.

    Figures: ``timeline``, ``utilisation``; with memory figures (a report): ``memory``; with memory
    plans (the report of a run, or one read from a folder with its ``tiles.csv``: see
    :mod:`analysis.saved`): ``tile_memory``, the tiles of the IPU with the fullest tile, and
    ``liveness``, that IPU's live memory over its program.

    Args:
        report_or_folder: a :class:`Report`, a :class:`Trace`, or the path of a report folder or
            ``trace.npz``.
        out_dir: folder for the files (``timeline.png``, ``timeline.svg``, ...).
        formats: file formats, of ``("png", "svg")``.

    Returns:
        Figure name → the paths written, one per format.

    Raises:
        ValueError: if a format is not supported.
    """
    formats = [formats] if isinstance(formats, str) else list(formats)
    bad = [f for f in formats if f not in style.FORMATS]
    if bad or not formats:
        raise ValueError(f"formats must be some of {style.FORMATS}; got {formats!r}")
    source = load(report_or_folder)
    figures = {"timeline": timeline(source), "utilisation": utilisation_bars(source)}
    if isinstance(source, Report):
        if not source.memory.empty:
            figures["memory"] = memory_by_category(source)
        plans = [plan for plan in _plans(source) if plan.tile_bytes]
        if plans:
            fullest = max(plans, key=lambda plan: (max(plan.tile_bytes), -plan.ipu))
            figures["tile_memory"] = tile_histogram(plans, ipu=fullest.ipu)
            if fullest.liveness is not None and fullest.liveness.step_names:
                figures["liveness"] = liveness_plot(plans, ipu=fullest.ipu)
    out = Path(out_dir)
    written: dict[str, list[Path]] = {}
    for name, fig in figures.items():
        written[name] = [style.save_figure(fig, out / f"{name}.{fmt}") for fmt in formats]
    return written


def _plans(report: Report) -> list:
    """The report's memory plans, rebuilt from its tables for a report read from a folder."""
    if report.memory_plans:
        return list(report.memory_plans)
    from analysis.saved import saved_plans

    return saved_plans(report)
