"""The local pool: a dying worker fails its own row only; workers are reused; cheap
configurations are chunked; ``jobs=1`` runs in this process."""

from __future__ import annotations

import faulthandler
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _workloads import CRASHES, toy_figures

from ipusim.sweep import Study, config_key, local_pool, result_path, run_sweep, shutdown_pool
from ipusim.sweep.local_pool import CHUNK_TARGET_S, CHUNKS_PER_WORKER, chunk_size

TOY = "_workloads:toy"
HERE = Path(__file__).resolve().parent


def _pids(markers) -> dict[str, int]:
    """Configuration label (a<a>_b<b>) -> the process that ran it, from the marker files."""
    out = {}
    for path in markers.iterdir():
        label, pid, _ = path.name.split(".")
        out[label] = int(pid)
    return out


def _check_crash_table(frame: pd.DataFrame) -> None:
    """The table of the crashing study: rows a = 1, 2, 3 failed, naming themselves; others ran."""
    assert len(frame) == 10
    for _, row in frame.iterrows():
        a, b = int(row["a"]), int(row["b"])
        config_text = json.dumps({"a": a, "b": b}, separators=(",", ":"))
        if a in CRASHES:
            assert row["error"].startswith("WorkerDied: the worker process "), row["error"]
            assert f"while running configuration {config_text}" in row["error"]
            assert pd.isna(row["throughput"]) or row["throughput"] == ""
        else:
            assert row["error"] == ""
            assert float(row["throughput"]) == toy_figures(a, b)["throughput"]
    errors = dict(zip(frame["a"].astype(int), frame["error"]))
    assert "exited with status 3" in errors[1]
    assert "killed by SIGSEGV" in errors[2]
    assert "killed by SIGKILL" in errors[3] and "out-of-memory killer" in errors[3]


def test_a_worker_that_dies_fails_its_own_row_and_the_rest_complete(tmp_path, markers) -> None:
    study = Study.from_dict(
        {"workload": "_workloads:crashing", "grid": {"a": [0, 1, 2, 3, 4], "b": [0, 1]}}
    )
    # pytest's fault handler, inherited by forked workers, would print a stack per crash.
    handler_was_on = faulthandler.is_enabled()
    faulthandler.disable()
    try:
        shutdown_pool()  # fresh workers, started without the handler
        frame = run_sweep(study, tmp_path / "out", jobs=2, progress=False)
    finally:
        if handler_was_on:
            faulthandler.enable()
    _check_crash_table(frame)
    # Every configuration that returned ran exactly once; the failed ones are stored as errors.
    assert sorted(_pids(markers)) == sorted(f"a{a}_b{b}" for a in (0, 4) for b in (0, 1))
    record = json.loads(result_path(tmp_path / "out", config_key({"a": 2, "b": 1})).read_text())
    assert record["error"].startswith("WorkerDied")
    # The pool replaced the dead workers and is healthy for the next sweep.
    again = run_sweep(
        Study.from_dict({"workload": TOY, "grid": {"a": [5, 6], "b": [0, 1]}}),
        tmp_path / "again",
        jobs=2,
        progress=False,
    )
    assert (again["error"] == "").all() and again["throughput"].tolist() == [50, 51, 60, 61]


def _sweep_command(tmp_path, study_text: str, method: str) -> subprocess.CompletedProcess:
    """``ipusim sweep -j 2`` in a fresh process with the given start method."""
    study = tmp_path / "study.toml"
    study.write_text(study_text)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env[local_pool.START_METHOD_VARIABLE] = method
    command = [sys.executable, "-m", "ipusim.sweep.cli", str(study), "-o", str(tmp_path / "out")]
    command += ["-j", "2", "--format", "csv", "--no-progress"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_dying_workers_with_each_start_method(tmp_path, method) -> None:
    done = _sweep_command(
        tmp_path,
        'workload = "_workloads:crashing"\n[grid]\na = [0, 1, 2, 3, 4]\nb = [0, 1]\n',
        method,
    )
    assert done.returncode == 1, done.stderr  # some configurations failed
    _check_crash_table(pd.read_csv(tmp_path / "out" / "results.csv", keep_default_na=False))


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_the_warm_up_runs_once_in_the_sweep_process_before_forking(tmp_path, method) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    script = (
        "import json, os, sys\n"
        "from ipusim.sweep import run_sweep, shutdown_pool\n"
        "def main():\n"
        "    rows = []\n"
        "    for name in ('first', 'second'):\n"
        "        frame = run_sweep({'workload': '_workloads:toy_warm', 'grid': {'a': [0, 1, 2],\n"
        "                           'b': [0, 1]}}, sys.argv[1] + '/' + name, jobs=2,\n"
        "                           progress=False)\n"
        "        rows.append([None if v != v else v for v in frame['warmed_by'].tolist()])\n"
        "        shutdown_pool()  # the second sweep forks new workers\n"
        "    print(json.dumps({'pid': os.getpid(), 'rows': rows}))\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env[local_pool.START_METHOD_VARIABLE] = method
    env["SWEEP_TEST_MARKERS"] = str(markers)
    (tmp_path / "script.py").write_text(script)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "script.py"), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    warm_markers = [p.name for p in markers.iterdir() if p.name.startswith("warm.")]
    if method == "fork":
        # Called once, in the sweep process; every worker inherited it.
        assert warm_markers == [f"warm.{result['pid']}." + warm_markers[0].split(".")[2]]
        assert result["rows"] == [[result["pid"]] * 6] * 2
    else:
        # Workers that are not forked from the sweep process inherit nothing: no warm-up.
        assert warm_markers == [] and result["rows"] == [[None] * 6] * 2


def test_the_pool_is_reused_and_each_sweep_sends_its_environment(tmp_path, monkeypatch) -> None:
    shutdown_pool()
    first_markers, second_markers = tmp_path / "m1", tmp_path / "m2"
    first_markers.mkdir()
    second_markers.mkdir()
    grid = {"workload": TOY, "grid": {"a": list(range(4)), "b": list(range(4))}}
    monkeypatch.setenv("SWEEP_TEST_MARKERS", str(first_markers))
    run_sweep(grid, tmp_path / "first", jobs=2, progress=False)
    pool = local_pool.get_pool(2)
    first_pids = set(_pids(first_markers).values())
    assert first_pids <= set(pool.worker_pids()) and os.getpid() not in first_pids
    # The second sweep runs on the same processes, which now write where the new environment says.
    monkeypatch.setenv("SWEEP_TEST_MARKERS", str(second_markers))
    frame = run_sweep(grid, tmp_path / "second", jobs=2, progress=False)
    assert local_pool.get_pool(2) is pool
    assert pool.stats.workers_started == 0 and pool.stats.workers_reused == 2
    assert set(_pids(second_markers).values()) <= set(pool.worker_pids())
    assert len(_pids(second_markers)) == 16
    assert frame["throughput"].tolist() == [a * 10 + b for a in range(4) for b in range(4)]
    shutdown_pool()
    assert pool.closed and pool.worker_pids() == []


def test_cheap_configurations_go_out_in_chunks(tmp_path, markers) -> None:
    configs = [{"a": a, "b": b} for a in range(16) for b in range(4)]
    frame = run_sweep(configs, tmp_path / "out", jobs=2, progress=False, workload=TOY)
    pool = local_pool.get_pool(2)
    assert pool.stats.tasks == 64
    assert 2 <= pool.stats.chunks < 64  # the toy takes microseconds: many per chunk
    assert frame["throughput"].tolist() == [c["a"] * 10 + c["b"] for c in configs]
    assert len(_pids(markers)) == 64


def test_chunk_size_follows_the_measured_cost_and_keeps_the_workers_balanced() -> None:
    assert chunk_size([], remaining=100, workers=2) == 1  # nothing measured yet
    cheap = [0.01] * 8
    assert chunk_size(cheap, remaining=1000, workers=2) == int(CHUNK_TARGET_S / 0.01)
    # Near the end a chunk holds at most 1/CHUNKS_PER_WORKER of a worker's share.
    assert chunk_size(cheap, remaining=12, workers=2) == -(-12 // (CHUNKS_PER_WORKER * 2))
    assert chunk_size([5.0, 5.0, 5.0], remaining=1000, workers=2) == 1  # slow: one at a time
    # The median: one slow first task (a worker's warm-up) does not set the pace.
    assert chunk_size([2.0, 0.01, 0.01], remaining=1000, workers=2) == int(CHUNK_TARGET_S / 0.01)


def test_jobs_1_runs_in_this_process_without_a_pool(tmp_path, markers) -> None:
    shutdown_pool()
    frame = run_sweep(
        {"workload": TOY, "grid": {"a": [0, 1], "b": [0, 1]}},
        tmp_path / "out",
        jobs=1,
        progress=False,
    )
    assert set(_pids(markers).values()) == {os.getpid()}
    assert local_pool._POOL is None
    assert frame["throughput"].tolist() == [0, 1, 10, 11]


def test_a_workload_the_workers_cannot_import_is_refused_before_any_row(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(local_pool.START_METHOD_VARIABLE, "forkserver")
    shutdown_pool()
    # Importable here (tests/sweep is on this process's path), but the workers get this
    # process's import path with the folder removed, so loading the workload fails there.
    import sys

    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.endswith("sweep")])
    from ipusim.sweep import SweepError

    with pytest.raises(SweepError, match="cannot be loaded in a worker process"):
        run_sweep(
            {"workload": TOY, "grid": {"a": [0, 1], "b": [0]}},
            tmp_path / "out",
            jobs=2,
            progress=False,
        )
    assert list((tmp_path / "out" / "configs").iterdir()) == []
