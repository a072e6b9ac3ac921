"""Softmax and log-softmax along one axis, and their gradients.

The kernels work on the rows of a contiguous 2-D array (the softmax axis last). The wrappers move
any other axis to the end with one copy and back afterwards. Every row is shifted by its maximum
before exponentiating, so large logits never overflow; row sums accumulate in float64.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ipusim._jit import kernel


@kernel
def _row_max(x, r):
    m = x[r, 0]
    for c in range(1, x.shape[1]):
        v = x[r, c]
        if v > m or v != v:  # NaN propagates
            m = v
    return m


@kernel
def _softmax_rows(x, out):
    # Separate loops (max, exp, sum, scale) keep the exp loop free of a loop-carried sum.
    rows, cols = x.shape
    for r in range(rows):
        m = _row_max(x, r)
        for c in range(cols):
            out[r, c] = np.exp(x[r, c] - m)
        s = 0.0
        for c in range(cols):
            s += out[r, c]
        inv = 1.0 / s
        for c in range(cols):
            out[r, c] = out[r, c] * inv


@kernel
def _log_softmax_rows(x, out):
    rows, cols = x.shape
    for r in range(rows):
        m = _row_max(x, r)
        for c in range(cols):
            out[r, c] = x[r, c] - m
        s = 0.0
        for c in range(cols):
            s += np.exp(out[r, c])
        lse = np.log(s)
        for c in range(cols):
            out[r, c] = out[r, c] - lse


@kernel
def _softmax_grad_rows(dy, y, out):
    # dx = y * (dy - sum(dy * y)) along the row.
    rows, cols = dy.shape
    for r in range(rows):
        s = 0.0
        for c in range(cols):
            s += dy[r, c] * y[r, c]
        for c in range(cols):
            out[r, c] = y[r, c] * (dy[r, c] - s)


@kernel
def _log_softmax_grad_rows(dy, y, out):
    # dx = dy - softmax * sum(dy), with softmax = exp(y) for the log-softmax output y.
    rows, cols = dy.shape
    for r in range(rows):
        s = 0.0
        for c in range(cols):
            s += dy[r, c]
        for c in range(cols):
            out[r, c] = dy[r, c] - np.exp(y[r, c]) * s


def _rows(fn: Callable, axis: int, *arrays: np.ndarray) -> np.ndarray:
    """Run a row kernel on ``arrays`` with ``axis`` (non-negative) moved last, then move it back."""
    last = arrays[0].ndim - 1
    moved = [np.asarray(np.moveaxis(a, axis, -1) if axis != last else a, order="C") for a in arrays]
    shape = moved[0].shape
    cols = shape[-1] if shape else 1
    flat = [a.reshape(-1, cols) if a.size else a.reshape(0, cols) for a in moved]
    out = np.empty_like(flat[0])
    fn(*flat, out)
    out = out.reshape(shape)
    return np.asarray(np.moveaxis(out, -1, axis), order="C") if axis != last else out


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """``exp(x) / sum(exp(x))`` along ``axis`` (non-negative)."""
    return _rows(_softmax_rows, axis, x)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """``x - log(sum(exp(x)))`` along ``axis`` (non-negative)."""
    return _rows(_log_softmax_rows, axis, x)


def softmax_grad(dy: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    """Gradient of :func:`softmax` given its output ``y``."""
    return _rows(_softmax_grad_rows, axis, dy, y)


def log_softmax_grad(dy: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    """Gradient of :func:`log_softmax` given its output ``y``."""
    return _rows(_log_softmax_grad_rows, axis, dy, y)
