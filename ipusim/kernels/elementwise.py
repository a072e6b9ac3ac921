"""Elementwise kernels: broadcasting binary arithmetic, unary activations and their gradients.

Unary kernels loop over flat, contiguous 1-D views (``_name(x, out)``); the public wrappers do the
flattening. Binary kernels are Numba array expressions, which broadcast like NumPy; the wrappers
first give both operands the same rank so that one compiled version serves each rank.
Every kernel is dtype-generic: it computes in the dtype of its inputs (float32 or float64).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim._jit import kernel

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715


# ---------------------------------------------------------------------------- binary (broadcasting)
def _named_kernel(fn: Callable[..., Any], kind: str, op: Callable[..., Any]) -> Callable[..., Any]:
    # A name of its own per op: Numba names a cached kernel's files after its qualified name, and
    # kernels sharing files could overwrite each other's entries when processes compile at once.
    fn.__name__ = fn.__qualname__ = f"_{kind}_{op.__name__}"
    return kernel(fn)


def _broadcasting(op: Callable[..., Any]) -> Callable[..., Any]:
    """A kernel applying ``op`` (an operator or NumPy ufunc) to two arrays as a Numba array
    expression: one compiled, cached version per ``op`` and operand types."""

    def apply(a, b):
        return op(a, b)

    return _named_kernel(apply, "broadcasting", op)


def _masking(compare: Callable[..., Any]) -> Callable[..., Any]:
    """A kernel ``dy * compare(a, b)``: the gradient through a comparison-selected operand."""

    def apply(dy, a, b):
        return dy * compare(a, b)

    return _named_kernel(apply, "masking", compare)


_add, _subtract, _multiply, _divide, _maximum, _minimum, _equal = (
    _broadcasting(op)
    for op in (operator.add, operator.sub, operator.mul, operator.truediv, np.maximum,
               np.minimum, operator.eq)
)  # fmt: skip
_MASKS = {
    "ge": _masking(operator.ge),
    "gt": _masking(operator.gt),
    "le": _masking(operator.le),
    "lt": _masking(operator.lt),
}


def _same_rank(*arrays: np.ndarray) -> list[np.ndarray]:
    rank = max(a.ndim for a in arrays)
    return [a.reshape((1,) * (rank - a.ndim) + a.shape) for a in arrays]


def _binary(fn: Callable, dtype: np.dtype, *arrays: np.ndarray) -> np.ndarray:
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    out = fn(*_same_rank(*arrays))
    # Numba returns a Python scalar for 0-d operands and widens small ints; restore dtype and rank.
    return np.asarray(out, dtype=dtype).reshape(shape)


def _binary_op(
    name: str, fn: Callable[..., Any], doc: str, dtype: np.dtype | None = None
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The public wrapper ``name(a, b)`` of the broadcasting kernel ``fn``: its result has the
    operands' dtype, or ``dtype``."""

    def wrapper(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _binary(fn, a.dtype if dtype is None else dtype, a, b)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = doc
    return wrapper


add = _binary_op("add", _add, "``a + b`` with NumPy broadcasting.")
subtract = _binary_op("subtract", _subtract, "``a - b`` with NumPy broadcasting.")
multiply = _binary_op("multiply", _multiply, "``a * b`` with NumPy broadcasting.")
divide = _binary_op("divide", _divide, "``a / b`` with NumPy broadcasting (float operands).")
maximum = _binary_op("maximum", _maximum, "Elementwise maximum with broadcasting (NaN propagates).")
minimum = _binary_op("minimum", _minimum, "Elementwise minimum with broadcasting (NaN propagates).")
equal = _binary_op(
    "equal",
    _equal,
    "Elementwise ``a == b`` with broadcasting, as a bool array.",
    np.dtype(np.bool_),
)


def masked_grad(dy: np.ndarray, a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    """``dy`` where ``a <mode> b`` holds (mode: ge, gt, le, lt), else 0; shape of ``dy``."""
    return _binary(_MASKS[mode], dy.dtype, dy, a, b)


# ---------------------------------------------------------------------------- unary
def _pointwise(ufunc: Callable[..., Any]) -> Callable[..., Any]:
    """A kernel ``out[i] = ufunc(x[i])`` over flat views (one compiled version per ufunc)."""

    def apply(x, out):
        for i in range(x.size):
            out[i] = ufunc(x[i])

    return _named_kernel(apply, "pointwise", ufunc)


_negative, _abs, _exp, _log, _sqrt, _tanh = (
    _pointwise(f) for f in (operator.neg, abs, np.exp, np.log, np.sqrt, np.tanh)
)


@kernel
def _square(x, out):
    for i in range(x.size):
        out[i] = x[i] * x[i]


@kernel
def _relu(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = 0.0 if v < 0.0 else v  # NaN passes through, as tf.nn.relu


@kernel
def _stable_sigmoid(v):
    # ``1 / (1 + e^-v)`` that never overflows: exp is only taken of a non-positive number.
    if v >= 0.0:
        return 1.0 / (1.0 + np.exp(-v))
    e = np.exp(v)
    return e / (1.0 + e)


@kernel
def _sigmoid(x, out):
    for i in range(x.size):
        out[i] = _stable_sigmoid(x[i])


@kernel
def _gelu_erf(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + math.erf(v * _INV_SQRT_2))


@kernel
def _gelu_tanh(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + np.tanh(_SQRT_2_OVER_PI * (v + _GELU_CUBIC * v * v * v)))


@kernel
def _softplus(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = max(v, 0.0) + np.log1p(np.exp(-abs(v)))


@kernel
def _clip(x, lo, hi, out):
    for i in range(x.size):
        v = x[i]
        if v < lo:
            v = lo
        elif v > hi:
            v = hi
        out[i] = v


@kernel
def _cast(x, out):
    for i in range(x.size):
        out[i] = x[i]


@kernel
def _cast_to_bool(x, out):
    for i in range(x.size):
        out[i] = x[i] != 0


def _flat(fn: Callable, *arrays: np.ndarray, scalars: tuple[float, ...] = ()) -> np.ndarray:
    # Runs ``fn(*flat arrays, *scalars, flat out)``: unary kernels and their gradients; ``out`` is
    # like the first array.
    flat = [np.asarray(a, order="C") for a in arrays]
    out = np.empty_like(flat[0])
    fn(*(a.reshape(-1) for a in flat), *scalars, out.reshape(-1))
    return out


def _flat_op(name: str, fn: Callable[..., Any], doc: str) -> Callable[..., np.ndarray]:
    """The public wrapper ``name(*arrays)`` of the flat kernel ``fn`` (see :func:`_flat`)."""

    def wrapper(*arrays: np.ndarray) -> np.ndarray:
        return _flat(fn, *arrays)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = doc
    return wrapper


negative = _flat_op("negative", _negative, "``-x``.")
exp = _flat_op("exp", _exp, "``e**x``.")
log = _flat_op("log", _log, "Natural logarithm (``-inf`` at 0, NaN below).")
sqrt = _flat_op("sqrt", _sqrt, "Square root.")
square = _flat_op("square", _square, "``x * x``.")
abs_ = _flat_op("abs_", _abs, "``|x|``.")
relu = _flat_op("relu", _relu, "``max(x, 0)``.")
sigmoid = _flat_op(
    "sigmoid", _sigmoid, "Logistic function, evaluated without overflow for large ``|x|``."
)
tanh = _flat_op("tanh", _tanh, "Hyperbolic tangent.")


def gelu(x: np.ndarray, approximate: bool = False) -> np.ndarray:
    """GELU: ``x * Phi(x)`` (erf form), or the tanh approximation when ``approximate``."""
    return _flat(_gelu_tanh if approximate else _gelu_erf, x)


softplus = _flat_op(
    "softplus", _softplus, "``log(1 + e**x)`` in the stable form ``max(x, 0) + log1p(e**-|x|)``."
)


def clip(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``x`` clipped to ``[lo, hi]`` (NaN passes through)."""
    return _flat(_clip, x, scalars=(x.dtype.type(lo), x.dtype.type(hi)))


def cast(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` converted to ``dtype`` (float to int truncates toward zero; to bool tests ``!= 0``)."""
    x = np.asarray(x, order="C")
    out = np.empty(x.shape, dtype=dtype)
    fn = _cast_to_bool if out.dtype == np.bool_ else _cast
    fn(x.reshape(-1), out.reshape(-1))
    return out


# ---------------------------------------------------------------------------- unary gradients
@kernel
def _relu_grad(dy, y, out):
    for i in range(dy.size):
        out[i] = dy[i] if y[i] > 0.0 else 0.0


@kernel
def _sigmoid_grad(dy, y, out):
    for i in range(dy.size):
        out[i] = dy[i] * y[i] * (1.0 - y[i])


@kernel
def _tanh_grad(dy, y, out):
    for i in range(dy.size):
        out[i] = dy[i] * (1.0 - y[i] * y[i])


@kernel
def _gelu_erf_grad(dy, x, out):
    for i in range(dy.size):
        v = x[i]
        cdf = 0.5 * (1.0 + math.erf(v * _INV_SQRT_2))
        pdf = _INV_SQRT_2PI * np.exp(-0.5 * v * v)
        out[i] = dy[i] * (cdf + v * pdf)


@kernel
def _gelu_tanh_grad(dy, x, out):
    for i in range(dy.size):
        v = x[i]
        t = np.tanh(_SQRT_2_OVER_PI * (v + _GELU_CUBIC * v * v * v))
        du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * v * v)
        out[i] = dy[i] * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du)


@kernel
def _softplus_grad(dy, x, out):
    for i in range(dy.size):
        out[i] = dy[i] * _stable_sigmoid(x[i])


@kernel
def _sqrt_grad(dy, y, out):
    for i in range(dy.size):
        out[i] = dy[i] * 0.5 / y[i]


@kernel
def _square_grad(dy, x, out):
    for i in range(dy.size):
        out[i] = 2.0 * dy[i] * x[i]


@kernel
def _abs_grad(dy, x, out):
    for i in range(dy.size):
        v = x[i]
        out[i] = dy[i] if v > 0.0 else (-dy[i] if v < 0.0 else 0.0)


@kernel
def _clip_grad(dy, x, lo, hi, out):
    for i in range(dy.size):
        v = x[i]
        out[i] = dy[i] if (v >= lo and v <= hi) else 0.0


relu_grad = _flat_op(
    "relu_grad", _relu_grad, "``dy`` where the relu output ``y`` is positive, else 0."
)
sigmoid_grad = _flat_op(
    "sigmoid_grad", _sigmoid_grad, "``dy * y * (1 - y)`` with ``y`` the sigmoid output."
)
tanh_grad = _flat_op("tanh_grad", _tanh_grad, "``dy * (1 - y**2)`` with ``y`` the tanh output.")


def gelu_grad(dy: np.ndarray, x: np.ndarray, approximate: bool = False) -> np.ndarray:
    """``dy * gelu'(x)`` for the erf form or the tanh approximation."""
    return _flat(_gelu_tanh_grad if approximate else _gelu_erf_grad, dy, x)


softplus_grad = _flat_op("softplus_grad", _softplus_grad, "``dy * sigmoid(x)``.")
sqrt_grad = _flat_op("sqrt_grad", _sqrt_grad, "``dy / (2 y)`` with ``y`` the sqrt output.")
square_grad = _flat_op("square_grad", _square_grad, "``2 x dy``.")
abs_grad = _flat_op("abs_grad", _abs_grad, "``sign(x) * dy`` (0 at ``x == 0``, as TensorFlow).")


def clip_grad(dy: np.ndarray, x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``dy`` where ``lo <= x <= hi`` (bounds included, as tf.clip_by_value), else 0."""
    return _flat(_clip_grad, dy, x, scalars=(x.dtype.type(lo), x.dtype.type(hi)))


# ---------------------------------------------------------------------------- broadcasting sums
@kernel
def _sum_axes_keep(x, keep_shape_rows, keep_cols):
    # Reduce a 2-D view (rows to sum over, cols to keep) into a vector of length keep_cols.
    out = np.zeros(keep_cols, dtype=x.dtype)
    for i in range(keep_shape_rows):
        for j in range(keep_cols):
            out[j] += x[i, j]
    return out


def sum_to_shape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``x`` over the axes that broadcasting expanded, giving an array of ``shape``.

    Used by the gradients of broadcasting ops.
    """
    if x.shape == tuple(shape):
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1
    )
    # Move reduced axes first so the reduction is a contiguous rows x cols sum.
    kept = [ax for ax in range(x.ndim) if ax not in axes]
    moved = np.ascontiguousarray(np.transpose(x, axes + tuple(kept)))
    rows = int(np.prod([x.shape[ax] for ax in axes], dtype=np.int64))
    cols = int(np.prod([x.shape[ax] for ax in kept], dtype=np.int64))
    out = _sum_axes_keep(moved.reshape(rows, cols), rows, cols)
    return out.reshape(shape)
