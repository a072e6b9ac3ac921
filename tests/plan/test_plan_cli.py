"""``ipusim plan`` on the command line, as docs/planning.md runs it: the files it writes, and
``best.toml`` re-run by ``ipusim validate --folder``."""

from __future__ import annotations

import csv
import tomllib

import pytest

from ipusim.cli import main
from ipusim.plan.cli import parse_workload_args


def test_parse_workload_args():
    got = parse_workload_args("--size base --sequence 32 --heads-stage")
    assert got == {"size": "base", "sequence": 32, "heads-stage": True}


def test_plan_command_writes_a_row_validate_reruns(tmp_path, capsys):
    folder = tmp_path / "plan"
    code = main(
        [
            "plan",
            "--workload",
            "bert",
            "--workload-args",
            "--size base --sequence 32 --masked 4 --vocab 1000",
            "--system",
            "M2000",
            "--global-batch",
            "64",
            "--candidates",
            "3",
            "-o",
            str(folder),
        ]
    )
    assert code == 0
    with open(folder / "plans.csv") as f:
        table = list(csv.DictReader(f))
    assert 1 <= len(table) <= 3
    best = tomllib.loads((folder / "best.toml").read_text())
    args = best["args"]
    assert args["micro-batch"] * args["accumulation"] * args["replicas"] == 64
    assert args["size"] == "base" and args["sequence"] == 32
    assert "config = ipu.config.IPUConfig()" in (folder / "best.py").read_text()
    capsys.readouterr()
    assert main(["validate", "--folder", str(folder), "--no-crossval"]) == 0
    assert "PLAN" in capsys.readouterr().out
    assert (folder / "plan.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    _sweep_reruns_the_fitting_plans(folder, table)


def _sweep_reruns_the_fitting_plans(folder, table):
    """``sweep/plans.toml`` is a study: ``ipusim sweep`` re-simulates every fitting plan, best first,
    and gets the throughput the planner's table reports."""
    out = folder.parent / "sweep_out"
    sweep = [
        "sweep",
        str(folder / "sweep" / "plans.toml"),
        "-o",
        str(out),
        "-j",
        "1",
        "--format",
        "csv",
    ]
    assert main([*sweep, "--no-progress"]) == 0
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    fitting = [r for r in table if r["fits"] == "True"]
    assert len(rows) == len(fitting) >= 1
    for again, planned in zip(rows, fitting, strict=True):
        assert float(again["throughput"]) == pytest.approx(float(planned["throughput"]), rel=1e-12)
        assert again["fits"] == "True"


def test_ipusim_plan_is_callable_and_deterministic():
    import ipusim

    model = {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}
    first = ipusim.plan("bert", "M2000", 64, model, candidates=2, seed=3, progress=False)
    again = ipusim.plan("bert", "M2000", 64, model, candidates=2, seed=3, progress=False)
    assert list(first.table["summary"]) == list(again.table["summary"])
    assert list(first.table["throughput"]) == list(again.table["throughput"])
