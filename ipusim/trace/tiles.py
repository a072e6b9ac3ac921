"""The per-tile memory of each IPU as a table, so a saved report keeps what the tile figures
need: ``tiles.csv`` holds, per IPU, the bytes of every tile at the fullest tile's worst program
step (``IPUMemoryPlan.tile_bytes``), that step, and the tile budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from ipusim.lowering.program import IPUMemoryPlan

__all__ = ["TILE_COLUMNS", "tile_table"]

TILE_COLUMNS = ["ipu", "tile", "bytes", "peak_step", "tile_budget_bytes"]


def tile_table(plans: Sequence[IPUMemoryPlan]) -> pd.DataFrame:
    """One row per (IPU, tile) of the plans that have per-tile bytes (replica 0's IPUs)."""
    frames = []
    for plan in plans:
        if not plan.tile_bytes:
            continue
        live = plan.liveness
        step = int(live.tile_peak_step) if live is not None else -1
        frames.append(
            pd.DataFrame(
                {
                    "ipu": plan.ipu,
                    "tile": range(len(plan.tile_bytes)),
                    "bytes": list(plan.tile_bytes),
                    "peak_step": step,
                    "tile_budget_bytes": int(plan.tile_budget_bytes),
                }
            )
        )
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in TILE_COLUMNS})
    return pd.concat(frames, ignore_index=True).astype("int64")
