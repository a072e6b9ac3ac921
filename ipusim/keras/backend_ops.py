"""``keras.backend`` tensor functions (``K.mean``, ``K.square``, ``K.expand_dims``...).

Lambda layers, custom losses and custom metrics written for tf.keras call these on the symbolic
tensors of the model; here each one builds ipusim's graph ops (so it has spec inference, a
gradient and a cost). Called on NumPy values (outside any model) they compute with NumPy, as
the Keras backend computes eagerly. The semantics are Keras' (``keras/backend.py``): e.g. ``dot``
is a matrix product and ``l2_normalize`` divides by ``sqrt(max(sum(x**2), 1e-12))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import shape as gs
from ipusim.graph.spec import canonical_dtype

__all__ = [
    "abs",
    "batch_flatten",
    "cast",
    "clip",
    "concatenate",
    "dot",
    "exp",
    "expand_dims",
    "flatten",
    "int_shape",
    "l2_normalize",
    "log",
    "max",
    "maximum",
    "mean",
    "minimum",
    "ndim",
    "permute_dimensions",
    "pow",
    "relu",
    "reshape",
    "sigmoid",
    "softmax",
    "sqrt",
    "square",
    "squeeze",
    "stop_gradient",
    "sum",
    "tanh",
    "transpose",
]


def _symbolic(*values: Any) -> bool:
    for value in values:
        if isinstance(value, list | tuple) and _symbolic(*value):
            return True
        if isinstance(value, Symbol) or getattr(value, "_is_deferred_tensor", False):
            return True
    return False


def _either(graph_fn: Callable[..., Any], numpy_fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if _symbolic(*args):
            return graph_fn(*args, **kwargs)
        return numpy_fn(*(np.asarray(a) if not isinstance(a, list) else a for a in args), **kwargs)

    return call


# ----------------------------------------------------------------------------- elementwise
abs = _either(gm.abs, np.abs)  # noqa: A001 - Keras' name
square = _either(gm.square, np.square)
sqrt = _either(gm.sqrt, np.sqrt)
exp = _either(gm.exp, np.exp)
log = _either(gm.log, np.log)
tanh = _either(gm.tanh, np.tanh)
maximum = _either(gm.maximum, np.maximum)
minimum = _either(gm.minimum, np.minimum)
stop_gradient = _either(gm.stop_gradient, np.asarray)


def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``."""
    return gm.sigmoid(x) if _symbolic(x) else 1.0 / (1.0 + np.exp(-np.asarray(x)))


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None, threshold: float = 0.0) -> Any:
    """``max(x, 0)`` (the plain form; ``alpha`` / ``max_value`` / ``threshold`` as Keras)."""
    if alpha or threshold:
        from ipusim.errors import UnsupportedError

        raise UnsupportedError("keras.backend.relu: alpha and threshold are not simulated")
    y = gm.relu(x) if _symbolic(x) else np.maximum(np.asarray(x), 0)
    if max_value is not None:
        y = minimum(y, max_value)
    return y


def softmax(x: Any, axis: int = -1) -> Any:
    """Softmax over ``axis``."""
    if _symbolic(x):
        return gnn.softmax(x, axis=axis)
    e = np.exp(np.asarray(x) - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def clip(x: Any, min_value: float, max_value: float) -> Any:
    """``x`` clipped to ``[min_value, max_value]`` (``max_value`` raised to ``min_value``)."""
    max_value = max_value if max_value >= min_value else min_value
    return gm.clip(x, min_value, max_value) if _symbolic(x) else np.clip(x, min_value, max_value)


def pow(x: Any, a: Any) -> Any:  # noqa: A001 - Keras' name
    """``x ** a``."""
    return x**a if _symbolic(x) else np.power(np.asarray(x), a)


def cast(x: Any, dtype: Any) -> Any:
    """``x`` as ``dtype``."""
    dtype = canonical_dtype(dtype)
    return gm.cast(x, dtype) if _symbolic(x) else np.asarray(x).astype(dtype)


# ------------------------------------------------------------------------------ reductions
def _reduce(graph_fn: Callable[..., Any], numpy_fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if isinstance(axis, list):
            axis = tuple(axis)
        if _symbolic(x):
            return graph_fn(x, axis, keepdims=keepdims)
        return numpy_fn(np.asarray(x), axis=axis, keepdims=keepdims)

    return call


mean = _reduce(gm.reduce_mean, np.mean)
sum = _reduce(gm.reduce_sum, np.sum)  # noqa: A001 - Keras' name
max = _reduce(gm.reduce_max, np.max)  # noqa: A001 - Keras' name


def l2_normalize(x: Any, axis: Any = None) -> Any:
    """``x / sqrt(max(sum(x**2, axis), 1e-12))`` (tf.math.l2_normalize, as Keras calls it)."""
    if not _symbolic(x):
        x = np.asarray(x)
        return x / np.sqrt(np.maximum(np.sum(x * x, axis=axis, keepdims=True), 1e-12))
    squares = gm.reduce_sum(gm.square(x), axis, keepdims=True)
    return gm.divide(x, gm.sqrt(gm.maximum(squares, 1e-12)))


# ----------------------------------------------------------------------------------- shapes
def int_shape(x: Any) -> tuple[int | None, ...]:
    """The static shape as a tuple of ints (None for unknown sizes); NumPy's for other values."""
    shape = getattr(x, "shape", None)
    if shape is None:
        return tuple(np.shape(x))
    return tuple(None if d is None else int(d) for d in shape)


def ndim(x: Any) -> int:
    """The rank."""
    return len(int_shape(x))


expand_dims = _either(
    lambda x, axis=-1: gs.expand_dims(x, axis), lambda x, axis=-1: np.expand_dims(x, axis)
)
squeeze = _either(lambda x, axis: gs.squeeze(x, axis), lambda x, axis: np.squeeze(x, axis))
reshape = _either(
    lambda x, shape: gs.reshape(x, tuple(shape)), lambda x, shape: np.reshape(x, shape)
)
flatten = _either(lambda x: gs.reshape(x, (-1,)), lambda x: np.reshape(x, (-1,)))


def batch_flatten(x: Any) -> Any:
    """``x`` as (batch, everything else)."""
    if not _symbolic(x):
        return np.reshape(x, (len(x), -1))
    batch = x.shape[0] if x.shape[0] is not None else -1
    return gs.reshape(x, (batch, int(np.prod(x.shape[1:]))))


def permute_dimensions(x: Any, pattern: Any) -> Any:
    """Axes reordered by ``pattern``."""
    return gs.transpose(x, tuple(pattern)) if _symbolic(x) else np.transpose(x, tuple(pattern))


def transpose(x: Any) -> Any:
    """Axes reversed."""
    return gs.transpose(x) if _symbolic(x) else np.transpose(x)


def concatenate(tensors: list[Any], axis: int = -1) -> Any:
    """Join along ``axis``."""
    if _symbolic(tensors):
        rank = len(next(t for t in tensors if _symbolic(t)).shape)
        return gs.concat(list(tensors), axis % rank)
    return np.concatenate([np.asarray(t) for t in tensors], axis=axis)


def dot(x: Any, y: Any) -> Any:
    """The matrix product of two rank-2 tensors (Keras' ``dot`` for 2-D inputs)."""
    return gnn.matmul(x, y) if _symbolic(x, y) else np.dot(x, y)
