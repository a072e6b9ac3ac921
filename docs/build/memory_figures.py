"""The liveness and tile figures of the README and docs: BERT-Large on a POD16 (the README's
configuration) and ResNet-50 on one IPU, each at its fullest IPU.

The liveness table has one row per program step (bytes of each category live there); the tile
table one row per tile (bytes at the fullest tile's worst step).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from docs.build.artefacts import Run

#: The runs: figure prefix -> (workload module, its arguments).
RUNS = {
    "bert_large_pod16": (
        "bert",
        "--size large --system POD16 --stages 4 --replicas 4 --micro-batch 4 "
        "--accumulation 16 --steps 112 --recompute --timing-only",
    ),
    "resnet50_1ipu": (
        "resnet50",
        "--system IPU --micro-batch 12 --accumulation 1 --memory-proportion 0.15 --steps 4 "
        "--timing-only",
    ),
}


def run_workload(prefix: str) -> Any:
    """The report of ``RUNS[prefix]`` (the IPU configuration reset afterwards)."""
    import importlib

    from ipusim.config import reset_ipu_configuration

    module, args = RUNS[prefix]
    report = importlib.import_module(f"workloads.{module}").main(args.split())
    reset_ipu_configuration()
    return report


def fullest_plan(report: Any) -> Any:
    """The memory plan of the IPU whose busiest tile holds the most."""
    return max(report.memory_plans, key=lambda p: max(p.tile_bytes))


def tables_of(prefix: str, report: Any) -> dict[str, pd.DataFrame]:
    """The liveness and tile tables of the fullest IPU of ``report``."""
    plan = fullest_plan(report)
    live = plan.liveness
    liveness = pd.DataFrame({"ipu": plan.ipu, "step": range(len(live.step_names))})
    liveness["op"] = list(live.step_names)
    for category, series in live.by_category.items():
        liveness[category] = series
    tiles = pd.DataFrame(
        {"ipu": plan.ipu, "tile": range(len(plan.tile_bytes)), "bytes": list(plan.tile_bytes)}
    )
    return {f"{prefix}_liveness": liveness, f"{prefix}_tiles": tiles}


def runner(prefix: str):
    """The ``run`` of one prefix's artefact."""

    def run() -> Run:
        report = run_workload(prefix)
        return tables_of(prefix, report), report

    return run


def drawer(prefix: str):
    """The ``draw`` of one prefix's artefact (its liveness and tile figures)."""

    def draw(tables: Mapping[str, pd.DataFrame], report: Any, folder: Path) -> None:
        from analysis import liveness_plot, tile_heatmap

        ipu = int(tables[f"{prefix}_tiles"].ipu.iloc[0])
        liveness_plot(report, ipu, folder / f"{prefix}_liveness.png")
        tile_heatmap(report, ipu, folder / f"{prefix}_tiles.png")

    return draw
