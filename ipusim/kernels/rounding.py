"""Rounding kernels: ``floor`` (the largest integer not above each element, in its own dtype)."""

from __future__ import annotations

import math

import numpy as np

from ipusim._jit import kernel

__all__ = ["floor"]


@kernel
def _floor(x, out):
    for i in range(x.size):
        out[i] = math.floor(x[i])


def floor(x: np.ndarray) -> np.ndarray:
    """``floor(x)`` elementwise, same dtype and shape."""
    x = np.asarray(x, order="C")
    out = np.empty_like(x)
    _floor(x.reshape(-1), out.reshape(-1))
    return out
