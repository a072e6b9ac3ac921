"""Optimizer update kernels: one fused, in-place pass over each variable and its slots.

Every kernel works on flattened 1-D views and computes in the variable's dtype: the public wrappers
convert the scalar hyperparameters to that dtype (``np.float32`` for a float32 variable) so that Numba
types the whole update in float32, as the device would, instead of promoting it to float64.

The update rules follow Keras 2 ``optimizer_v2`` (TensorFlow 2.4–2.6) and TensorFlow's
``ResourceApply*`` training ops; each kernel's docstring gives its rule and the arithmetic operations
per element that :mod:`ipusim.keras.optimizers` reports as ``update_flops_per_element`` (a
multiply, add, subtract, divide, square root or max each counts as one).
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel

#: dtypes the update kernels accept for variables (and therefore slots and gradients).
UPDATE_DTYPES = ("float32", "float64")


# --- SGD -----------------------------------------------------------------------------------------


@kernel
def _sgd(var, grad, lr):
    for i in range(var.size):
        var[i] = var[i] - lr * grad[i]


@kernel
def _sgd_momentum(var, grad, velocity, lr, momentum, nesterov):
    for i in range(var.size):
        lg = lr * grad[i]
        v = momentum * velocity[i] - lg
        velocity[i] = v
        var[i] = var[i] + (momentum * v - lg if nesterov else v)


# --- RMSprop -------------------------------------------------------------------------------------


@kernel
def _rmsprop(var, grad, rms, mg, centered, lr, rho, one_minus_rho, epsilon):
    # ``centered``: mg holds the mean gradient and the denominator is rms - mg^2 (else mg unused).
    for i in range(var.size):
        g = grad[i]
        r = rho * rms[i] + one_minus_rho * (g * g)
        rms[i] = r
        if centered:
            m = rho * mg[i] + one_minus_rho * g
            mg[i] = m
            r = r - m * m
        var[i] = var[i] - lr * g / (np.sqrt(r) + epsilon)


@kernel
def _rmsprop_momentum(var, grad, rms, mg, mom, centered, lr, rho, one_minus_rho, momentum, epsilon):
    # ResourceApply[Centered]RMSProp's expression order: ms += (g^2 - ms)(1 - rho), and likewise
    # mg when ``centered``.
    for i in range(var.size):
        g = grad[i]
        r = rms[i] + (g * g - rms[i]) * one_minus_rho
        rms[i] = r
        if centered:
            m = mg[i] + (g - mg[i]) * one_minus_rho
            mg[i] = m
            r = r - m * m
        v = momentum * mom[i] + lr * g / np.sqrt(r + epsilon)
        mom[i] = v
        var[i] = var[i] - v


# --- Adam ----------------------------------------------------------------------------------------


@kernel
def _adam(
    var,
    grad,
    m,
    v,
    vhat,
    amsgrad,
    lr_t,
    beta_1,
    one_minus_beta_1,
    beta_2,
    one_minus_beta_2,
    epsilon,
):
    # ResourceApplyAdam's expression order: m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2).
    # ``amsgrad``: the denominator uses vhat = max(vhat, v) (else vhat unused).
    for i in range(var.size):
        g = grad[i]
        mi = m[i] + (g - m[i]) * one_minus_beta_1
        vi = v[i] + (g * g - v[i]) * one_minus_beta_2
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vi = max(vhat[i], vi)
            vhat[i] = vi
        var[i] = var[i] - (mi * lr_t) / (np.sqrt(vi) + epsilon)


# --- Adagrad -------------------------------------------------------------------------------------


@kernel
def _adagrad(var, grad, accumulator, lr, epsilon):
    for i in range(var.size):
        g = grad[i]
        a = accumulator[i] + g * g
        accumulator[i] = a
        var[i] = var[i] - lr * g / (np.sqrt(a) + epsilon)


# --- gradient clipping ---------------------------------------------------------------------------


@kernel
def _sum_squares(x):
    total = 0.0
    for i in range(x.size):
        xi = np.float64(x[i])
        total += xi * xi
    return total


@kernel
def _clip_by_value(x, low, high, out):
    for i in range(x.size):
        out[i] = min(max(x[i], low), high)


@kernel
def _scale(x, factor, out):
    for i in range(x.size):
        out[i] = x[i] * factor


# --- public wrappers -----------------------------------------------------------------------------


def _flat(a: np.ndarray) -> np.ndarray:
    """A 1-D view of a C-contiguous array (raises rather than silently copying)."""
    if not a.flags.c_contiguous:
        raise ValueError("optimizer kernels need C-contiguous arrays; got a strided view")
    return a.reshape(-1)


def sgd_update(var: np.ndarray, grad: np.ndarray, lr: float) -> None:
    """``var -= lr * grad`` in place. 2 FLOPs per element.

    Args:
        var: the variable's array (float32 or float64, C-contiguous), updated in place.
        grad: gradient, same shape and dtype as ``var``.
        lr: learning rate.
    """
    t = var.dtype.type
    _sgd(_flat(var), _flat(grad), t(lr))


def sgd_momentum_update(
    var: np.ndarray,
    grad: np.ndarray,
    velocity: np.ndarray,
    lr: float,
    momentum: float,
    nesterov: bool,
) -> None:
    """Keras momentum SGD (``ResourceApplyKerasMomentum``), in place.

    ``velocity = momentum * velocity - lr * grad``; then ``var += velocity``, or with Nesterov
    ``var += momentum * velocity - lr * grad``. 4 FLOPs per element (6 with Nesterov).
    """
    t = var.dtype.type
    _sgd_momentum(_flat(var), _flat(grad), _flat(velocity), t(lr), t(momentum), bool(nesterov))


def rmsprop_update(
    var: np.ndarray,
    grad: np.ndarray,
    rms: np.ndarray,
    lr: float,
    rho: float,
    epsilon: float,
    mg: np.ndarray | None = None,
    mom: np.ndarray | None = None,
    momentum: float = 0.0,
) -> None:
    """RMSprop as Keras 2 applies it, in place.

    ``rms = rho * rms + (1 - rho) * grad**2`` and, when centred (``mg`` given),
    ``mg = rho * mg + (1 - rho) * grad`` with ``denom = rms - mg**2`` (else ``denom = rms``).
    Without a momentum slot: ``var -= lr * grad / (sqrt(denom) + epsilon)``. With one (``mom``
    given; TensorFlow's ``ResourceApply[Centered]RMSProp``, epsilon *inside* the square root):
    ``mom = momentum * mom + lr * grad / sqrt(denom + epsilon)``; ``var -= mom``.

    FLOPs per element: 9 plain, 14 centred, 11 with momentum, 16 centred with momentum.
    """
    t = var.dtype.type
    v, g, r = _flat(var), _flat(grad), _flat(rms)
    lr_, rho_, one_minus_rho, eps = t(lr), t(rho), t(1) - t(rho), t(epsilon)
    m, centered = (r, False) if mg is None else (_flat(mg), True)  # rms stands in for no mg
    if mom is None:
        _rmsprop(v, g, r, m, centered, lr_, rho_, one_minus_rho, eps)
    else:
        hyper = (lr_, rho_, one_minus_rho, t(momentum), eps)
        _rmsprop_momentum(v, g, r, m, _flat(mom), centered, *hyper)


def adam_update(
    var: np.ndarray,
    grad: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    lr_t: float,
    beta_1: float,
    beta_2: float,
    epsilon: float,
    vhat: np.ndarray | None = None,
) -> None:
    """Adam with the bias correction folded into ``lr_t``, in place.

    ``m = b1 * m + (1 - b1) * grad``; ``v = b2 * v + (1 - b2) * grad**2``;
    ``var -= lr_t * m / (sqrt(v) + epsilon)``, where the caller passes
    ``lr_t = lr * sqrt(1 - b2**t) / (1 - b1**t)``. With ``vhat`` (AMSGrad) the denominator uses
    ``vhat = max(vhat, v)``. 12 FLOPs per element (13 with AMSGrad).
    """
    t = var.dtype.type
    # 1 - beta in the variable's precision, as TensorFlow computes T(1) - beta.
    args = (t(lr_t), t(beta_1), t(1) - t(beta_1), t(beta_2), t(1) - t(beta_2), t(epsilon))
    slots = (_flat(m), _flat(v), _flat(v if vhat is None else vhat), vhat is not None)
    _adam(_flat(var), _flat(grad), *slots, *args)


def adagrad_update(
    var: np.ndarray, grad: np.ndarray, accumulator: np.ndarray, lr: float, epsilon: float
) -> None:
    """Adagrad (``ResourceApplyAdagradV2``), in place.

    ``accumulator += grad**2``; ``var -= lr * grad / (sqrt(accumulator) + epsilon)``.
    7 FLOPs per element.
    """
    t = var.dtype.type
    _adagrad(_flat(var), _flat(grad), _flat(accumulator), t(lr), t(epsilon))


def l2_norm_squared(x: np.ndarray) -> float:
    """Sum of squares of every element of ``x``, accumulated in float64."""
    return float(_sum_squares(np.ascontiguousarray(x).reshape(-1)))


def clip_by_value(x: np.ndarray, clip: float) -> np.ndarray:
    """A new array with every element of ``x`` clipped to ``[-clip, clip]``."""
    src = np.ascontiguousarray(x)
    out = np.empty_like(src)
    t = src.dtype.type
    _clip_by_value(src.reshape(-1), t(-clip), t(clip), out.reshape(-1))
    return out


def scale(x: np.ndarray, factor: float) -> np.ndarray:
    """A new array ``x * factor`` (factor converted to ``x``'s dtype)."""
    src = np.ascontiguousarray(x)
    out = np.empty_like(src)
    _scale(src.reshape(-1), src.dtype.type(factor), out.reshape(-1))
    return out
