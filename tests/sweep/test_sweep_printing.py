"""What a sweep prints: a line per configuration, a table best first with the failures and
their one-line reasons, a bad study value as an error before anything runs; the BERT POD16
study in under 40 lines."""

from __future__ import annotations

import contextlib
import io

import pandas as pd
import pytest

from ipusim.sweep.cli import main
from ipusim.sweep.printing import progress_line, summary_table


def _record(config, row=None, oom=False, oom_reason="", error=""):
    return {
        "config": config,
        "row": row or {},
        "oom": oom,
        "oom_reason": oom_reason,
        "error": error,
    }


def test_progress_line_names_the_configuration_and_its_outcome():
    ok = _record({"schedule": "grouped", "accumulation": 16}, {"throughput_samples_per_s": 1234.56})
    assert progress_line(3, 12, ok) == "[3/12] schedule=grouped accumulation=16: 1,234.6 samples/s"
    oom = _record({"a": 1}, oom=True, oom_reason="Out of memory on IPU 3\nlargest items: ...")
    assert progress_line(1, 2, oom) == "[1/2] a=1: out of memory: Out of memory on IPU 3"
    failed = _record({"a": 2}, error="ZeroDivisionError: division by zero")
    assert progress_line(2, 2, failed) == "[2/2] a=2: failed: ZeroDivisionError: division by zero"


def test_summary_table_ranks_best_first_and_lists_failures_last_with_reasons():
    frame = pd.DataFrame(
        {
            "a": [0, 1, 2, 3],
            "throughput_samples_per_s": [10.0, None, 30.0, None],
            "oom": [False, True, False, False],
            "oom_reason": ["", "Out of memory on IPU 0\nmore detail", "", ""],
            "error": ["", "", "", "ValueError: bad\nTraceback ..."],
        }
    )
    lines = summary_table(frame, ["a"]).splitlines()
    assert len(lines) == 5  # header and one line per configuration
    assert [line.split()[0] for line in lines[1:]] == ["2", "0", "1", "3"]
    assert lines[1].split()[1] == "30.0" and lines[2].split()[1] == "10.0"
    assert lines[3].endswith("out of memory: Out of memory on IPU 0")
    assert lines[4].endswith("failed: ValueError: bad")


def test_the_sweep_command_prints_a_line_per_configuration_and_the_table(tmp_path, capsys):
    (tmp_path / "study.toml").write_text(
        'workload = "_workloads:toy_faulty"\n[grid]\na = [0, 1, 2, 3]\nb = [0]\n'
    )
    args = [str(tmp_path / "study.toml"), "-o", str(tmp_path / "out"), "-j", "1"]
    assert main([*args, "--format", "csv"]) == 1
    captured = capsys.readouterr()
    progress = [line for line in captured.err.splitlines() if line.startswith("[")]
    assert progress == [
        "[1/4] a=0 b=0: done",
        "[2/4] a=1 b=0: out of memory: Out of memory on IPU 0: toy a=1",
        "[3/4] a=2 b=0: failed: ZeroDivisionError: division by zero",
        "[4/4] a=3 b=0: done",
    ]
    table = captured.out.splitlines()
    # toy's throughput is 10 a + b: a=3 first, then a=0; then the two that did not run.
    assert [line.split()[0] for line in table[1:5]] == ["3", "0", "1", "2"]
    assert "failed: ZeroDivisionError: division by zero" in table[4]


BERT_STUDY = 'workload = "analysis.studies.bert_pod16:run_config"\n'


def test_a_bad_study_value_is_an_error_before_anything_runs(tmp_path, capsys):
    (tmp_path / "study.toml").write_text(
        BERT_STUDY + '[grid]\nschedule = ["grouped", "fastest"]\naccumulation = [8]\n'
    )
    out = tmp_path / "out"
    assert main([str(tmp_path / "study.toml"), "-o", str(out), "-j", "1"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'fastest'" in err and "usage:" not in err
    assert not list(out.glob("configs/*.json"))


def test_bert_pod16_study_prints_under_40_lines(tmp_path):
    """Twelve configurations: a line each, the table, the files (was 424 lines)."""
    from analysis.studies import bert_pod16

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        df = bert_pod16.main(["-j", "1", "-o", str(tmp_path / "s")])
    lines = (stdout.getvalue() + stderr.getvalue()).splitlines()
    assert len(lines) < 40, "\n".join(lines)
    assert sum(line.startswith("[") for line in lines) == len(df) == 12
    best = df.loc[df.throughput_samples_per_s.idxmax()]
    header = next(
        i for i, line in enumerate(lines) if line.split()[:2] == ["schedule", "accumulation"]
    )
    assert lines[header + 1].split()[:2] == [best.schedule, str(best.accumulation)]


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_bad_accumulation_in_the_bert_study_names_the_flag(tmp_path, capsys, value):
    (tmp_path / "study.toml").write_text(
        BERT_STUDY + f'[grid]\nschedule = ["grouped"]\naccumulation = [8, {value}]\n'
    )
    assert main([str(tmp_path / "study.toml"), "-o", str(tmp_path / "o"), "-j", "1"]) == 2
    err = capsys.readouterr().err
    assert f"--accumulation must be a positive integer; got {value}" in err
