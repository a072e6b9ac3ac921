"""A program calling ``strategy.run`` 10,000 times (issue 23's case, bench/bench_runner_reports.py)
leaves one report folder with a row per call, under 5 MB."""

from __future__ import annotations

import pandas as pd

from bench.bench_runner_reports import PROGRAM
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

CALLS = 10_000
LIMIT_BYTES = 5_000_000  # issue 23: the 10,000-call program's report folder under 5 MB


def test_ten_thousand_calls_make_one_small_report(tmp_path):
    script = tmp_path / "many_calls.py"
    script.write_text(PROGRAM)
    reset_ipu_configuration()
    try:
        result = run_script(script, [str(CALLS)], output=tmp_path / "reports", quiet=True)
    finally:
        reset_ipu_configuration()
    assert result.exit_code == 0
    assert len(result.reports) == 1
    folder = result.reports[0]
    calls = pd.read_csv(folder / "calls.csv")
    assert len(calls) == CALLS
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert 0 < size < LIMIT_BYTES
