"""Kernels for the TensorFlow math ops beyond the core activations: trigonometric, hyperbolic and
error functions, rounding, predicates, ``pow`` / ``atan2`` / floor division, ``where``-style
selection, scans (cumulative sum / product) and top-k.

Unary functions share one kernel that switches on an integer code (``UNARY_CODES``): one compiled
version per dtype serves every function. Scans and top-k work on a 2-D ``(rows, n)`` view with the
reduced axis last; the wrappers move the axis there and back.
"""

from __future__ import annotations

import math

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.elementwise import _binary, _broadcasting

#: Unary function name -> code of :func:`_unary_fn`.
UNARY_CODES: dict[str, int] = {
    name: i
    for i, name in enumerate(
        (
            "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
            "atanh", "erf", "erfc", "floor", "ceil", "round", "sign", "reciprocal", "rsqrt",
            "expm1", "log1p", "lgamma", "softsign", "elu", "selu", "relu6",
        )
    )
}  # fmt: skip

#: Predicate name -> code of :func:`_predicate`.
PREDICATE_CODES: dict[str, int] = {"is_nan": 0, "is_inf": 1, "is_finite": 2}

# SELU constants: Klambauer et al. 2017, as tf.nn.selu (S: tensorflow/core/kernels/relu_op_functor.h)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@kernel
def _round_half_even(v):
    r = math.floor(v)
    d = v - r
    if d > 0.5 or (d == 0.5 and r % 2.0 == 1.0):
        r += 1.0
    return r


@kernel
def _unary_value(v, code):  # noqa: C901 - one branch per function
    if code == 0:
        return math.sin(v)
    if code == 1:
        return math.cos(v)
    if code == 2:
        return math.tan(v)
    if code == 3:
        return math.asin(v) if -1.0 <= v <= 1.0 else math.nan
    if code == 4:
        return math.acos(v) if -1.0 <= v <= 1.0 else math.nan
    if code == 5:
        return math.atan(v)
    if code == 6:
        return math.sinh(v)
    if code == 7:
        return math.cosh(v)
    if code == 8:
        return math.asinh(v)
    if code == 9:
        return math.acosh(v) if v >= 1.0 else math.nan
    if code == 10:
        if v == 1.0:
            return math.inf
        if v == -1.0:
            return -math.inf
        return math.atanh(v) if -1.0 < v < 1.0 else math.nan
    if code == 11:
        return math.erf(v)
    if code == 12:
        return math.erfc(v)
    if code == 13:
        return math.floor(v)
    if code == 14:
        return math.ceil(v)
    if code == 15:
        return _round_half_even(v)
    if code == 16:
        return (v > 0) - (v < 0) if v == v else v
    if code == 17:
        return 1.0 / v
    if code == 18:
        return 1.0 / math.sqrt(v) if v >= 0.0 else math.nan
    if code == 19:
        return math.expm1(v)
    if code == 20:
        return math.log1p(v) if v >= -1.0 else math.nan
    if code == 21:
        return math.lgamma(v)
    if code == 22:
        return v / (1.0 + abs(v))
    if code == 23:
        return v if v > 0.0 else math.expm1(v)
    if code == 24:
        return _SELU_SCALE * (v if v > 0.0 else _SELU_ALPHA * math.expm1(v))
    return min(max(v, 0.0), 6.0) if v == v else v


@kernel
def _unary_fn(x, code, out):
    for i in range(x.size):
        out[i] = _unary_value(x[i], code)


@kernel
def _predicate(x, code, out):
    for i in range(x.size):
        v = x[i]
        if code == 0:
            out[i] = v != v
        elif code == 1:
            out[i] = v == math.inf or v == -math.inf
        else:
            out[i] = v == v and v != math.inf and v != -math.inf


def unary(x: np.ndarray, fn: str) -> np.ndarray:
    """``fn`` (a key of ``UNARY_CODES``) of every element, in ``x``'s dtype."""
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    _unary_fn(x.reshape(-1), UNARY_CODES[fn], out.reshape(-1))
    return out


def predicate(x: np.ndarray, fn: str) -> np.ndarray:
    """``is_nan`` / ``is_inf`` / ``is_finite`` of every element, as bool."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, dtype=np.bool_)
    _predicate(x.reshape(-1), PREDICATE_CODES[fn], out.reshape(-1))
    return out


# ---------------------------------------------------------------------------- binary
@kernel
def _select(c, a, b):
    return np.where(c, a, b)


_BINARY = {
    name: _broadcasting(ufunc)
    for name, ufunc in (
        ("pow", np.power), ("atan2", np.arctan2), ("floordiv", np.floor_divide),
        ("floormod", np.remainder), ("bitwise_and", np.bitwise_and),
        ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor),
        ("left_shift", np.left_shift), ("right_shift", np.right_shift),
    )
}  # fmt: skip


def binary(a: np.ndarray, b: np.ndarray, fn: str) -> np.ndarray:
    """``fn`` (a key of ``_BINARY``) of ``a`` and ``b`` with NumPy broadcasting."""
    return _binary(_BINARY[fn], a.dtype, a, b)


def select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` where ``cond``, else ``b`` (all three broadcast)."""
    return _binary(_select, a.dtype, cond, a, b)


# ---------------------------------------------------------------------------- scans, top-k
@kernel
def _scan_rows(x, product, exclusive, reverse, out):
    rows, n = x.shape
    for r in range(rows):
        acc = 1.0 if product else 0.0  # float64 accumulator (ints up to 2**53 stay exact)
        for j in range(n):
            i = n - 1 - j if reverse else j
            v = x[r, i]
            if exclusive:
                out[r, i] = acc
            acc = acc * v if product else acc + v
            if not exclusive:
                out[r, i] = acc


@kernel
def _top_k_rows(x, k, values, indices):
    rows = x.shape[0]
    for r in range(rows):
        # Stable sort on -x: among equal values the lower index comes first, as tf.math.top_k.
        order = np.argsort(-x[r], kind="mergesort")
        for j in range(k):
            indices[r, j] = order[j]
            values[r, j] = x[r, order[j]]


def _as_rows(x: np.ndarray, axis: int) -> tuple[np.ndarray, tuple[int, ...]]:
    moved = np.moveaxis(x, axis, -1)
    return np.ascontiguousarray(moved).reshape(-1, x.shape[axis] if x.ndim else 1), moved.shape


def scan(x: np.ndarray, axis: int, product: bool, exclusive: bool, reverse: bool) -> np.ndarray:
    """Cumulative sum (or product) of ``x`` along ``axis``, as ``tf.math.cumsum`` / ``cumprod``."""
    rows, moved_shape = _as_rows(x, axis)
    out = np.empty_like(rows)
    _scan_rows(rows, bool(product), bool(exclusive), bool(reverse), out)
    return np.moveaxis(out.reshape(moved_shape), -1, axis)


def top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest values along the last axis (descending) and their int32 indices."""
    rows, moved_shape = _as_rows(x, x.ndim - 1)
    values = np.empty((rows.shape[0], k), dtype=x.dtype)
    indices = np.empty((rows.shape[0], k), dtype=np.int32)
    _top_k_rows(rows, int(k), values, indices)
    shape = moved_shape[:-1] + (k,)
    return values.reshape(shape), indices.reshape(shape)
