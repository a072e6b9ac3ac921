"""The planner's figure: throughput of every simulated plan against the IPUs it uses per replica
and against the memory it leaves free, so the trade between speed, IPUs and headroom shows at a
glance (``plan.png`` in the folder of ``ipusim plan -o``)."""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.style import (
    BUDGET_COLOUR,
    LABEL_SIZE,
    POINT_COLOUR,
    REFERENCE_COLOUR,
    TICK_SIZE,
    TITLE_SIZE,
    new_figure,
)

__all__ = ["plan_figure"]


def plan_figure(table: pd.DataFrame, title: str = "ipusim plan") -> Figure:
    """Two panels of the ranked plans: throughput against IPUs per replica, and against memory
    headroom (the share of the fullest IPU left free: 1 - memory used).

    Args:
        table: a :class:`~ipusim.plan.search.PlanResult` table (columns ``throughput``,
            ``fits``, ``ipus_per_replica``, ``memory_used``), best first.
        title: the figure's title.

    Returns:
        The figure; plans that fit are filled dots, refused ones grey crosses, the best a star.
    """
    fig = new_figure(8.0, 3.4)
    by_ipus, by_headroom = fig.subplots(1, 2, sharey=True)
    headroom = 1.0 - table["memory_used"].astype(float)
    for ax, x, label in (
        (by_ipus, table["ipus_per_replica"].astype(float), "IPUs per replica"),
        (by_headroom, headroom, "memory headroom of the fullest IPU (share of SRAM free)"),
    ):
        _points(ax, x, table)
        ax.set_xlabel(label, fontsize=LABEL_SIZE)
        ax.tick_params(labelsize=TICK_SIZE)
    by_ipus.set_xscale("log", base=2)
    ipus = sorted(set(table["ipus_per_replica"].astype(int)))
    by_ipus.set_xticks(ipus, [str(n) for n in ipus])
    by_ipus.set_xlim(ipus[0] / 1.5, ipus[-1] * 1.5)
    by_headroom.axvline(0.0, color=BUDGET_COLOUR, linewidth=0.8, linestyle="--")
    by_ipus.set_ylabel("simulated throughput (samples/s)", fontsize=LABEL_SIZE)
    by_headroom.legend(fontsize=TICK_SIZE, loc="best")
    fig.suptitle(title, fontsize=TITLE_SIZE)
    return fig


def _points(ax: Axes, x: pd.Series, table: pd.DataFrame) -> None:
    """The plans of one panel: fitting, refused and the best."""
    fits = table["fits"].astype(bool)
    y = table["throughput"].astype(float)
    ax.scatter(x[fits], y[fits], s=18, color=POINT_COLOUR, label="fits")
    ax.scatter(x[~fits], y[~fits], s=18, color=REFERENCE_COLOUR, marker="x", label="refused")
    if fits.any():
        best = fits.idxmax()  # the table is ranked: the first fitting row is the best plan
        ax.scatter(
            [x[best]], [y[best]], s=120, marker="*", color=BUDGET_COLOUR, label="best", zorder=3
        )
