"""Liveness over the program (like PopVision's liveness report) and the tiles at the worst point.

- :func:`liveness_plot`: live bytes of one IPU per program step, stacked by category (always-live
  below, not-always-live above), the SRAM budget, and the peak marked with what is live there;
- :func:`tile_heatmap`: the bytes of every tile of one IPU at its fullest tile's worst step, as
  a grid, with that tile marked.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from analysis import style
from analysis.sources import PathLike, plans_of
from ipusim.lowering.liveness import LIVENESS_CATEGORIES
from ipusim.lowering.program import IPUMemoryPlan
from ipusim.trace import Report

_MIB = float(1 << 20)
_KIB = 1024.0
#: The ``gid`` of the line marking the peak step (to find it in a figure).
PEAK_GID = "liveness-peak"
#: The ``gid`` of the SRAM budget line.
BUDGET_GID = "sram-budget"


def _plan(source: Report | IPUMemoryPlan | Sequence[IPUMemoryPlan] | PathLike, ipu: int):
    plans = {plan.ipu: plan for plan in plans_of(source)}
    if ipu not in plans:
        raise ValueError(f"ipu={ipu!r} has no memory plan; plans are for IPUs {sorted(plans)}")
    plan = plans[ipu]
    if plan.liveness is None or not plan.liveness.step_names:
        raise ValueError(
            f"the memory plan of IPU {ipu} has no liveness analysis (it was made without a "
            "program, e.g. an IPU that runs no stage)"
        )
    return plan


def liveness_plot(
    report_or_plans: Report | IPUMemoryPlan | Sequence[IPUMemoryPlan] | PathLike,
    ipu: int = 0,
    path: str | os.PathLike[str] | None = None,
    *,
    items: int = 8,
    title: str | None = None,
) -> Figure:
    """Live memory of one IPU over its program, stacked by category (MiB), with the peak.

    The x axis is the program step (the ops in the order the IPU runs them). Always-live
    categories (weights, optimizer state, accumulators, code, exchange buffers) are drawn first,
    then the stash, the working activations and the temporaries of matmuls and convolutions.
    A vertical line marks the step with the most live bytes; a box lists the largest items live
    there. The SRAM budget is a dashed line when the peak reaches half of it.

    Args:
        report_or_plans: the :class:`Report` of a run, one memory plan or a sequence of them.
        ipu: the IPU to show.
        path: where to save the figure (``.png`` or ``.svg``); not saved when None.
        items: how many of the peak's items to list.
        title: the figure title.

    Returns:
        The figure.

    Raises:
        ValueError: if there is no plan for ``ipu`` or it has no liveness analysis.
    """
    if path is not None:
        style.file_format(path)
    plan = _plan(report_or_plans, ipu)
    live = plan.liveness
    steps = np.arange(len(live.step_names))
    fig = style.new_figure(9.0, 4.8)
    ax = fig.add_subplot(1, 1, 1)
    bottom = np.zeros(len(steps))
    for category in LIVENESS_CATEGORIES:
        mib = live.by_category[category] / _MIB
        if not (mib > 0).any():
            continue
        colour = style.CATEGORY_COLOURS.get(category, style.FALLBACK_COLOUR)
        ax.fill_between(
            steps, bottom, bottom + mib, step="mid", color=colour, label=category, linewidth=0
        )
        bottom = bottom + mib
    peak = live.peak_step
    peak_mib = float(bottom[peak])
    budget = plan.budget_bytes / _MIB
    ax.axvline(peak, color="k", linestyle=":", linewidth=1.0, gid=PEAK_GID, label="peak")
    top = peak_mib
    if budget and peak_mib >= 0.5 * budget:
        ax.axhline(
            budget,
            color=style.BUDGET_COLOUR,
            linestyle="--",
            linewidth=1.2,
            gid=BUDGET_GID,
            label=f"SRAM budget ({budget:,.0f} MiB)",
        )
        top = max(top, budget)
    listed = "\n".join(
        f"{name[:48]}  {b / _MIB:,.1f} MiB ({category})"
        for name, category, b in live.peak_items[:items]
    )
    note = f"peak {peak_mib:,.1f} MiB at step {peak}: {live.step_names[peak][:48]}\n{listed}"
    ax.text(
        0.01,
        0.99,
        note,
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=style.NOTE_SIZE - 1,
        family="monospace",
        bbox={
            "facecolor": "white",
            "edgecolor": style.NOTE_EDGE_COLOUR,
            "boxstyle": "round",
            "alpha": 0.9,
        },
    )
    ax.set_xlim(0, max(len(steps) - 1, 1))
    ax.set_ylim(0, (top or 1.0) * 1.6)
    ax.set_xlabel("program step (ops in execution order)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("live memory (MiB)", fontsize=style.LABEL_SIZE)
    style.style_axes(ax)
    fig.suptitle(title or f"Liveness, IPU {ipu}", fontsize=style.TITLE_SIZE)
    fig.legend(fontsize=style.NOTE_SIZE, loc="outside right upper")
    if path is not None:
        style.save_figure(fig, path)
    return fig


def tile_heatmap(
    report_or_plans: Report | IPUMemoryPlan | Sequence[IPUMemoryPlan] | PathLike,
    ipu: int = 0,
    path: str | os.PathLike[str] | None = None,
    *,
    columns: int = 64,
    title: str | None = None,
) -> Figure:
    """Bytes of every tile of one IPU (KiB) at its fullest tile's worst program step, as a grid.

    Tile ``t`` is drawn at row ``t // columns``, column ``t % columns``; the colour scale runs
    from 0 to the per-tile SRAM, so a full tile is the darkest cell. The fullest tile is circled.

    Args:
        report_or_plans: the :class:`Report` of a run, one memory plan or a sequence of them.
        ipu: the IPU to show.
        path: where to save the figure (``.png`` or ``.svg``); not saved when None.
        columns: tiles per row of the grid.
        title: the figure title.

    Returns:
        The figure.

    Raises:
        ValueError: if there is no plan for ``ipu``, it has no per-tile bytes, or ``columns``
            is not a positive integer.
    """
    if path is not None:
        style.file_format(path)
    if not isinstance(columns, int) or isinstance(columns, bool) or columns < 1:
        raise ValueError(f"columns must be an integer >= 1; got {columns!r}")
    plans = {plan.ipu: plan for plan in plans_of(report_or_plans)}
    if ipu not in plans or not plans[ipu].tile_bytes:
        raise ValueError(f"ipu={ipu!r} has no per-tile memory; plans are for IPUs {sorted(plans)}")
    plan = plans[ipu]
    kib = np.asarray(plan.tile_bytes, dtype=np.float64) / _KIB
    rows = -(-len(kib) // columns)
    grid = np.full(rows * columns, np.nan)
    grid[: len(kib)] = kib
    fig = style.new_figure(9.0, 1.2 + 0.22 * rows)
    ax = fig.add_subplot(1, 1, 1)
    budget = plan.tile_budget_bytes / _KIB
    image = ax.imshow(
        grid.reshape(rows, columns),
        cmap="viridis",
        vmin=0.0,
        vmax=max(budget, float(np.nanmax(grid))),
        aspect="auto",
        interpolation="nearest",
    )
    fullest = int(np.argmax(kib))
    ax.plot(fullest % columns, fullest // columns, "o", mfc="none", mec="red", ms=9)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("KiB per tile (top = tile SRAM)", fontsize=style.LABEL_SIZE)
    ax.set_xlabel(f"tile % {columns}", fontsize=style.LABEL_SIZE)
    ax.set_ylabel(f"tile // {columns}", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    where = ""
    if plan.liveness is not None:
        where = f" at {plan.liveness.step_label(plan.liveness.tile_peak_step)}"
    fig.suptitle(
        title
        or f"Memory per tile, IPU {ipu}{where}\nfullest: tile {fullest}, {kib[fullest]:,.1f} KiB",
        fontsize=style.TITLE_SIZE - 1,
    )
    if path is not None:
        style.save_figure(fig, path)
    return fig
