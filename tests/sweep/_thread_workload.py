"""A sweep workload that reports its worker's thread settings (imported by worker processes)."""

from __future__ import annotations

import ctypes
import os

import numpy as np

from ipusim._threads import _loaded_openblas

_GETTERS = (
    "openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads64_",
)


def blas_threads() -> int:
    """Threads of NumPy's OpenBLAS pool in this process, asked from the library itself."""
    np.ones((2, 2)) @ np.ones((2, 2))  # NumPy's BLAS loaded and used
    for path in _loaded_openblas():
        library = ctypes.CDLL(path)
        for name in _GETTERS:
            getter = getattr(library, name, None)
            if getter is not None:
                return int(getter())
    return -1


def report_threads(config: dict) -> dict:
    return {
        "throughput": float(config["a"]),
        "pid": os.getpid(),
        "openblas": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "omp": os.environ.get("OMP_NUM_THREADS", ""),
        "numba": os.environ.get("NUMBA_NUM_THREADS", ""),
        "blas_runtime": blas_threads(),
    }
