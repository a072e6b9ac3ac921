"""Per-tile memory and liveness of BERT-Large on a POD16 (the README configuration) and ResNet-50
on one IPU: the spread of bytes over tiles (min / median / max) per IPU and the fullest tile's
contents at its worst program point. The same runs (``docs/build/memory_figures.py``) draw the
liveness and tile figures of docs/images (``python -m docs.build bert_large_pod16 resnet50_1ipu``).

Run: ``python bench/bench_memory_figures.py`` (timing-only, a few seconds; writes
bench/results/memory.json).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs.build.memory_figures import RUNS, run_workload  # noqa: E402
from ipusim._files import write_text_atomic  # noqa: E402


def _kib(value: float) -> float:
    return round(float(value) / 1024, 1)


def describe(report) -> dict:
    """Per IPU (replica 0): total MiB, per-tile min / median / max KiB; the fullest tile."""
    ipus = []
    for plan in report.memory_plans:
        tiles = np.asarray(plan.tile_bytes)
        ipus.append(
            {
                "ipu": plan.ipu,
                "total_mib": round(plan.total_bytes / 2**20, 1),
                "tile_min_kib": _kib(tiles.min()),
                "tile_median_kib": _kib(np.median(tiles)),
                "tile_max_kib": _kib(tiles.max()),
            }
        )
    fullest = max(report.memory_plans, key=lambda p: max(p.tile_bytes))
    live = fullest.liveness
    return {
        "ipus": ipus,
        "fullest": {
            "ipu": fullest.ipu,
            "tile": int(live.peak_tile),
            "program_point": live.step_names[live.tile_peak_step],
            "kib": _kib(max(fullest.tile_bytes)),
            "items": [
                {"name": name, "category": category, "kib": _kib(b)}
                for name, category, b in live.peak_tile_items[:8]
            ],
        },
    }


def main() -> None:
    results = {}
    for name in RUNS:
        with contextlib.redirect_stdout(io.StringIO()):
            report = run_workload(name)
        results[name] = describe(report)
        print(name, json.dumps(results[name], indent=1))
    write_text_atomic(ROOT / "bench" / "results" / "memory.json", json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
