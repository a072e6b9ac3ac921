"""Gradient-accumulation kernels (in place on flat float arrays)."""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.optim import _scale


@kernel
def _add_into(acc, g):
    for i in range(acc.shape[0]):
        acc[i] += g[i]


@kernel
def _running_mean_into(acc, g, count):
    # acc holds the mean of `count` gradients; fold in one more.
    inv = 1.0 / (count + 1)
    for i in range(acc.shape[0]):
        acc[i] += (g[i] - acc[i]) * inv


def accumulate(acc: np.ndarray, grad: np.ndarray, count: int, method: str) -> None:
    """Fold ``grad`` into ``acc`` (which holds ``count`` gradients) by ``method``.

    ``"sum"`` and ``"mean"`` add (the mean divides once at the end, :func:`finish`);
    ``"running_mean"`` keeps ``acc`` equal to the mean so far.
    """
    flat_acc, flat_grad = acc.reshape(-1), np.ascontiguousarray(grad, dtype=acc.dtype).reshape(-1)
    if method == "running_mean":
        _running_mean_into(flat_acc, flat_grad, count)
    else:
        _add_into(flat_acc, flat_grad)


def finish(acc: np.ndarray, count: int, method: str) -> None:
    """Turn the accumulated value into the gradient to apply (divides by ``count`` for mean)."""
    if method == "mean" and count > 1:
        flat = acc.reshape(-1)
        _scale(flat, 1.0 / count, flat)
