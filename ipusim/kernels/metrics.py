"""Metric kernels: per-sample match counts and (weighted) sums for ``ipusim.keras.metrics``.

Inputs are 2-D ``(rows, classes)`` views (the wrappers flatten leading axes) or 1-D arrays. Match
kernels write 1.0 / 0.0 per row into ``out``; sums accumulate in float64 and return a Python float.
Ties in an argmax pick the first maximum, as ``tf.math.argmax`` and ``np.argmax`` do.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.reduce import _argmax_rows


@kernel
def _argmax_row(x2d, i):
    cols = x2d.shape[1]
    best = 0
    best_value = x2d[i, 0]
    for j in range(1, cols):
        if x2d[i, j] > best_value:
            best_value = x2d[i, j]
            best = j
    return best


@kernel
def _categorical_match(y_true2d, y_pred2d, out):
    for i in range(y_pred2d.shape[0]):
        out[i] = 1.0 if _argmax_row(y_true2d, i) == _argmax_row(y_pred2d, i) else 0.0


@kernel
def _sparse_categorical_match(labels, y_pred2d, out):
    for i in range(y_pred2d.shape[0]):
        out[i] = 1.0 if labels[i] == _argmax_row(y_pred2d, i) else 0.0


@kernel
def _in_top_k(y_pred2d, targets, k, out):
    # tf.math.in_top_k: the target is in the top k when fewer than k classes score strictly
    # higher (ties at the boundary count as in); a non-finite row or out-of-range target is not.
    rows, cols = y_pred2d.shape
    for i in range(rows):
        target = targets[i]
        if target < 0 or target >= cols:
            out[i] = 0.0
            continue
        finite = True
        for j in range(cols):
            if not np.isfinite(y_pred2d[i, j]):
                finite = False
        if not finite:
            out[i] = 0.0
            continue
        score = y_pred2d[i, target]
        higher = 0
        for j in range(cols):
            if y_pred2d[i, j] > score:
                higher += 1
        out[i] = 1.0 if higher < k else 0.0


@kernel
def _binary_match_mean(y_true2d, y_pred2d, threshold, out):
    rows, cols = y_pred2d.shape
    for i in range(rows):
        hits = 0
        for j in range(cols):
            predicted = 1.0 if y_pred2d[i, j] > threshold else 0.0
            if y_true2d[i, j] == predicted:
                hits += 1
        out[i] = hits / cols


@kernel
def _equal(a, b, out):
    for i in range(a.size):
        out[i] = 1.0 if a[i] == b[i] else 0.0


@kernel
def _mean_diff(y_true2d, y_pred2d, squared, out):
    # Row means of (y_pred - y_true)**2 (``squared``) or of |y_pred - y_true|.
    rows, cols = y_pred2d.shape
    for i in range(rows):
        total = 0.0
        for j in range(cols):
            d = y_pred2d[i, j] - y_true2d[i, j]
            total += d * d if squared else abs(d)
        out[i] = total / cols


@kernel
def _sum(x):
    total = 0.0
    for i in range(x.size):
        total += x[i]
    return total


@kernel
def _weighted_sum(values, weights):
    total = 0.0
    for i in range(values.size):
        total += values[i] * weights[i]
    return total


@kernel
def _row_reduce(x2d, mean, out):
    rows, cols = x2d.shape
    for i in range(rows):
        total = 0.0
        for j in range(cols):
            total += x2d[i, j]
        out[i] = total / cols if mean else total


# --- public wrappers -----------------------------------------------------------------------------


def _rows(x: np.ndarray) -> np.ndarray:
    """A C-contiguous 2-D ``(rows, last_dim)`` view (a 1-D array is one row)."""
    x = np.ascontiguousarray(x)
    if x.ndim == 0:
        return x.reshape(1, 1)
    return x.reshape(-1, x.shape[-1])


def _per_row(
    kernel: Callable[..., None], like: np.ndarray, dtype: np.dtype | type, *args: object
) -> np.ndarray:
    """``kernel(*args, out)`` into a new ``out`` of ``dtype``, one value per row of ``like``
    (shape ``like.shape[:-1]``)."""
    out = np.empty(like.shape[:-1] if like.ndim > 0 else (), dtype=dtype)
    kernel(*args, out.reshape(-1))
    return out


def argmax_last(x: np.ndarray) -> np.ndarray:
    """Index of the (first) maximum along the last axis, as int64; shape ``x.shape[:-1]``."""
    return _per_row(_argmax_rows, x, np.int64, _rows(x))


def categorical_match(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """1.0 where ``argmax(y_true, -1) == argmax(y_pred, -1)``; shape ``y_pred.shape[:-1]``."""
    return _per_row(_categorical_match, y_pred, np.float32, _rows(y_true), _rows(y_pred))


def sparse_categorical_match(labels: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """1.0 where ``labels == argmax(y_pred, -1)`` (labels compared as floats, as Keras casts)."""
    flat_labels = np.ascontiguousarray(labels, dtype=np.float64).reshape(-1)
    return _per_row(_sparse_categorical_match, y_pred, np.float32, flat_labels, _rows(y_pred))


def in_top_k(y_pred: np.ndarray, targets: np.ndarray, k: int) -> np.ndarray:
    """``tf.math.in_top_k`` as floats: 1.0 where ``targets`` is among the top ``k`` of each row."""
    flat_targets = np.ascontiguousarray(targets, dtype=np.int64).reshape(-1)
    return _per_row(_in_top_k, y_pred, np.float32, _rows(y_pred), flat_targets, int(k))


def binary_match_mean(y_true: np.ndarray, y_pred: np.ndarray, threshold: float) -> np.ndarray:
    """Mean over the last axis of ``y_true == (y_pred > threshold)``; same-shape inputs."""
    t = y_pred.dtype.type
    rows = (_rows(y_true), _rows(y_pred))
    return _per_row(_binary_match_mean, y_pred, np.float32, *rows, t(threshold))


def equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise ``a == b`` as float32 (inputs broadcast against each other)."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape, dtype=np.float32)
    _equal(
        np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1), out.reshape(-1)
    )
    return out


def mean_squared_diff(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """``mean((y_pred - y_true)**2, axis=-1)``; same-shape inputs."""
    return _per_row(_mean_diff, y_pred, y_pred.dtype, _rows(y_true), _rows(y_pred), True)


def mean_abs_diff(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """``mean(|y_pred - y_true|, axis=-1)``; same-shape inputs."""
    return _per_row(_mean_diff, y_pred, y_pred.dtype, _rows(y_true), _rows(y_pred), False)


def total(x: np.ndarray) -> float:
    """Sum of every element, accumulated in float64."""
    return float(_sum(np.ascontiguousarray(x).reshape(-1)))


def weighted_total(values: np.ndarray, weights: np.ndarray) -> float:
    """``sum(values * weights)`` for same-shape arrays, accumulated in float64."""
    return float(
        _weighted_sum(
            np.ascontiguousarray(values).reshape(-1), np.ascontiguousarray(weights).reshape(-1)
        )
    )


def reduce_trailing(x: np.ndarray, ndim: int, mean: bool) -> np.ndarray:
    """Sum (or mean) ``x`` over every axis from ``ndim`` on, keeping the first ``ndim`` axes."""
    lead = x.shape[:ndim]
    rows = int(np.prod(lead, dtype=np.int64))
    if x.size == 0:
        return np.zeros(lead, dtype=x.dtype)
    src = np.ascontiguousarray(x).reshape(rows, -1)
    out = np.empty(rows, dtype=x.dtype)
    _row_reduce(src, bool(mean), out)
    return out.reshape(lead)
