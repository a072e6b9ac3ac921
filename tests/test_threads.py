"""The thread-pool policy: the BLAS pools of one process never ask for more threads than the
process has cores, and a user's own settings win."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ipusim._threads import BLAS_POOLS, POOL_SIZE_VARIABLES, pool_threads


@pytest.mark.parametrize(("cores", "each"), [(1, 1), (2, 1), (3, 1), (8, 4), (64, 32)])
def test_pools_share_the_cores(cores, each):
    assert pool_threads(cores) == each
    assert pool_threads(cores) * BLAS_POOLS <= max(cores, BLAS_POOLS)


def _child_env(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in POOL_SIZE_VARIABLES}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_import_sets_the_pool_sizes_before_numpy_loads():
    code = f"import os, ipusim, numpy; print([os.environ[k] for k in {POOL_SIZE_VARIABLES!r}])"
    cores = len(os.sched_getaffinity(0))
    assert _child_env(code) == str([str(max(1, cores // 2))] * len(POOL_SIZE_VARIABLES))


def test_the_users_setting_wins():
    code = "import os, ipusim; print(os.environ['OPENBLAS_NUM_THREADS'])"
    assert _child_env(code, OPENBLAS_NUM_THREADS="3") == "3"
