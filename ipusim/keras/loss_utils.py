"""Helpers shared by the Keras loss functions: label checks and eager evaluation.

Loss functions are built from graph ops so that they run inside the traced training graph and
are differentiated with it. Called on NumPy arrays instead (as ``tf.keras.losses.hinge(a, b)``
or the loss-based metrics do), :func:`eager_capable` traces the function once per shape/dtype and
runs it with the graph executor, so the host and the device compute the same formula.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ipusim.errors import InputDataError
from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as m
from ipusim.keras import backend

if TYPE_CHECKING:
    from ipusim.graph.execute import Executor

#: Traced eager evaluators kept per (function, arguments, input specs); bounded so that a run
#: with many different shapes does not grow without limit.
_EAGER_CACHE: dict[tuple[Any, ...], Executor] = {}
_EAGER_CACHE_SIZE = 64


def check_same_shape(y_true: Symbol, y_pred: Symbol, loss_name: str, hint: str = "") -> None:
    """Raise ValueError unless the labels have the predictions' shape (unknown dims match)."""
    if y_true.ndim != y_pred.ndim or any(
        a is not None and b is not None and a != b for a, b in zip(y_true.shape, y_pred.shape)
    ):
        raise InputDataError(
            f"{loss_name} expects labels of the same shape as the predictions "
            f"{y_pred.shape}; received labels of shape {y_true.shape}.{hint}"
        )


def as_float(y_true: Symbol, like: Symbol) -> Symbol:
    """``y_true`` cast to the dtype of ``like`` (a no-op when they match)."""
    return y_true if y_true.dtype == like.dtype else m.cast(y_true, like.dtype)


def prepare_labels(y_true: Symbol, y_pred: Symbol, loss_name: str, hint: str = "") -> Symbol:
    """Labels checked to have the predictions' shape, then cast to their dtype."""
    check_same_shape(y_true, y_pred, loss_name, hint)
    return as_float(y_true, y_pred)


def smooth_labels(y_true: Symbol, label_smoothing: float, classes: int) -> Symbol:
    """Keras' label smoothing: ``y * (1 - s) + s / classes`` (``classes`` is 2 for binary
    labels; ``s / 2`` is exactly Keras' ``0.5 * s``)."""
    return m.add(m.multiply(y_true, 1.0 - label_smoothing), label_smoothing / classes)


def softmax_logits(y_pred: Symbol) -> Symbol | None:
    """The logits of ``y_pred`` when it is the output of a softmax over the last axis."""
    node = y_pred.node
    if node.op.name == "softmax" and node.attrs.get("axis", -1) in (-1, y_pred.ndim - 1):
        return node.inputs[0]
    return None


def float_array(y_pred: np.ndarray) -> np.ndarray:
    """``y_pred`` as is when it holds floats, else cast to ``backend.floatx()``."""
    return y_pred if y_pred.dtype.kind == "f" else y_pred.astype(backend.floatx())


def _evaluator(
    fn: Callable[..., Symbol], kwargs: dict[str, Any], t: np.ndarray, p: np.ndarray
) -> Executor:
    from ipusim.graph.execute import Executor
    from ipusim.graph.graph import Graph
    from ipusim.graph.spec import TensorSpec

    key = (fn, tuple(sorted(kwargs.items())), t.shape, t.dtype.name, p.shape, p.dtype.name)
    try:
        cached, hashable = _EAGER_CACHE.get(key), True
    except TypeError:  # unhashable keyword argument: trace without caching
        cached, hashable = None, False
    if cached is not None:
        return cached
    graph = Graph(f"{getattr(fn, '__name__', 'loss')}_eager")
    t_sym = graph.placeholder(TensorSpec(t.shape, t.dtype.name))
    p_sym = graph.placeholder(TensorSpec.from_array(p))
    executor = Executor(graph, [fn(t_sym, p_sym, **kwargs)], [t_sym, p_sym])
    if hashable:
        if len(_EAGER_CACHE) >= _EAGER_CACHE_SIZE:
            _EAGER_CACHE.pop(next(iter(_EAGER_CACHE)))
        _EAGER_CACHE[key] = executor
    return executor


def eager_capable(fn: Callable[..., Symbol]) -> Callable[..., Any]:
    """Let a graph loss function also take NumPy arrays (and return a NumPy array).

    With a :class:`Symbol` prediction the function builds graph ops as usual; otherwise the
    labels take the prediction's float dtype (integer labels stay integers) and the function is
    evaluated on the host by a cached traced graph.
    """

    @functools.wraps(fn)
    def wrapper(y_true: Any, y_pred: Any, **kwargs: Any) -> Any:
        if isinstance(y_pred, Symbol) or isinstance(y_true, Symbol):
            return fn(y_true, y_pred, **kwargs)
        p = float_array(np.asarray(y_pred))
        t = np.asarray(y_true)
        if t.dtype.kind not in "iu":
            t = t.astype(p.dtype, copy=False)
        return _evaluator(fn, kwargs, t, p).run([t, p])[0]

    return wrapper
