"""Thread-pool policy for BLAS and OpenMP, set once before numpy or numba load their runtimes.

Kernels call BLAS through Numba (SciPy's OpenBLAS) while NumPy carries its own OpenBLAS: two
pools, each sized to every core by default, so together they ask for twice the cores there are.
When two spinning pools alternate, each call waits for the other's threads to yield (measured at
x40 slower on these machines), and on a 2-core machine ``ipusim demo`` took 3.6 s at the median
and 21-55 s at worst with the default pools, against 2.1 s with one BLAS thread (issue 28, M).
So each pool gets half the usable cores (at least one), waits passively and lets its threads
sleep soon: the two never ask for more threads than there are cores. Only defaults are set: a
user's own environment settings win. ipusim's kernels are not Numba-parallel, so Numba's own
pool never starts.
"""

from __future__ import annotations

import os

#: BLAS libraries that may hold a thread pool in one ipusim process: NumPy's and SciPy's (the one
#: Numba kernels call).
BLAS_POOLS = 2

_WAITING = {
    "OMP_WAIT_POLICY": "PASSIVE",
    "OPENBLAS_THREAD_TIMEOUT": "4",
    "KMP_BLOCKTIME": "0",
}
#: The variables that size the BLAS / OpenMP pools (OpenBLAS, OpenMP builds, MKL).
POOL_SIZE_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the CPU count)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return max(os.cpu_count() or 1, 1)


def pool_threads(cores: int | None = None) -> int:
    """Threads each BLAS pool gets: the usable cores shared by :data:`BLAS_POOLS` pools."""
    return max(1, (usable_cores() if cores is None else cores) // BLAS_POOLS)


def apply_thread_policy() -> None:
    """Set the thread-pool environment defaults (no effect on variables the user already set)."""
    for key, value in _WAITING.items():
        os.environ.setdefault(key, value)
    threads = str(pool_threads())
    for key in POOL_SIZE_VARIABLES:
        os.environ.setdefault(key, threads)
