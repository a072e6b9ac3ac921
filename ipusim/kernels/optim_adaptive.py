"""Update kernels of Adadelta, Adamax, Nadam and FTRL: one fused, in-place pass per variable.

As in :mod:`ipusim.kernels.optim`: flattened C-contiguous views, arithmetic in the variable's
dtype (the wrappers convert the scalars), formulas in the expression order of TensorFlow's
``ResourceApplyAdadelta``, ``ResourceApplyAdaMax``, ``ResourceApplyFtrl[V2]`` training ops and of
Keras 2's Python Nadam update (``keras/optimizer_v2/nadam.py``, which has no fused op). Each
wrapper's docstring gives the rule and the arithmetic operations per element reported as
``update_flops_per_element`` (multiply, add, subtract, divide, square root, power, absolute value,
sign, max and compare each count as one).
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.optim import _flat


@kernel
def _adadelta(var, grad, accum, accum_update, lr, rho, one_minus_rho, epsilon):
    for i in range(var.size):
        g = grad[i]
        a = accum[i] * rho + (g * g) * one_minus_rho
        accum[i] = a
        update = np.sqrt(accum_update[i] + epsilon) / np.sqrt(a + epsilon) * g
        var[i] = var[i] - update * lr
        accum_update[i] = accum_update[i] * rho + (update * update) * one_minus_rho


@kernel
def _adamax(var, grad, m, v, lr_t, beta_2, one_minus_beta_1, epsilon):
    for i in range(var.size):
        g = grad[i]
        mi = m[i] + (g - m[i]) * one_minus_beta_1
        vi = max(beta_2 * v[i], abs(g))
        m[i] = mi
        v[i] = vi
        var[i] = var[i] - lr_t * (mi / (vi + epsilon))


@kernel
def _nadam(var, grad, m, v, c):
    # c = (lr, beta_1, one_minus_beta_1, beta_2, one_minus_beta_2, one_minus_m_t, m_t_1,
    #      one_minus_m_schedule_new, one_minus_m_schedule_next, v_t_prime_denominator, epsilon)
    lr, b1, omb1, b2, omb2, om_t, m_t_1, om_new, om_next, v_denom, eps = c
    for i in range(var.size):
        g = grad[i]
        g_prime = g / om_new
        mi = b1 * m[i] + omb1 * g
        m[i] = mi
        m_prime = mi / om_next
        vi = b2 * v[i] + omb2 * (g * g)
        v[i] = vi
        v_prime = vi / v_denom
        m_bar = om_t * g_prime + m_t_1 * m_prime
        var[i] = var[i] - lr * m_bar / (np.sqrt(v_prime) + eps)


@kernel
def _ftrl(var, grad, accum, linear, lr, l1, two_l2, two_l2_shrinkage, lr_power, zero):
    for i in range(var.size):
        g = grad[i]
        shrunk = g + two_l2_shrinkage * var[i]
        a = accum[i]
        new_a = a + g * g
        if lr_power == -0.5:
            new_root = np.sqrt(new_a)
            old_root = np.sqrt(a)
        else:
            new_root = new_a ** (-lr_power)
            old_root = a ** (-lr_power)
        lin = linear[i] + (shrunk - (new_root - old_root) / lr * var[i])
        linear[i] = lin
        if abs(lin) > l1:
            # |lin| > l1 >= 0, so sign(lin) is +-1: l1 * sign(lin) - lin.
            signed_l1 = l1 if lin > zero else -l1
            var[i] = (signed_l1 - lin) / (new_root / lr + two_l2)
        else:
            var[i] = zero
        accum[i] = new_a


def adadelta_update(
    var: np.ndarray,
    grad: np.ndarray,
    accum: np.ndarray,
    accum_update: np.ndarray,
    lr: float,
    rho: float,
    epsilon: float,
) -> None:
    """Adadelta (``ResourceApplyAdadelta``), in place. 17 FLOPs per element.

    ``accum = rho * accum + (1 - rho) * g²``;
    ``update = sqrt(accum_update + eps) / sqrt(accum + eps) * g``; ``var -= lr * update``;
    ``accum_update = rho * accum_update + (1 - rho) * update²``.
    """
    t = var.dtype.type
    _adadelta(
        _flat(var),
        _flat(grad),
        _flat(accum),
        _flat(accum_update),
        t(lr),
        t(rho),
        t(1) - t(rho),
        t(epsilon),
    )


def adamax_update(
    var: np.ndarray,
    grad: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    lr_t: float,
    beta_1: float,
    beta_2: float,
    epsilon: float,
) -> None:
    """Adamax (``ResourceApplyAdaMax``), in place. 10 FLOPs per element.

    ``m += (g - m) * (1 - beta_1)``; ``v = max(beta_2 * v, |g|)``;
    ``var -= lr_t * m / (v + eps)`` where the caller passes ``lr_t = lr / (1 - beta_1**t)``.
    """
    t = var.dtype.type
    _adamax(
        _flat(var),
        _flat(grad),
        _flat(m),
        _flat(v),
        t(lr_t),
        t(beta_2),
        t(1) - t(beta_1),
        t(epsilon),
    )


def nadam_update(
    var: np.ndarray, grad: np.ndarray, m: np.ndarray, v: np.ndarray, coefficients: tuple
) -> None:
    """Nadam as Keras 2's ``Nadam._resource_apply_dense``, in place. 18 FLOPs per element.

    With the per-step scalars of ``Nadam._prepare_local`` (``coefficients``, already in the
    variable's dtype: lr, beta_1, 1 - beta_1, beta_2, 1 - beta_2, 1 - m_t, m_t_1,
    1 - m_schedule_new, 1 - m_schedule_next, 1 - beta_2**t, epsilon):
    ``g' = g / (1 - m_schedule_new)``; ``m = b1 m + (1 - b1) g``;
    ``m' = m / (1 - m_schedule_next)``; ``v = b2 v + (1 - b2) g²``; ``v' = v / (1 - b2**t)``;
    ``m̄ = (1 - m_t) g' + m_t_1 m'``; ``var -= lr m̄ / (sqrt(v') + eps)``.
    """
    _nadam(_flat(var), _flat(grad), _flat(m), _flat(v), coefficients)


def ftrl_update(
    var: np.ndarray,
    grad: np.ndarray,
    accum: np.ndarray,
    linear: np.ndarray,
    lr: float,
    l1: float,
    l2: float,
    l2_shrinkage: float,
    lr_power: float,
) -> None:
    """FTRL-proximal (``ResourceApplyFtrl``, or ``ResourceApplyFtrlV2`` with shrinkage), in place.

    ``g_s = g + 2 * l2_shrinkage * var``; ``n' = accum + g²``;
    ``linear += g_s - (n'^-p - accum^-p) / lr * var``;
    ``var = (l1 * sign(linear) - linear) / (n'^-p / lr + 2 * l2)`` where ``|linear| > l1``,
    else 0; ``accum = n'`` (``p = lr_power``; ``l2`` already includes Keras' ``beta / (2 lr)``).
    17 FLOPs per element (19 with shrinkage, which costs a multiply and an add).
    """
    t = var.dtype.type
    _ftrl(
        _flat(var),
        _flat(grad),
        _flat(accum),
        _flat(linear),
        t(lr),
        t(l1),
        t(2) * t(l2),
        t(2) * t(l2_shrinkage),
        t(lr_power),
        t(0),
    )
