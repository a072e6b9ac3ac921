"""The planner's figures docs/planning.md quotes, checked against ``bench/results/plan.json``
(written by ``bench/bench_plan.py``): the table of the hand-tuned rows and the sentence saying
whether the planner matched every one of them. :func:`table` writes the table's lines from the
results file, so the page is regenerated, never typed."""

from __future__ import annotations

import json
import re
from functools import cache

from docs.build.artefacts import ROOT
from docs.build.claims import Claim

PLANNING_MD = ROOT / "docs" / "planning.md"
PLAN_JSON = ROOT / "bench" / "results" / "plan.json"

HEADER = (
    "| row | system, global batch | hand-tuned (samples/s) | planner's best (samples/s) | "
    "planner's plan | search (s) | of which profiles (s) | estimated / simulated | "
    "estimates per minute of search |\n"
    "|-----|-----|-----|-----|-----|-----|-----|-----|-----|"
)


@cache
def _rows() -> list[dict]:
    return list(json.loads(PLAN_JSON.read_text(encoding="utf-8"))["rows"])


def _cells(r: dict) -> tuple[str, ...]:
    per_minute = 60.0 * r["candidates_estimated"] / r["search_s"]
    return (
        f"{r['system']}, {r['global_batch']:,}",
        f"{r['hand_tuned_samples_per_s']:,.0f}",
        f"{r['planner_best_samples_per_s']:,.0f}",
        str(r["planner_best"]),
        f"{r['search_s']:.1f}",
        f"{r['profile_s']:.1f}",
        f"{r['candidates_estimated']} / {r['candidates_simulated']}",
        f"{per_minute:,.0f}",
    )


def table() -> str:
    """The table of the rows, as the page holds it."""
    lines = [
        f"| {r['row']} | " + " | ".join(_cell(c, i) for i, c in enumerate(_cells(r))) + " |"
        for r in _rows()
    ]
    return HEADER + "\n" + "\n".join(lines)


def _cell(text: str, column: int) -> str:
    return f"`{text}`" if column == 3 else text


def _matched() -> tuple[str, ...]:
    rows = _rows()
    fits = all(r["planner_best_samples_per_s"] >= r["hand_tuned_samples_per_s"] for r in rows)
    return ("every" if fits else "not every", str(len(rows)))


def _row_claim(row_id: str) -> Claim:
    def expected() -> tuple[str, ...]:
        (r,) = [r for r in _rows() if r["row"] == row_id]
        return _cells(r)

    cell = r" ([^|`]+?) "
    pattern = (
        rf"\| {re.escape(row_id)} \|{cell}\|{cell}\|{cell}\| `([^`]+)` \|{cell}\|{cell}\|"
        rf"{cell}\|{cell}\|"
    )
    return Claim(PLANNING_MD, pattern, expected)


def plan_claims() -> tuple[Claim, ...]:
    """One claim per row of the results file, and the summary sentence."""
    sentence = Claim(
        PLANNING_MD,
        r"the planner's best is\s+at\s+least\s+the\s+hand-tuned\s+configuration's\s+simulated\s+"
        r"throughput\s+in\s+(\S+)\s+one\s+of\s+the\s+(\d+)\s+rows",
        _matched,
    )
    return (*(_row_claim(r["row"]) for r in _rows()), sentence)
