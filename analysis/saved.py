"""Memory plans rebuilt from a saved report's tables, so the tile and liveness figures draw from
a report folder as from a run: ``memory_items.csv`` gives each IPU's items, ``memory.csv`` its
budgets, ``tiles.csv`` the bytes of every tile at the worst step and ``liveness.csv`` the live
bytes of every program step by category. What the folder does not keep (the items live at the
peak) is left empty, so no figure shows a guess.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ipusim.lowering.liveness import LIVENESS_CATEGORIES, IPULiveness
from ipusim.lowering.program import IPUMemoryPlan, MemoryItem
from ipusim.trace import Report
from ipusim.trace.reports import category_column

__all__ = ["saved_plans"]


def _liveness(ipu: int, rows: pd.DataFrame, tiles: pd.DataFrame) -> IPULiveness | None:
    if rows.empty:
        return None
    rows = rows.sort_values("step")
    by_category = {
        c: rows[category_column(c)].to_numpy(np.int64)
        if category_column(c) in rows
        else np.zeros(len(rows), np.int64)
        for c in LIVENESS_CATEGORIES
    }
    peak = rows.index.get_loc(rows.peak.astype(bool).idxmax()) if rows.peak.any() else -1
    tile_bytes = tiles.bytes.to_numpy(np.int64)
    return IPULiveness(
        ipu=ipu,
        step_names=tuple(rows.name.astype(str)),
        step_phases=tuple(rows.phase.astype(str)),
        step_stages=tuple(int(s) for s in rows.stage),
        by_category=by_category,
        peak_step=int(peak),
        peak_items=(),
        tile_bytes=tile_bytes,
        tile_peak_step=int(tiles.peak_step.iloc[0]) if len(tiles) else -1,
        peak_tile=int(np.argmax(tile_bytes)) if len(tile_bytes) else -1,
    )


def saved_plans(report: Report) -> list[IPUMemoryPlan]:
    """The memory plans of replica 0's IPUs rebuilt from a loaded report's tables (empty when
    the folder has no ``tiles.csv``: it was saved before reports kept the tile map)."""
    tiles = report.tiles
    if tiles.empty:
        return []
    memory = report.memory.set_index("ipu")
    items = report.memory_items
    liveness = report.liveness
    plans = []
    for ipu, ipu_tiles in tiles.groupby("ipu"):
        if ipu not in memory.index:
            continue
        mine = items[items.ipu == ipu]
        plans.append(
            IPUMemoryPlan(
                ipu=int(ipu),
                items=tuple(
                    MemoryItem(str(n), str(c), int(b))
                    for n, c, b in zip(mine.name, mine.category, mine.bytes)
                ),
                budget_bytes=int(memory.budget_bytes[ipu]),
                tile_bytes=tuple(int(b) for b in ipu_tiles.bytes),
                tile_budget_bytes=int(ipu_tiles.tile_budget_bytes.iloc[0]),
                liveness=_liveness(int(ipu), liveness[liveness.ipu == ipu], ipu_tiles),
            )
        )
    return plans
