"""``ipusim sweep``: the command's table, exit codes and messages."""

from __future__ import annotations

import argparse

import pandas as pd

from ipusim.sweep.cli import add_sweep_arguments, main, main_sweep

STUDY = 'workload = "_workloads:toy"\n[grid]\na = [0, 1, 2]\nb = [0, 1]\n'


def test_sweep_writes_the_table_and_one_file_per_config(tmp_path, capsys) -> None:
    (tmp_path / "study.toml").write_text(STUDY)
    out = tmp_path / "out"
    args = [str(tmp_path / "study.toml"), "-o", str(out), "-j", "1", "--format", "csv"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert str(out / "results.csv") in captured.out
    assert [line for line in captured.err.splitlines() if line.startswith("[")] == [
        f"[{i}/6] a={a} b={b}: done"
        for i, (a, b) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)], start=1)
    ]
    frame = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert frame["throughput"].tolist() == [0, 1, 10, 11, 20, 21]
    assert len(list((out / "configs").glob("*.json"))) == 6
    # Again: everything is read back, nothing runs.
    assert main([*args, "--no-progress"]) == 0
    assert "6 configurations" in capsys.readouterr().out


def test_default_output_folder_is_named_after_the_study(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "batch.toml").write_text(STUDY)
    monkeypatch.chdir(tmp_path)
    assert main(["batch.toml", "-j", "1", "--format", "csv", "--no-progress"]) == 0
    assert (tmp_path / "batch_sweep" / "results.csv").is_file()


def test_invalid_study_exits_2_with_the_reason(tmp_path, capsys) -> None:
    (tmp_path / "study.toml").write_text('workload = "_workloads:toy"\n[grid]\na = 1\n')
    assert main([str(tmp_path / "study.toml"), "-o", str(tmp_path / "out")]) == 2
    assert "[grid] a must be a non-empty list" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.toml")]) == 2
    assert "no study file" in capsys.readouterr().err


def test_failed_configurations_exit_1(tmp_path, capsys) -> None:
    (tmp_path / "study.toml").write_text(
        'workload = "_workloads:toy_faulty"\n[grid]\na = [0, 2]\nb = [0]\n'
    )
    out = tmp_path / "out"
    assert main([str(tmp_path / "study.toml"), "-o", str(out), "-j", "1", "--format", "csv"]) == 1
    assert "1 failed" in capsys.readouterr().err


def test_arguments_hook_into_a_parent_parser() -> None:
    parser = argparse.ArgumentParser(prog="ipusim")
    sub = parser.add_subparsers(dest="command", required=True)
    add_sweep_arguments(sub.add_parser("sweep"))
    args = parser.parse_args(
        ["sweep", "s.toml", "-j", "3", "--scheduler", "tcp://127.0.0.1:8786", "--no-resume"]
    )
    assert args.func is main_sweep
    assert (args.study, args.jobs, args.scheduler, args.resume, args.output) == (
        "s.toml",
        3,
        "tcp://127.0.0.1:8786",
        False,
        None,
    )
