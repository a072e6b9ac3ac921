"""Dense (matrix) kernels: matmul in every transpose combination, bias add and its gradient.

Matrix products are handed to NumPy's BLAS by the thin wrapper: BLAS is where a CPU reaches its
limit, and NumPy's build measured 1.3-1.9x faster on the seed-MLP shapes than the SciPy BLAS that
``np.dot`` inside ``@njit`` links to. Using one BLAS for every product (dense and conv) also keeps a
single BLAS thread pool, avoiding the pool clash of ``cpu_performance_notes.md``. A transposed
operand is passed as a transposed view, which BLAS reads as stored; no copy is made. Everything
around the products (bias, reductions, im2col, activations) is Numba.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel


def matmul(
    a: np.ndarray, b: np.ndarray, transpose_a: bool = False, transpose_b: bool = False
) -> np.ndarray:
    """``op(a) @ op(b)`` for 2-D float arrays, ``op`` transposing when asked (a view, no copy)."""
    return np.matmul(a.T if transpose_a else a, b.T if transpose_b else b)


@kernel
def _bias_add(x2d, bias, out2d):
    rows, cols = x2d.shape
    for i in range(rows):
        for j in range(cols):
            out2d[i, j] = x2d[i, j] + bias[j]


def bias_add(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``x + bias`` with ``bias`` along the last axis of ``x`` (any rank ≥ 1)."""
    out = np.empty_like(x)
    cols = x.shape[-1]
    _bias_add(x.reshape(-1, cols), bias, out.reshape(-1, cols))
    return out


@kernel
def _sum_rows(x2d, out):
    rows, cols = x2d.shape
    for j in range(cols):
        out[j] = 0.0
    for i in range(rows):
        for j in range(cols):
            out[j] += x2d[i, j]


def bias_add_grad(dy: np.ndarray) -> np.ndarray:
    """Gradient of :func:`bias_add` w.r.t. the bias: ``dy`` summed over every axis but the last."""
    cols = dy.shape[-1]
    out = np.empty(cols, dtype=dy.dtype)
    _sum_rows(np.ascontiguousarray(dy).reshape(-1, cols), out)
    return out


def batch_matmul(
    a: np.ndarray, b: np.ndarray, transpose_a: bool = False, transpose_b: bool = False
) -> np.ndarray:
    """``op(a) @ op(b)`` over the leading dimensions (BLAS per matrix, as :func:`matmul`)."""
    return np.matmul(
        np.swapaxes(a, -1, -2) if transpose_a else a, np.swapaxes(b, -1, -2) if transpose_b else b
    )
