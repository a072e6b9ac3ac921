"""``ipusim sweep -j N``: each worker's thread pools get its share of the cores (cores // N
threads: half to each of the two BLAS pools, all to Numba's), and a user's own setting wins."""

from __future__ import annotations

import pytest

from ipusim import _threads
from ipusim.sweep import run_sweep, shutdown_pool

VARIABLES = (*_threads.POOL_SIZE_VARIABLES, _threads.NUMBA_VARIABLE)


@pytest.fixture
def eight_cores(monkeypatch):
    """A process on 8 cores whose pool sizes were all set by ipusim's policy."""
    monkeypatch.setattr(_threads, "usable_cores", lambda: 8)
    monkeypatch.setattr(_threads, "SET_BY_IPUSIM", set(_threads.POOL_SIZE_VARIABLES))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name in _threads.POOL_SIZE_VARIABLES:
        monkeypatch.setenv(name, "4")  # what apply_thread_policy sets on 8 cores: 8 // 2 pools


@pytest.mark.parametrize(
    ("jobs", "blas", "numba"),
    [(1, "4", "8"), (2, "2", "4"), (4, "1", "2"), (8, "1", "1"), (16, "1", "1")],
)
def test_each_worker_gets_its_share_of_the_cores(eight_cores, jobs, blas, numba) -> None:
    env = _threads.worker_environment({"PATH": "/bin"}, jobs)
    assert env["PATH"] == "/bin"
    assert {name: env[name] for name in VARIABLES} == {
        **dict.fromkeys(_threads.POOL_SIZE_VARIABLES, blas),
        _threads.NUMBA_VARIABLE: numba,
    }


def test_a_setting_of_the_user_is_kept(eight_cores, monkeypatch) -> None:
    # The user set OPENBLAS_NUM_THREADS before ipusim was imported: the policy left it alone.
    monkeypatch.setattr(_threads, "SET_BY_IPUSIM", {"OMP_NUM_THREADS", "MKL_NUM_THREADS"})
    user = {"OPENBLAS_NUM_THREADS": "3", "NUMBA_NUM_THREADS": "5", "OMP_NUM_THREADS": "4"}
    env = _threads.worker_environment(user, 4)
    assert env["OPENBLAS_NUM_THREADS"] == "3" and env["NUMBA_NUM_THREADS"] == "5"
    assert env["OMP_NUM_THREADS"] == "1"  # not the user's: 8 cores // 4 workers // 2 pools


def test_sweep_workers_run_with_the_rule(eight_cores, monkeypatch, tmp_path) -> None:
    shutdown_pool()  # workers started for this test
    try:
        frame = run_sweep(
            {"workload": "_thread_workload:report_threads", "grid": {"a": [0, 1, 2, 3]}},
            tmp_path / "out",
            jobs=2,
            progress=False,
        )
    finally:
        shutdown_pool()
    assert (frame["error"] == "").all()
    # 8 cores // 2 workers = 4 threads each: 2 per BLAS pool, 4 for Numba.
    assert set(frame["openblas"].astype(str)) == {"2"}
    assert set(frame["omp"].astype(str)) == {"2"}
    assert set(frame["numba"].astype(str)) == {"4"}
    assert set(frame["blas_runtime"].astype(int)) == {2}  # the pool itself, not only its variable
