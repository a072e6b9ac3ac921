"""The validation figure of docs/validation.md, from the committed full validation run
(``bench/results/validation.json``, written by ``python bench/bench_validation.py``).

Regenerating that run takes minutes, so the docs test compares the figure's table with the
committed JSON (cheap) and the slow test reruns the validation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from docs.build.artefacts import ROOT, Run

FIGURE = "validation"
RESULTS = ROOT / "bench" / "results" / "validation.json"


def table(result: Mapping[str, Any]) -> pd.DataFrame:
    """Row id, measured and predicted throughput of each validated row."""
    rows = result["rows"]
    return pd.DataFrame(
        {
            "row": [r["id"] for r in rows],
            "measured": [float(r["measured"]) for r in rows],
            "predicted": [float(r["predicted"]) for r in rows],
        }
    )


def run() -> Run:
    """The committed validation result (not rerun: see the module docstring)."""
    result = json.loads(RESULTS.read_text(encoding="utf-8"))
    return {FIGURE: table(result)}, result


def draw(tables: Mapping[str, pd.DataFrame], result: Any, folder: Path) -> None:
    from analysis import validation_scatter

    validation_scatter(result["rows"], folder / f"{FIGURE}.png")
