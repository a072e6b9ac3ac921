"""Fused loss kernels: softmax cross-entropy (sparse and dense labels) and sigmoid cross-entropy.

Logits are 2-D ``(examples, classes)`` contiguous arrays (the wrappers flatten leading axes). Every
row is shifted by its maximum, so ``log(sum(exp(logits)))`` never overflows; row sums accumulate
in float64. Label checks happen inside the kernels; a kernel reports the first bad row and the
wrapper raises with the offending value.
"""

from __future__ import annotations

import math

import numpy as np

from ipusim._jit import kernel
from ipusim.errors import InputDataError
from ipusim.kernels.elementwise import _stable_sigmoid
from ipusim.kernels.softmax import _row_max


@kernel
def _row_lse(x, r):
    # log(sum(exp(x[r]))) computed as max + log(sum(exp(x[r] - max))).
    m = _row_max(x, r)
    s = 0.0
    for c in range(x.shape[1]):
        s += np.exp(x[r, c] - m)
    return m + np.log(s)


@kernel
def _sparse_ce(logits, labels, loss):
    rows, cols = logits.shape
    for r in range(rows):
        label = labels[r]
        if label < 0 or label >= cols:
            return r
        loss[r] = _row_lse(logits, r) - logits[r, label]
    return -1


@kernel
def _sparse_ce_grad(dy, logits, labels, out):
    # d loss / d logits = (softmax(logits) - onehot(label)) * dy.
    rows, cols = logits.shape
    for r in range(rows):
        label = labels[r]
        if label < 0 or label >= cols:
            return r
        lse = _row_lse(logits, r)
        for c in range(cols):
            out[r, c] = np.exp(logits[r, c] - lse) * dy[r]
        out[r, label] -= dy[r]
    return -1


@kernel
def _dense_ce(logits, labels, loss):
    rows, cols = logits.shape
    for r in range(rows):
        lse = _row_lse(logits, r)
        s = 0.0
        for c in range(cols):
            s += labels[r, c] * (lse - logits[r, c])
        loss[r] = s


@kernel
def _dense_ce_grad_logits(dy, logits, labels, out):
    # d loss / d logits = (softmax * sum(labels) - labels) * dy; TensorFlow's softmax - labels
    # when the labels of a row sum to 1.
    rows, cols = logits.shape
    for r in range(rows):
        lse = _row_lse(logits, r)
        total = 0.0
        for c in range(cols):
            total += labels[r, c]
        for c in range(cols):
            out[r, c] = (np.exp(logits[r, c] - lse) * total - labels[r, c]) * dy[r]


@kernel
def _dense_ce_grad_labels(dy, logits, out):
    # d loss / d labels = -log_softmax(logits) * dy.
    rows, cols = logits.shape
    for r in range(rows):
        lse = _row_lse(logits, r)
        for c in range(cols):
            out[r, c] = (lse - logits[r, c]) * dy[r]


@kernel
def _sigmoid_ce(logits, labels, out):
    # max(x, 0) - x * z + log(1 + exp(-|x|)): TensorFlow's overflow-free form.
    for i in range(logits.size):
        x = logits[i]
        out[i] = max(x, 0.0) - x * labels[i] + np.log1p(np.exp(-abs(x)))


@kernel
def _sigmoid_ce_grad_logits(dy, logits, labels, out):
    for i in range(logits.size):
        out[i] = (_stable_sigmoid(logits[i]) - labels[i]) * dy[i]


def _check_labels(op: str, labels: np.ndarray, row: int, classes: int) -> None:
    if row >= 0:
        index = np.unravel_index(row, labels.shape) if labels.ndim else ()
        raise InputDataError(
            f"{op}: label {int(labels.reshape(-1)[row])} at index {tuple(int(i) for i in index)} "
            f"is outside [0, {classes}); labels must be class indices below the number of "
            f"classes (logits.shape[-1] = {classes})"
        )


def _as_rows(logits: np.ndarray) -> np.ndarray:
    if logits.shape[-1] == 0:
        raise InputDataError(f"logits of shape {logits.shape} have no classes (last axis is empty)")
    return np.asarray(logits, order="C").reshape(math.prod(logits.shape[:-1]), logits.shape[-1])


def sparse_softmax_cross_entropy(labels: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """Per-example ``-log softmax(logits)[label]``; ``labels`` has ``logits.shape[:-1]``.

    Raises:
        ValueError: if a label is negative or not below the number of classes.
    """
    rows = _as_rows(logits)
    flat_labels = np.asarray(labels, order="C").reshape(-1)
    loss = np.empty(rows.shape[0], dtype=logits.dtype)
    _check_labels(
        "sparse_softmax_cross_entropy_with_logits",
        labels,
        _sparse_ce(rows, flat_labels, loss),
        rows.shape[1],
    )
    return loss.reshape(logits.shape[:-1])


def sparse_softmax_cross_entropy_grad(
    dy: np.ndarray, labels: np.ndarray, logits: np.ndarray
) -> np.ndarray:
    """Gradient of the sparse cross-entropy w.r.t. the logits: ``(softmax - onehot) * dy``."""
    rows = _as_rows(logits)
    out = np.empty_like(rows)
    bad = _sparse_ce_grad(
        np.asarray(dy, order="C").reshape(-1), rows, np.asarray(labels, order="C").reshape(-1), out
    )
    _check_labels("sparse_softmax_cross_entropy_with_logits", labels, bad, rows.shape[1])
    return out.reshape(logits.shape)


def softmax_cross_entropy(labels: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """Per-example ``-sum(labels * log softmax(logits))`` over the last axis."""
    rows = _as_rows(logits)
    loss = np.empty(rows.shape[0], dtype=logits.dtype)
    _dense_ce(rows, _as_rows(labels), loss)
    return loss.reshape(logits.shape[:-1])


def softmax_cross_entropy_grad(
    dy: np.ndarray, labels: np.ndarray, logits: np.ndarray, wrt: str
) -> np.ndarray:
    """Gradient of :func:`softmax_cross_entropy` w.r.t. ``"logits"`` or ``"labels"``."""
    rows = _as_rows(logits)
    flat_dy = np.asarray(dy, order="C").reshape(-1)
    out = np.empty_like(rows)
    if wrt == "logits":
        _dense_ce_grad_logits(flat_dy, rows, _as_rows(labels), out)
    else:
        _dense_ce_grad_labels(flat_dy, rows, out)
    return out.reshape(logits.shape)


def sigmoid_cross_entropy(labels: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """Elementwise ``-z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x))`` in the stable form."""
    x = np.asarray(logits, order="C")
    out = np.empty_like(x)
    _sigmoid_ce(x.reshape(-1), np.asarray(labels, order="C").reshape(-1), out.reshape(-1))
    return out


def sigmoid_cross_entropy_grad_logits(
    dy: np.ndarray, labels: np.ndarray, logits: np.ndarray
) -> np.ndarray:
    """``(sigmoid(logits) - labels) * dy``."""
    x = np.asarray(logits, order="C")
    out = np.empty_like(x)
    _sigmoid_ce_grad_logits(
        np.asarray(dy, order="C").reshape(-1),
        x.reshape(-1),
        np.asarray(labels, order="C").reshape(-1),
        out.reshape(-1),
    )
    return out
