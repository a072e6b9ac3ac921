"""The numbers the prose of README.md and docs/ quotes, each checked against the committed data
it comes from (the tables beside the figures, ``bench/results``).

A :class:`Claim` is a pattern of a doc with groups and a function giving, from the data, the text
each group must read. :func:`check` lists every claim whose text differs (or is not found), so a
number edited by hand, or data regenerated without updating the prose, fails the docs test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from docs.build.artefacts import ROOT, data_path

README = ROOT / "README.md"
VALIDATION_MD = ROOT / "docs" / "validation.md"
VALIDATION_JSON = ROOT / "bench" / "results" / "validation.json"
VALIDATION_TABLE = ROOT / "bench" / "results" / "validation.md"


@dataclass(frozen=True)
class Claim:
    """Text of ``doc`` matching ``pattern`` whose groups must equal ``expected()``."""

    doc: Path
    pattern: str
    expected: Callable[[], tuple[str, ...]]


@cache
def _table(figure: str) -> pd.DataFrame:
    return pd.read_csv(data_path(figure))


@cache
def _validation() -> dict:
    return json.loads(VALIDATION_JSON.read_text(encoding="utf-8"))


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _demo_window() -> tuple[str, ...]:
    table = _table("demo_timeline")
    return (f"{table.window_start_s.iloc[0]:g}", f"{table.window_end_s.iloc[0]:g}")


def _demo_steps() -> tuple[str, ...]:
    """Steps of the IPU's records in the window, and what bounds them (the longest IPU track)."""
    table = _table("demo_timeline")
    ipu = table[table.ipu == 0]
    busy = (ipu.end_ps - ipu.start_ps).groupby(ipu.track).sum()
    bound = {"host-io": "host link", "compute": "compute", "exchange": "exchange"}
    return (str(ipu.step.nunique()), bound.get(busy.idxmax(), busy.idxmax()))


def _validation_summary() -> tuple[str, ...]:
    v = _validation()
    errors = [abs(r["error"]) for r in v["rows"]]
    return (
        str(len(v["rows"])),
        _pct(v["median_abs_error"]),
        _pct(v["loo_median_abs_error"]),
        str(sum(e <= 0.15 for e in errors)),
    )


def _validation_md_summary() -> tuple[str, ...]:
    v = _validation()
    worst = max(v["rows"], key=lambda r: abs(r["error"]))
    n, median, loo, within = _validation_summary()
    return (median, _pct(v["max_abs_error"]), worst["id"], loo, n, within, n)


def _validation_table() -> tuple[str, ...]:
    lines = VALIDATION_TABLE.read_text(encoding="utf-8").splitlines()
    return ("\n".join(line for line in lines if line.startswith("|")),)


def _liveness_ipu() -> tuple[str, ...]:
    return (str(int(_table("bert_large_pod16_liveness").ipu.iloc[0])),)


CLAIMS: tuple[Claim, ...] = (
    Claim(
        README,
        r"ipusim plot ipusim_demo -o timeline\.png --start (\S+) --end (\S+)",
        _demo_window,
    ),
    Claim(README, r"One execution of (\d+) training steps.*?bound by the (host link)", _demo_steps),
    Claim(
        README,
        r"Over the (\d+) expressible rows the median error is\s+([\d.]+)% \(leave-one-out "
        r"([\d.]+)%\) and (\d+) rows are within 15%",
        _validation_summary,
    ),
    Claim(
        VALIDATION_MD,
        r"Median \|error\| ([\d.]+)%, worst ([\d.]+)% \((\S+)\); leave-one-out median ([\d.]+)% "
        r"over (\d+) rows;\s+(\d+) of (\d+) rows within 15%",
        _validation_md_summary,
    ),
    Claim(VALIDATION_MD, r"(\| row \| measured .*?)\n\n", _validation_table),
    Claim(README, r"the tiles at the worst point \(IPU (\d+) of the BERT-Large run", _liveness_ipu),
)


def check(claims: tuple[Claim, ...] = CLAIMS) -> list[str]:
    """What differs: one line per claim whose doc text is not what its data gives."""
    problems = []
    for claim in claims:
        text = claim.doc.read_text(encoding="utf-8")
        found = re.search(claim.pattern, text, flags=re.S)
        name = claim.doc.name
        if found is None:
            problems.append(f"{name}: no text matches {claim.pattern!r}")
            continue
        expected = claim.expected()
        got = tuple(re.sub(r"\s+", " ", g) for g in found.groups())
        want = tuple(re.sub(r"\s+", " ", e) for e in expected)
        if got != want:
            problems.append(f"{name}: {claim.pattern!r} reads {got}, the data gives {want}")
    return problems
