"""Optimizer updates of float16 variables, one binary16 rounding per arithmetic operation.

A Keras optimizer updating float16 variables keeps float16 slots and casts its hyperparameters to
float16; TensorFlow's update ops then compute in half precision, every elementary operation
rounded to binary16. These kernels do the same: each operation is computed in float32 on binary16
operands and rounded (nearest-even, or stochastically with ``esr``; saturating or NaN on
overflow), which equals the IEEE half-precision operation. The formulas are TensorFlow's update
ops' (``ResourceApplyGradientDescent``, ``ResourceApplyKerasMomentum``, ``ResourceApplyRMSProp``,
``ResourceApplyCenteredRMSProp``, ``ResourceApplyAdam``, ``ResourceApplyAdamWithAmsgrad``,
``ResourceApplyAdagradV2``), and Keras' Python RMSprop without momentum, operation for operation.

Arrays are float32 working copies holding binary16 values (the wrappers widen the float16 arrays
and write the results back). The scalars are float16 values too. Each kernel returns the number
of overflows. The random bits of operation ``o`` on element ``i`` are position ``i * 16 + o`` of
the stream ``key``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.half import _GOLDEN, round_value
from ipusim.kernels.random import _mix64

_MASK64 = (1 << 64) - 1
_OPS = 16  # random-stream positions reserved per element


@kernel
def _h(v, i, op, c):
    # One half-precision rounding of operation ``op`` on element ``i``; c = (key, stochastic,
    # nan_on_overflow, scratch, scratch bits, overflow count).
    key, stochastic, nan_on_overflow, scratch, bits, count = c
    r = np.uint64(0)
    if stochastic:
        r = _mix64(key + (np.uint64(i * _OPS + op) + np.uint64(1)) * np.uint64(_GOLDEN))
    value, overflowed = round_value(np.float32(v), r, stochastic, nan_on_overflow, scratch, bits)
    if overflowed:
        count[0] += 1
    return value


@kernel
def _sgd(var, grad, lr, c):
    for i in range(var.size):
        var[i] = _h(var[i] - _h(lr * grad[i], i, 0, c), i, 1, c)


@kernel
def _momentum(var, grad, accum, lr, momentum, nesterov, c):
    # ResourceApplyKerasMomentum: accum = accum*momentum - g*lr; var += accum
    # (Nesterov: var += accum*momentum - g*lr).
    for i in range(var.size):
        lg = _h(grad[i] * lr, i, 0, c)
        a = _h(_h(accum[i] * momentum, i, 1, c) - lg, i, 2, c)
        accum[i] = a
        step = _h(_h(a * momentum, i, 3, c) - lg, i, 4, c) if nesterov else a
        var[i] = _h(var[i] + step, i, 5, c)


@kernel
def _rmsprop(var, grad, rms, mg, centered, lr, rho, one_minus_rho, eps, c):
    # Keras' Python update (no momentum slot): rms = rho*rms + (1-rho)*g^2;
    # [mg = rho*mg + (1-rho)*g; denom = rms - mg^2]; var -= lr*g / (sqrt(denom) + eps).
    for i in range(var.size):
        g = grad[i]
        gg = _h(g * g, i, 0, c)
        r = _h(_h(rho * rms[i], i, 1, c) + _h(one_minus_rho * gg, i, 2, c), i, 3, c)
        rms[i] = r
        denom = r
        if centered:
            m = _h(_h(rho * mg[i], i, 4, c) + _h(one_minus_rho * g, i, 5, c), i, 6, c)
            mg[i] = m
            denom = _h(r - _h(m * m, i, 7, c), i, 8, c)
        root = _h(_h(np.sqrt(denom), i, 9, c) + eps, i, 10, c)
        step = _h(_h(lr * g, i, 11, c) / root, i, 12, c)
        var[i] = _h(var[i] - step, i, 13, c)


@kernel
def _rmsprop_momentum(var, grad, ms, mg, mom, centered, lr, one_minus_rho, momentum, eps, c):
    # ResourceApply[Centered]RMSProp: ms += (g^2 - ms)*(1-rho); [mg += (g - mg)*(1-rho);
    # denom = ms - mg^2 + eps, else ms + eps]; mom = mom*momentum + lr*g/sqrt(denom); var -= mom.
    for i in range(var.size):
        g = grad[i]
        gg = _h(g * g, i, 0, c)
        s = _h(ms[i] + _h(_h(gg - ms[i], i, 1, c) * one_minus_rho, i, 2, c), i, 3, c)
        ms[i] = s
        denom = s
        if centered:
            m = _h(mg[i] + _h(_h(g - mg[i], i, 4, c) * one_minus_rho, i, 5, c), i, 6, c)
            mg[i] = m
            denom = _h(s - _h(m * m, i, 7, c), i, 8, c)
        denom = _h(denom + eps, i, 9, c)
        step = _h(_h(lr * g, i, 10, c) / _h(np.sqrt(denom), i, 11, c), i, 12, c)
        v = _h(_h(mom[i] * momentum, i, 13, c) + step, i, 14, c)
        mom[i] = v
        var[i] = _h(var[i] - v, i, 15, c)


@kernel
def _adam(var, grad, m, v, vhat, amsgrad, alpha, one_minus_beta_1, one_minus_beta_2, eps, c):
    # ResourceApplyAdam[WithAmsgrad]: m += (g - m)*(1-b1); v += (g^2 - v)*(1-b2);
    # [vhat = max(vhat, v)]; var -= m*alpha / (sqrt(v or vhat) + eps).
    for i in range(var.size):
        g = grad[i]
        mi = _h(m[i] + _h(_h(g - m[i], i, 0, c) * one_minus_beta_1, i, 1, c), i, 2, c)
        gg = _h(g * g, i, 3, c)
        vi = _h(v[i] + _h(_h(gg - v[i], i, 4, c) * one_minus_beta_2, i, 5, c), i, 6, c)
        m[i] = mi
        v[i] = vi
        denom_v = vi
        if amsgrad:
            denom_v = max(vhat[i], vi)
            vhat[i] = denom_v
        root = _h(_h(np.sqrt(denom_v), i, 7, c) + eps, i, 8, c)
        step = _h(_h(mi * alpha, i, 9, c) / root, i, 10, c)
        var[i] = _h(var[i] - step, i, 11, c)


@kernel
def _adagrad(var, grad, accum, lr, eps, c):
    # ResourceApplyAdagradV2: accum += g^2; var -= lr*g / (sqrt(accum) + eps).
    for i in range(var.size):
        g = grad[i]
        a = _h(accum[i] + _h(g * g, i, 0, c), i, 1, c)
        accum[i] = a
        root = _h(_h(np.sqrt(a), i, 2, c) + eps, i, 3, c)
        step = _h(_h(lr * g, i, 4, c) / root, i, 5, c)
        var[i] = _h(var[i] - step, i, 6, c)


class HalfUpdate:
    """One optimizer step on float16 variables: widen, update per operation, write back.

    Args:
        stochastic: round stochastically (``esr`` ON or REPLICA_IDENTICAL_ONLY).
        key: stream key of this variable's update.
        nan_on_overflow: overflow gives NaN instead of saturating.

    Attributes:
        overflows: operations whose result overflowed the half range.
    """

    def __init__(self, stochastic: bool, key: int, nan_on_overflow: bool) -> None:
        self.stochastic = bool(stochastic)
        self.key = np.uint64(int(key) & _MASK64)
        self.nan = bool(nan_on_overflow)
        self.overflows = 0
        self._scratch = np.empty(1, dtype=np.float32)
        self._bits = self._scratch.view(np.uint32)
        self._count = np.zeros(1, dtype=np.int64)

    def _context(self) -> tuple:
        return (self.key, self.stochastic, self.nan, self._scratch, self._bits, self._count)

    def run(self, kernel_name: Any, arrays: Sequence[np.ndarray | None], *scalars: object) -> None:
        """Apply kernel ``kernel_name`` to float16 ``arrays`` (updated in place) and scalars.

        ``arrays`` is ``[var, grad, *slots]`` in the kernel's order; None slots are passed as
        empty arrays.
        """
        wide = [
            np.zeros(0, np.float32) if a is None else a.astype(np.float32).reshape(-1)
            for a in arrays
        ]
        self._count[0] = 0
        # A name of this module's kernels, or a kernel of another module built on ``_h``.
        fn = _KERNELS[kernel_name] if isinstance(kernel_name, str) else kernel_name
        fn(*wide, *scalars, self._context())
        self.overflows += int(self._count[0])
        for original, updated in zip(arrays, wide):
            if original is not None and original is not arrays[1]:
                original.reshape(-1)[...] = updated.astype(np.float16)


_KERNELS = {
    "sgd": _sgd,
    "momentum": _momentum,
    "rmsprop": _rmsprop,
    "rmsprop_momentum": _rmsprop_momentum,
    "adam": _adam,
    "adagrad": _adagrad,
}
