"""SRAM figures: memory per IPU by category against the budget, and bytes per tile."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis import _broken, style
from analysis.sources import PathLike, memory_table, plans_of
from ipusim.lowering.program import MEMORY_CATEGORIES, IPUMemoryPlan
from ipusim.trace import Report
from ipusim.trace.reports import category_column

_MIB = float(1 << 20)
_KIB = 1024.0
#: The ``gid`` of every SRAM budget line (to find them in a figure).
BUDGET_GID = "sram-budget"


def memory_by_category(
    report_or_memory_df: Report | pd.DataFrame | Sequence[IPUMemoryPlan] | PathLike,
    path: str | os.PathLike[str] | None = None,
    *,
    title: str | None = None,
) -> Figure:
    """Stacked bars per IPU of SRAM use by category (MiB), with the SRAM budget as a line.

    Categories with bytes on some IPU are drawn, in :data:`MEMORY_CATEGORIES` order. Each bar is
    labelled with its total and its fraction of the budget. Equal budgets draw one dashed line
    across the axes; unequal budgets one segment over each bar. When every IPU uses less than
    half its budget, the y axis is broken: the bars get their own scale and the budget line sits
    on a short axis above them.

    Args:
        report_or_memory_df: a :class:`Report`, a memory table (:attr:`Report.memory` /
            :func:`ipusim.trace.memory_report`), memory plans, or the path of a report folder.
        path: where to save the figure (``.png`` or ``.svg``); not saved when None.
        title: the figure title.

    Returns:
        The figure.
    """
    if path is not None:
        style.file_format(path)
    table = memory_table(report_or_memory_df).sort_values("ipu", kind="stable")
    ipus = [int(i) for i in table["ipu"]]
    x = np.arange(len(ipus))
    by_category = {
        c: table[category_column(c)].to_numpy(dtype=np.float64) / _MIB for c in MEMORY_CATEGORIES
    }
    totals = np.sum(list(by_category.values()), axis=0) if len(ipus) else np.zeros(0)
    budget = table["budget_bytes"].to_numpy(dtype=np.float64) / _MIB
    data_max = float(totals.max()) if len(totals) else 0.0
    one_budget = len(budget) > 0 and bool(np.all(budget == budget[0]))
    fig = style.new_figure(max(6.5, 3.5 + 0.7 * len(ipus)), 4.8)
    ax, top = _broken.split_y(fig, data_max, float(budget[0]) if one_budget else 0.0)
    bottom = np.zeros(len(ipus))
    for category in MEMORY_CATEGORIES:
        mib = by_category[category]
        if not (mib > 0).any():
            continue
        colour = style.CATEGORY_COLOURS.get(category, style.FALLBACK_COLOUR)
        ax.bar(x, mib, bottom=bottom, width=0.6, color=colour, label=category)
        bottom += mib
    _budget_lines(top if top is not None else ax, x, budget)
    for k, total in enumerate(totals):
        used = f" ({100 * total / budget[k]:.3g}%)" if budget[k] > 0 else ""
        ax.annotate(
            f"{total:,.2f} MiB{used}",
            (x[k], total),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=style.NOTE_SIZE,
        )
    shown_max = data_max if top is not None else max(data_max, float(budget.max(initial=0.0)))
    ax.set_ylim(0, (shown_max or 1.0) * 1.15)
    ax.set_xlim(-0.6, len(ipus) - 0.4)
    ax.set_xticks(x, [f"IPU {i}" for i in ipus])
    ax.set_ylabel("memory (MiB)", fontsize=style.LABEL_SIZE)
    for axes in (ax, top):
        if axes is not None:
            style.style_axes(axes)
            axes.grid(axis="x", visible=False)
    fig.suptitle(title or "Memory per IPU by category", fontsize=style.TITLE_SIZE)
    handles, labels = _legend_entries(ax, top)
    fig.legend(handles, labels, fontsize=style.NOTE_SIZE, loc="outside right upper")
    if path is not None:
        style.save_figure(fig, path)
    return fig


def _legend_entries(*axes) -> tuple[list, list[str]]:
    handles: list = []
    labels: list[str] = []
    for ax in axes:
        if ax is not None:
            h, lab = ax.get_legend_handles_labels()
            handles += h
            labels += lab
    return handles, labels


def _budget_lines(ax, x: np.ndarray, budget_mib: np.ndarray) -> None:
    if len(budget_mib) == 0:
        return
    if np.all(budget_mib == budget_mib[0]):
        ax.axhline(
            budget_mib[0],
            color=style.BUDGET_COLOUR,
            linestyle="--",
            linewidth=1.2,
            gid=BUDGET_GID,
            label=f"SRAM budget ({budget_mib[0]:,.0f} MiB)",
        )
        return
    for k, value in enumerate(budget_mib):
        ax.plot(
            [x[k] - 0.4, x[k] + 0.4],
            [value, value],
            color=style.BUDGET_COLOUR,
            linestyle="--",
            linewidth=1.2,
            gid=BUDGET_GID,
            label="SRAM budget" if k == 0 else "_nolegend_",
        )


def tile_histogram(
    report_or_plans: Report | IPUMemoryPlan | Sequence[IPUMemoryPlan] | PathLike,
    ipu: int = 0,
    path: str | os.PathLike[str] | None = None,
    *,
    bins: int = 50,
    title: str | None = None,
) -> Figure:
    """Histogram of the bytes held by each tile of one IPU (KiB), with the per-tile SRAM line.

    Bins run from 0 to the fullest tile. The x axis reaches the per-tile SRAM line; when the
    fullest tile holds less than half of it, the axis is broken and the line sits on a narrow
    axis to the right. A note gives the tile count, the fullest tile and the mean.

    Args:
        report_or_plans: the :class:`Report` of a run (a report read from a folder has no per-tile
            figures), one memory plan or a sequence of them.
        ipu: the IPU whose tiles are shown.
        path: where to save the figure (``.png`` or ``.svg``); not saved when None.
        bins: number of histogram bins between 0 and the fullest tile.
        title: the figure title.

    Returns:
        The figure.

    Raises:
        ValueError: if there is no plan for ``ipu`` or it has no per-tile bytes.
    """
    if path is not None:
        style.file_format(path)
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise ValueError(f"bins must be an integer >= 1; got {bins!r}")
    plans = {plan.ipu: plan for plan in plans_of(report_or_plans)}
    if ipu not in plans:
        raise ValueError(f"ipu={ipu!r} has no memory plan; plans are for IPUs {sorted(plans)}")
    plan = plans[ipu]
    if not plan.tile_bytes:
        raise ValueError(
            f"the memory plan of IPU {ipu} has no per-tile bytes (tile_bytes is empty); it was "
            f"made without a tile mapping"
        )
    kib = np.asarray(plan.tile_bytes, dtype=np.float64) / _KIB
    budget_kib = plan.tile_budget_bytes / _KIB
    fullest = float(kib.max())
    fig = style.new_figure(7.5, 4.5)
    ax, right = _broken.split_x(fig, fullest, budget_kib)
    ax.hist(
        kib, bins=np.linspace(0.0, fullest or 1.0, bins + 1), color=style.TILE_COLOUR, label="tiles"
    )
    if budget_kib > 0:
        (right if right is not None else ax).axvline(
            budget_kib,
            color=style.BUDGET_COLOUR,
            linestyle="--",
            linewidth=1.2,
            gid=BUDGET_GID,
            label=f"per-tile SRAM ({budget_kib:,.0f} KiB)",
        )
    shown_max = fullest if right is not None else max(fullest, budget_kib)
    ax.set_xlim(0, (shown_max or 1.0) * 1.1)
    ax.set_xlabel("memory per tile (KiB)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("tiles", fontsize=style.LABEL_SIZE)
    for axes in (ax, right):
        if axes is not None:
            style.style_axes(axes)
    used = f" ({100 * fullest / budget_kib:.3g}% of SRAM)" if budget_kib > 0 else ""
    note = (
        f"{len(kib):,} tiles\nfullest {fullest:,.2f} KiB{used}\nmean {float(kib.mean()):,.2f} KiB"
    )
    ax.text(
        0.03,
        0.97,
        note,
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=style.NOTE_SIZE,
        bbox={"facecolor": "white", "edgecolor": style.NOTE_EDGE_COLOUR, "boxstyle": "round"},
    )
    fig.suptitle(title or f"Memory per tile, IPU {ipu}", fontsize=style.TITLE_SIZE)
    handles, labels = _legend_entries(ax, right)
    fig.legend(handles, labels, fontsize=style.NOTE_SIZE, loc="outside lower center", ncol=2)
    if path is not None:
        style.save_figure(fig, path)
    return fig
