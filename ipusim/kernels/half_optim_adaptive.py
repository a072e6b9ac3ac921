"""float16 updates of Adadelta and Adamax, one binary16 rounding per operation (as
:mod:`ipusim.kernels.half_optim`, whose ``_h`` and :class:`~ipusim.kernels.half_optim.HalfUpdate`
they use), in the expression order of TensorFlow's ``ResourceApplyAdadelta`` and
``ResourceApplyAdaMax`` functors on ``Eigen::half`` (each operation computed in float and
rounded). Eigen's half ``rsqrt`` is ``1 / sqrt`` in float, rounded once.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.half_optim import _h


@kernel
def adadelta(var, grad, accum, accum_update, lr, rho, one_minus_rho, eps, c):
    # accum = accum*rho + g^2*(1-rho); update = sqrt(au+eps) * rsqrt(accum+eps) * g;
    # var -= update*lr; au = au*rho + update^2*(1-rho).
    for i in range(var.size):
        g = grad[i]
        gg = _h(g * g, i, 0, c)
        a = _h(_h(accum[i] * rho, i, 1, c) + _h(gg * one_minus_rho, i, 2, c), i, 3, c)
        accum[i] = a
        root = _h(np.sqrt(_h(accum_update[i] + eps, i, 4, c)), i, 5, c)
        inverse = _h(np.float32(1) / np.sqrt(_h(a + eps, i, 6, c)), i, 7, c)
        update = _h(_h(root * inverse, i, 8, c) * g, i, 9, c)
        var[i] = _h(var[i] - _h(update * lr, i, 10, c), i, 11, c)
        uu = _h(update * update, i, 12, c)
        au = _h(accum_update[i] * rho, i, 13, c)
        accum_update[i] = _h(au + _h(uu * one_minus_rho, i, 14, c), i, 15, c)


@kernel
def adamax(var, grad, m, v, step_size, one_minus_beta_1, beta_2, eps, c):
    # m += (g - m)*(1-b1); v = max(b2*v, |g|); var -= step_size * (m / (v + eps)), where
    # step_size = lr / (1 - beta1_power) is computed once, in half.
    for i in range(var.size):
        g = grad[i]
        mi = _h(m[i] + _h(_h(g - m[i], i, 0, c) * one_minus_beta_1, i, 1, c), i, 2, c)
        m[i] = mi
        vi = max(_h(beta_2 * v[i], i, 3, c), abs(g))
        v[i] = vi
        ratio = _h(mi / _h(vi + eps, i, 4, c), i, 5, c)
        var[i] = _h(var[i] - _h(step_size * ratio, i, 6, c), i, 7, c)


@kernel
def nadam(var, grad, m, v, k, c):
    # Keras 2's Nadam._resource_apply_dense in half; k = (lr, beta_1, 1-beta_1, beta_2,
    # 1-beta_2, 1-m_t, m_t_1, 1-m_schedule_new, 1-m_schedule_next, 1-beta_2**t, epsilon).
    lr, b1, omb1, b2, omb2, om_t, m_t_1, om_new, om_next, v_denom, eps = k
    for i in range(var.size):
        g = grad[i]
        g_prime = _h(g / om_new, i, 0, c)
        mi = _h(_h(b1 * m[i], i, 1, c) + _h(omb1 * g, i, 2, c), i, 3, c)
        m[i] = mi
        m_prime = _h(mi / om_next, i, 4, c)
        gg = _h(g * g, i, 6, c)
        vi = _h(_h(b2 * v[i], i, 5, c) + _h(omb2 * gg, i, 7, c), i, 8, c)
        v[i] = vi
        v_prime = _h(vi / v_denom, i, 9, c)
        m_bar = _h(_h(om_t * g_prime, i, 10, c) + _h(m_t_1 * m_prime, i, 11, c), i, 12, c)
        root = _h(_h(np.sqrt(v_prime), i, 14, c) + eps, i, 15, c)
        step = _h(_h(lr * m_bar, i, 13, c) / root, i, 16, c)
        var[i] = _h(var[i] - step, i, 17, c)


@kernel
def ftrl(var, grad, accum, linear, lr, l1, two_l2, two_l2_shrinkage, lr_power, c):
    # ResourceApplyFtrl[V2] on Eigen::half.
    for i in range(var.size):
        g = grad[i]
        shrunk = g
        if two_l2_shrinkage != 0:
            shrunk = _h(g + _h(two_l2_shrinkage * var[i], i, 0, c), i, 1, c)
        a = accum[i]
        new_a = _h(a + _h(g * g, i, 2, c), i, 3, c)
        if lr_power == -0.5:
            new_root = _h(np.sqrt(new_a), i, 4, c)
            old_root = _h(np.sqrt(a), i, 5, c)
        else:
            new_root = _h(new_a ** (-lr_power), i, 4, c)
            old_root = _h(a ** (-lr_power), i, 5, c)
        sigma = _h(_h(_h(new_root - old_root, i, 6, c) / lr, i, 7, c) * var[i], i, 8, c)
        lin = _h(linear[i] + _h(shrunk - sigma, i, 9, c), i, 10, c)
        linear[i] = lin
        if abs(lin) > l1:
            signed_l1 = l1 if lin > 0 else -l1
            x = _h(signed_l1 - lin, i, 11, c)
            y = _h(_h(new_root / lr, i, 12, c) + two_l2, i, 13, c)
            var[i] = _h(x / y, i, 14, c)
        else:
            var[i] = np.float32(0)
        accum[i] = new_a


@kernel
def weight_decay(var, unused_grad, wd, lr, c):
    # The new Keras optimizers' decoupled decay in half: var -= var * wd * lr.
    for i in range(var.size):
        var[i] = _h(var[i] - _h(_h(var[i] * wd, i, 0, c) * lr, i, 1, c), i, 2, c)


@kernel
def lion(var, grad, m, lr, beta_1, one_minus_beta_1, beta_2, one_minus_beta_2, c):
    # tf-keras Lion in half: var -= lr * sign(m*b1 + g*(1-b1)); m = m*b2 + g*(1-b2).
    for i in range(var.size):
        g = grad[i]
        d = _h(_h(m[i] * beta_1, i, 0, c) + _h(g * one_minus_beta_1, i, 1, c), i, 2, c)
        if d > 0:
            var[i] = _h(var[i] - lr, i, 3, c)
        elif d < 0:
            var[i] = _h(var[i] + lr, i, 3, c)
        m[i] = _h(_h(m[i] * beta_2, i, 4, c) + _h(g * one_minus_beta_2, i, 5, c), i, 6, c)
