"""``ipusim sweep`` killed or signalled in a subprocess: no worker process outlives it.

The toy workload blocks at a known configuration and prints ``BLOCKED <pid>``; the test reads
that line (a bounded ``select``), finds every process descending from the sweep in /proc, signals
the sweep process alone (not its process group, so the workers must notice by themselves), and
waits for each of those processes to end through pidfds, with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _processes import (
    DEADLINE_S,
    descendants,
    is_running,
    read_line,
    wait_for_any_file,
    wait_gone,
)

from ipusim.sweep import Study, config_key, result_path
from ipusim.sweep.local_pool import START_METHOD_VARIABLE
from ipusim.sweep.outdir import stray_temporary_files

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and hasattr(os, "pidfd_open")),
    reason="needs Linux /proc and pidfds",
)

HERE = Path(__file__).resolve().parent
STUDY = 'workload = "_workloads:toy"\n[grid]\na = [0, 1, 2, 3, 4, 5, 6, 7]\nb = [0, 1, 2, 3]\n'
BLOCK_AT = 9


def _start(tmp_path: Path, method: str) -> tuple[subprocess.Popen, Path]:
    study, out = tmp_path / "study.toml", tmp_path / "out"
    study.write_text(STUDY)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env["SWEEP_TEST_BLOCK_AT"] = str(BLOCK_AT)
    env[START_METHOD_VARIABLE] = method
    env.pop("SWEEP_TEST_MARKERS", None)
    command = [sys.executable, "-m", "ipusim.sweep.cli", str(study), "-o", str(out), "-j", "2"]
    command += ["--format", "csv", "--no-progress"]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "stderr.log", "w"),  # noqa: SIM115 - closed with the process
        env=env,
        text=True,
    )
    return proc, out


def _blocked_workers(proc: subprocess.Popen, tmp_path: Path) -> set[int]:
    line = read_line(proc, "for the workload to block")
    assert line.startswith("BLOCKED "), (tmp_path / "stderr.log").read_text()
    blocked = int(line.split()[1])
    family = descendants(proc.pid)
    assert blocked in family, (blocked, family)
    return family


def _finish(proc: subprocess.Popen, family: set[int]) -> None:
    try:
        proc.wait(DEADLINE_S)
    finally:
        left = wait_gone(family)
        for pid in left:  # leave nothing behind, then fail
            os.kill(pid, signal.SIGKILL)
        proc.stdout.close()
    assert not left, f"processes {sorted(left)} outlived the sweep"


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_kill_9_of_the_sweep_leaves_no_worker_running(tmp_path, method) -> None:
    proc, _ = _start(tmp_path, method)
    try:
        family = _blocked_workers(proc, tmp_path)
        if method == "forkserver":
            assert len(family) >= 3  # the fork server, the resource tracker, the workers
        os.kill(proc.pid, signal.SIGKILL)
    except BaseException:
        proc.kill()
        raise
    _finish(proc, family)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize(
    ("signum", "status", "words"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted")],
)
def test_sigterm_and_sigint_stop_the_workers_and_keep_the_results(
    tmp_path, signum, status, words
) -> None:
    proc, out = _start(tmp_path, "fork")
    study = Study.from_toml(tmp_path / "study.toml")
    try:
        family = _blocked_workers(proc, tmp_path)
        # A worker reaches the blocking configuration while the sweep process may not yet have
        # written what came back before it (on a loaded machine, nothing at all): wait for one
        # stored result, so the signal finds finished work to keep.
        results = [result_path(out, config_key(c)) for c in study.configs]
        wait_for_any_file(results, "for the sweep to store a finished configuration")
        os.kill(proc.pid, signum)  # the sweep process alone
    except BaseException:
        proc.kill()
        raise
    _finish(proc, family)
    log = (tmp_path / "stderr.log").read_text()
    assert proc.returncode == status, log
    assert words in log and "run the same command again" in log
    assert "Traceback" not in log
    # Finished configurations are stored; the blocked one is not; nothing half-written is left.
    blocked = {"a": BLOCK_AT // 4, "b": BLOCK_AT % 4}
    assert not result_path(out, config_key(blocked)).exists()
    stored = [c for c in study.configs if result_path(out, config_key(c)).is_file()]
    assert stored and len(stored) < 32
    assert stray_temporary_files(out) == []
    assert not (out / "results.csv").exists()


def test_a_process_the_program_forks_itself_does_not_keep_workers_alive(tmp_path) -> None:
    # After a first sweep (its workers stay, idle) the program forks a child of its own, which
    # inherits the program's descriptors, then runs a second sweep on the same workers, one of
    # which blocks. The program is killed: the busy workers must still see it die.
    script = tmp_path / "script.py"
    script.write_text(
        "import json, os, sys\n"
        "from ipusim.sweep import local_pool, run_sweep\n"
        "def main():\n"
        "    grid = {'workload': '_workloads:toy', 'grid': {'a': [0, 1, 2, 3], 'b': [0, 1]}}\n"
        "    run_sweep(grid, sys.argv[1] + '/first', jobs=2, progress=False)\n"
        "    workers = local_pool.get_pool(2).worker_pids()\n"
        "    read_end, write_end = os.pipe()\n"
        "    child = os.fork()\n"
        "    if child == 0:\n"
        "        os.read(read_end, 1)  # blocks until the test kills it\n"
        "        os._exit(0)\n"
        "    print(json.dumps({'workers': workers, 'child': child}), flush=True)\n"
        f"    os.environ['SWEEP_TEST_BLOCK_AT'] = '{BLOCK_AT}'\n"
        "    run_sweep(grid, sys.argv[1] + '/second', jobs=2, progress=False)\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env[START_METHOD_VARIABLE] = "fork"
    env.pop("SWEEP_TEST_MARKERS", None)
    env.pop("SWEEP_TEST_BLOCK_AT", None)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "stderr.log", "w"),  # noqa: SIM115 - closed with the process
        env=env,
        text=True,
    )
    child = None
    try:
        line = read_line(proc, "for the program to report its workers")
        assert line, (tmp_path / "stderr.log").read_text()
        reported = json.loads(line)
        child, workers = reported["child"], set(reported["workers"])
        blocked = read_line(proc, "for the second sweep to block")
        assert blocked.startswith("BLOCKED "), (tmp_path / "stderr.log").read_text()
        assert int(blocked.split()[1]) in workers and len(workers) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(DEADLINE_S)
        left = wait_gone(workers)
        assert not left, f"workers {sorted(left)} outlived the sweep process"
        assert is_running(child)  # the program's own child is not ours to stop
    finally:
        if child is not None and is_running(child):
            os.kill(child, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
