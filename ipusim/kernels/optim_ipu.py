"""Update kernels of ipu_tensorflow_addons' ``AdamIpuOptimizer`` and ``LAMBIpuOptimizer``.

The formulas are those of ``ipu_tensorflow_addons/keras/optimizers/adam_optimizer.py`` and
``lamb_optimizer.py`` (SDK 3.x), computed in float32 (their default
``optimizer_compute_precisions``) on float32 working arrays, in their expression order. Unlike
Keras' Adam, the moments are debiased explicitly and epsilon is added to ``sqrt(v_hat)``.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel


@kernel
def _moments(grad, m, v, beta_1, one_minus_beta_1, beta_2, one_minus_beta_2):
    for i in range(grad.size):
        g = grad[i]
        m[i] = m[i] * beta_1 + g * one_minus_beta_1
        v[i] = v[i] * beta_2 + (g * g) * one_minus_beta_2


@kernel
def _adam_direction(m, v, vhat, amsgrad, m_scale, v_scale, epsilon, out):
    # out = m_hat / (sqrt(v_hat) + eps), v_hat = max(vhat, v_hat) with AMSGrad.
    for i in range(m.size):
        m_hat = m[i] / m_scale
        v_hat = v[i] / v_scale
        if amsgrad:
            v_hat = max(vhat[i], v_hat)
            vhat[i] = v_hat
        out[i] = m_hat / (np.sqrt(v_hat) + epsilon)


@kernel
def _add_decay_and_norms(update, var, weight_decay):
    # update += var * wd; returns (|var|^2, |update|^2) accumulated in float64.
    w2 = 0.0
    u2 = 0.0
    for i in range(update.size):
        w = np.float32(var[i])
        u = update[i] + w * weight_decay
        update[i] = u
        w2 += np.float64(w) * np.float64(w)
        u2 += np.float64(u) * np.float64(u)
    return w2, u2


def moments(grad: np.ndarray, m: np.ndarray, v: np.ndarray, beta_1: float, beta_2: float) -> None:
    """``m = m b1 + g (1 - b1)``; ``v = v b2 + g² (1 - b2)`` in float32, in place (7 FLOPs)."""
    f = np.float32
    _moments(grad, m, v, f(beta_1), f(1) - f(beta_1), f(beta_2), f(1) - f(beta_2))


def adam_direction(
    m: np.ndarray,
    v: np.ndarray,
    vhat: np.ndarray | None,
    m_scale: float,
    v_scale: float,
    epsilon: float,
) -> np.ndarray:
    """``m_hat / (sqrt(v_hat) + eps)`` (float32), with ``m_hat = m / m_scale`` (``1 - b1**t``
    when debiasing, else 1) and likewise ``v_hat``; AMSGrad keeps ``vhat = max(vhat, v_hat)``.
    5 FLOPs per element (6 with AMSGrad)."""
    f = np.float32
    out = np.empty_like(m)
    empty = np.zeros(0, np.float32)
    amsgrad = vhat is not None
    _adam_direction(
        m, v, vhat if amsgrad else empty, amsgrad, f(m_scale), f(v_scale), f(epsilon), out
    )
    return out


def add_decay_and_norms(
    update: np.ndarray, var: np.ndarray, weight_decay: float
) -> tuple[float, float]:
    """``update += var * weight_decay`` in place; returns ``(||var||, ||update||)``
    (3 FLOPs per element plus 4 for the two norms)."""
    w2, u2 = _add_decay_and_norms(update, var, np.float32(weight_decay))
    return float(np.sqrt(w2)), float(np.sqrt(u2))
