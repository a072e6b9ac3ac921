"""float16 updates of Adadelta and Adamax, one binary16 rounding per operation (as
:mod:`ipusim.kernels.half_optim`, whose ``_h`` and :class:`~ipusim.kernels.half_optim.HalfUpdate`
they use), in the expression order of TensorFlow's ``ResourceApplyAdadelta`` and
``ResourceApplyAdaMax`` functors on ``Eigen::half`` (each operation computed in float and
rounded). Eigen's half ``rsqrt`` is ``1 / sqrt`` in float, rounded once.
"""

from __future__ import annotations

import numpy as np

from ipusim.kernels._jit import kernel
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
