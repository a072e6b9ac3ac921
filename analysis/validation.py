"""The validation table as a figure: predicted against published throughput, one point per row."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from analysis import style


def validation_scatter(
    rows: Sequence[Mapping[str, Any]] | str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
    *,
    title: str = "Simulated against published throughput",
) -> Figure:
    """Log-log scatter of predicted against measured throughput, with the ±15% band.

    Args:
        rows: the ``rows`` of a validation result (``validation.cli.to_json``), or the path of
            a ``validation*.json`` file written by ``bench/bench_validation.py``.
        path: where to save the figure (``.png`` or ``.svg``); not saved when None.
        title: the figure title.
    """
    if path is not None:
        style.file_format(path)
    if isinstance(rows, str | os.PathLike):
        with open(rows) as f:
            rows = json.load(f)["rows"]
    measured = np.array([float(r["measured"]) for r in rows])
    predicted = np.array([float(r["predicted"]) for r in rows])
    if not len(measured):
        raise ValueError("validation_scatter needs at least one row")
    fig = style.new_figure(6.5, 6.0)
    ax = fig.add_subplot()
    low, high = (
        min(measured.min(), predicted.min()) / 1.5,
        max(measured.max(), predicted.max()) * 1.5,
    )
    line = np.array([low, high])
    ax.fill_between(line, line * 0.85, line * 1.15, color=style.BAND_COLOUR, label="±15%")
    ax.plot(line, line, color=style.REFERENCE_COLOUR, linewidth=0.8)
    ax.scatter(measured, predicted, s=18, color=style.POINT_COLOUR, zorder=3)
    for r, x, y in zip(rows, measured, predicted):
        ax.annotate(str(r["id"]), (x, y), textcoords="offset points", xytext=(4, 2), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("published (samples/s)")
    ax.set_ylabel("simulated (samples/s)")
    ax.set_title(title)
    ax.legend(loc="upper left")
    if path is not None:
        style.save_figure(fig, path)
    return fig
