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

A sweep's ``N`` worker processes share the cores: each worker gets ``cores // N`` threads (at
least one), its two BLAS pools half of that each and Numba's pool all of it
(:func:`worker_environment`), and a worker forked with its pools already loaded resizes them
(:func:`resize_loaded_blas`).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

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
#: Sizes Numba's thread pool (read when Numba is imported).
NUMBA_VARIABLE = "NUMBA_NUM_THREADS"
#: The pool-size variables this process set itself (the others, if set, are the user's).
SET_BY_IPUSIM: set[str] = set()
#: What OpenBLAS builds call their thread-count setter (plain, 64-bit-integer, SciPy's wheels').
_OPENBLAS_SETTERS = (
    "openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads64_",
)


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
        if key not in os.environ:
            os.environ[key] = threads
            SET_BY_IPUSIM.add(key)


def worker_threads(jobs: int, cores: int | None = None) -> int:
    """Threads each of ``jobs`` sweep worker processes gets: its share of the usable cores (at
    least one)."""
    return max(1, (usable_cores() if cores is None else cores) // max(jobs, 1))


def worker_environment(environ: Mapping[str, str], jobs: int) -> dict[str, str]:
    """``environ`` for one of ``jobs`` sweep workers: each BLAS pool sized
    ``pool_threads(worker_threads(jobs))`` and Numba's ``worker_threads(jobs)``, except the
    variables the user set (those set by :func:`apply_thread_policy` are ipusim's)."""
    share = worker_threads(jobs)
    sizes = dict.fromkeys(POOL_SIZE_VARIABLES, str(pool_threads(share)))
    sizes[NUMBA_VARIABLE] = str(share)
    env = dict(environ)
    for key, value in sizes.items():
        if key not in environ or key in SET_BY_IPUSIM:
            env[key] = value
    return env


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries mapped into this process (Linux; else none)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def resize_loaded_blas(threads: int) -> int:
    """Set the thread count of every OpenBLAS already loaded into this process (a worker forked
    from a sweep that had loaded NumPy keeps the sweep's pools otherwise). Returns how many
    libraries were resized."""
    resized = 0
    for path in _loaded_openblas():
        library = ctypes.CDLL(path)  # already mapped: the same handle, nothing loaded again
        for name in _OPENBLAS_SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter(ctypes.c_int(threads))
                resized += 1
                break
    return resized
