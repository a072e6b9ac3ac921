"""Update kernels of the Keras 2.11+ optimizers Lion and Adafactor, and decoupled weight decay.

Same conventions as :mod:`ipusim.kernels.optim` (flattened C-contiguous views, arithmetic in the
variable's dtype). The formulas are tf-keras' ``update_step`` of ``lion.py`` and
``adafactor.py`` and ``Optimizer._apply_weight_decay`` (``tf_keras/src/optimizers``), in their
expression order. FLOPs per element are given in each wrapper's docstring.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.optim import _flat


@kernel
def _weight_decay(var, wd, lr):
    for i in range(var.size):
        var[i] = var[i] - var[i] * wd * lr


@kernel
def _lion(var, grad, m, lr, beta_1, one_minus_beta_1, beta_2, one_minus_beta_2):
    for i in range(var.size):
        g = grad[i]
        c = m[i] * beta_1 + g * one_minus_beta_1
        if c > 0:
            var[i] = var[i] - lr
        elif c < 0:
            var[i] = var[i] + lr
        m[i] = m[i] * beta_2 + g * one_minus_beta_2


@kernel
def _adafactor_factored(grad, r, c, v, beta, one_minus_beta, eps1):
    # grad, v: (B, R, C); r: (B, R); c: (B, C). v = (r / mean(r)) outer c.
    batches, rows, cols = grad.shape
    for b in range(batches):
        for i in range(rows):
            total = grad.dtype.type(0)
            for j in range(cols):
                total += grad[b, i, j] * grad[b, i, j] + eps1
            r[b, i] = beta * r[b, i] + one_minus_beta * (total / cols)
        for j in range(cols):
            total = grad.dtype.type(0)
            for i in range(rows):
                total += grad[b, i, j] * grad[b, i, j] + eps1
            c[b, j] = beta * c[b, j] + one_minus_beta * (total / rows)
        r_mean = grad.dtype.type(0)
        for i in range(rows):
            r_mean += r[b, i]
        r_mean = r_mean / rows
        for i in range(rows):
            for j in range(cols):
                v[b, i, j] = (r[b, i] / r_mean) * c[b, j]


@kernel
def _adafactor_unfactored(grad, v, beta, one_minus_beta, eps1):
    for i in range(grad.size):
        v[i] = beta * v[i] + one_minus_beta * (grad[i] * grad[i] + eps1)


@kernel
def _scaled_update(var, grad, v, alpha, clip_threshold):
    # u = g / sqrt(v); var -= alpha * u / max(1, rms(u) / clip_threshold).
    total = 0.0
    for i in range(var.size):
        u = grad[i] / np.sqrt(v[i])
        total += np.float64(u) * np.float64(u)
    rms = var.dtype.type(np.sqrt(total / var.size))
    scale = max(var.dtype.type(1), rms / clip_threshold)
    for i in range(var.size):
        u = grad[i] / np.sqrt(v[i])
        var[i] = var[i] + (-alpha) * (u / scale)


def weight_decay(var: np.ndarray, wd: float, lr: float) -> None:
    """``var -= var * wd * lr`` in place (decoupled weight decay). 3 FLOPs per element."""
    t = var.dtype.type
    _weight_decay(_flat(var), t(wd), t(lr))


def lion_update(
    var: np.ndarray, grad: np.ndarray, m: np.ndarray, lr: float, beta_1: float, beta_2: float
) -> None:
    """Lion, in place. 9 FLOPs per element.

    ``var -= lr * sign(beta_1 m + (1 - beta_1) g)``; ``m = beta_2 m + (1 - beta_2) g``.
    """
    t = var.dtype.type
    b1, b2 = t(beta_1), t(beta_2)
    _lion(_flat(var), _flat(grad), _flat(m), t(lr), b1, t(1) - b1, b2, t(1) - b2)


def adafactor_update(
    var: np.ndarray,
    grad: np.ndarray,
    r: np.ndarray | None,
    c: np.ndarray | None,
    v: np.ndarray,
    alpha: float,
    beta_2: float,
    epsilon_1: float,
    clip_threshold: float,
) -> None:
    """Adafactor, in place. 15 FLOPs per element (D: counted from the rule below).

    With ``reg = g² + epsilon_1`` and ``b = beta_2`` (``1 - t**beta_2_decay``): a variable of
    rank ≥ 2 keeps the row means ``r`` and column means ``c`` of ``reg`` over its last two axes
    (``x = b x + (1 - b) mean(reg)``) and ``v = (r / mean(r)) ⊗ c``; otherwise
    ``v = b v + (1 - b) reg``. Then ``u = g / sqrt(v)`` and
    ``var -= alpha * u / max(1, rms(u) / clip_threshold)``; the caller passes
    ``alpha = max(epsilon_2, rms(var)) * min(lr, 1 / sqrt(t))``.
    """
    t = var.dtype.type
    beta = t(beta_2)
    if var.ndim >= 2:
        rows, cols = var.shape[-2], var.shape[-1]
        shape3 = (-1, rows, cols)
        _adafactor_factored(
            np.ascontiguousarray(grad).reshape(shape3),
            r.reshape(-1, rows),
            c.reshape(-1, cols),
            v.reshape(shape3),
            beta,
            t(1) - beta,
            t(epsilon_1),
        )
    else:
        _adafactor_unfactored(_flat(grad), _flat(v), beta, t(1) - beta, t(epsilon_1))
    _scaled_update(_flat(var), _flat(grad), _flat(v), t(alpha), t(clip_threshold))
