"""The README's timeline: one execution of ``ipusim demo`` (50 training steps on one GC200).

The window is the first execution: from 0.1 ms before its first IPU record (so the end of the
host's per-execution overhead shows) to just after the last record of its 50th step, on a 0.1 ms
grid. The README's ``ipusim plot`` command quotes it (checked by :mod:`docs.build.claims`).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from docs.build.artefacts import Run

FIGURE = "demo_timeline"
#: The rounding of the window's ends (s): the README quotes them.
_GRID_S = 1e-4
_COLUMNS = ["ipu", "track", "phase", "name", "step", "start_ps", "end_ps"]


def window_s(records: pd.DataFrame, steps: int) -> tuple[float, float]:
    """The first execution's span on the IPUs (s), widened to the 0.1 ms grid (see above)."""
    ipu = records[(records.ipu >= 0) & (records.step >= 0) & (records.step < steps)]
    start = (math.floor(ipu.start_s.min() / _GRID_S) - 1) * _GRID_S
    end = math.ceil(ipu.end_s.max() / _GRID_S) * _GRID_S
    return round(start, 4), round(end, 4)


def run() -> Run:
    """Run the demo as ``ipusim demo`` does; keep the records of its first execution."""
    from ipusim.demo import run_demo

    with tempfile.TemporaryDirectory() as tmp:
        result = run_demo(verbose=0, output=Path(tmp) / "ipusim_demo", print_fn=lambda _: None)
    report = result["report"]
    records = report.trace.to_dataframe()
    start, end = window_s(records, report.extra["steps_per_execution"])
    shown = records[(records.end_s > start) & (records.start_s < end)]
    table = shown[_COLUMNS].sort_values(["ipu", "track", "start_ps", "name"], kind="stable")
    table = table.reset_index(drop=True).assign(window_start_s=start, window_end_s=end)
    return {FIGURE: table}, report


def draw(tables: Mapping[str, pd.DataFrame], report: Any, folder: Path) -> None:
    """The timeline of the window, drawn from the run's report."""
    from analysis import timeline

    table = tables[FIGURE]
    start, end = float(table.window_start_s.iloc[0]), float(table.window_end_s.iloc[0])
    timeline(report, start_s=start, end_s=end, path=folder / f"{FIGURE}.png")
