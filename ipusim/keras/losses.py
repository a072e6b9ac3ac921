"""Keras losses, built from graph ops (they run inside the traced training graph).

Semantics follow tf.keras 2.x: ``from_logits=False`` losses clip probabilities to
``[epsilon, 1 - epsilon]``; when the predictions come straight from a softmax op the softmax is
skipped and the fused, stable cross-entropy on its logits is used instead, as TensorFlow does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from ipusim.errors import InputDataError
from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn, shape
from ipusim.keras import backend

REDUCTIONS = ("auto", "sum_over_batch_size", "sum", "none")


def _softmax_logits(y_pred: Symbol) -> Symbol | None:
    """The logits of ``y_pred`` when it is the output of a softmax over the last axis."""
    node = y_pred.node
    if node.op.name == "softmax" and node.attrs.get("axis", -1) in (-1, y_pred.ndim - 1):
        return node.inputs[0]
    return None


def _sparse_labels(y_true: Symbol, y_pred: Symbol, loss_name: str) -> Symbol:
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = shape.squeeze(y_true, axis=-1)
    if y_true.ndim != y_pred.ndim - 1 or any(
        a is not None and b is not None and a != b for a, b in zip(y_true.shape, y_pred.shape)
    ):
        raise ValueError(
            f"{loss_name} expects integer class labels of shape {y_pred.shape[:-1]} (or with a "
            f"trailing 1) for predictions of shape {y_pred.shape}; received labels of shape "
            f"{y_true.shape}. For one-hot labels use CategoricalCrossentropy instead."
        )
    if y_true.dtype not in ("int32", "int64"):
        y_true = m.cast(y_true, "int32")
    return y_true


def _check_same_shape(y_true: Symbol, y_pred: Symbol, loss_name: str, hint: str = "") -> None:
    if y_true.ndim != y_pred.ndim or any(
        a is not None and b is not None and a != b for a, b in zip(y_true.shape, y_pred.shape)
    ):
        raise ValueError(
            f"{loss_name} expects labels of the same shape as the predictions "
            f"{y_pred.shape}; received labels of shape {y_true.shape}.{hint}"
        )


def squeeze_or_expand_dimensions(y_pred: Symbol, y_true: Symbol) -> tuple[Symbol, Symbol]:
    """Keras' rank reconciliation of labels and predictions (``losses_utils``).

    When the ranks differ by one, the trailing axis of the higher-rank one is squeezed if it is 1
    (or unknown), so ``(N,)`` labels meet ``(N, 1)`` predictions; except that predictions of
    rank one more than the labels whose last axis is not 1 are sparse-label scores and are kept.
    """
    diff = y_pred.ndim - y_true.ndim
    if diff == 1 and y_pred.shape[-1] in (1, None):
        y_pred = shape.squeeze(y_pred, axis=-1)
    elif diff == -1 and y_true.shape[-1] in (1, None):
        y_true = shape.squeeze(y_true, axis=-1)
    return y_pred, y_true


def _check_broadcastable(y_true: Symbol, y_pred: Symbol, loss_name: str) -> None:
    """As TensorFlow's elementwise difference: the shapes must broadcast (after the squeeze)."""
    for a, b in zip(reversed(y_true.shape), reversed(y_pred.shape)):
        if a is not None and b is not None and a != b and 1 not in (a, b):
            raise InputDataError(
                f"{loss_name}: labels of shape {y_true.shape} and predictions of shape "
                f"{y_pred.shape} are incompatible (they do not broadcast); give labels of the "
                "predictions' shape"
            )


def _as_float(y_true: Symbol, like: Symbol) -> Symbol:
    return y_true if y_true.dtype == like.dtype else m.cast(y_true, like.dtype)


# ---------------------------------------------------------------------- loss functions
def sparse_categorical_crossentropy(
    y_true: Any, y_pred: Any, from_logits: bool = False, axis: int = -1
) -> Symbol:
    """Per-example cross-entropy of integer labels against class scores."""
    if axis not in (-1, y_pred.ndim - 1):
        raise NotImplementedError("sparse_categorical_crossentropy: only axis=-1 is supported")
    labels = _sparse_labels(y_true, y_pred, "SparseCategoricalCrossentropy")
    logits = y_pred if from_logits else _softmax_logits(y_pred)
    if logits is None:
        eps = backend.epsilon()
        logits = m.log(m.clip(y_pred, eps, 1.0 - eps))
    return nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


def categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Symbol:
    """Per-example cross-entropy of one-hot (or soft) labels against class scores."""
    if axis not in (-1, y_pred.ndim - 1):
        raise NotImplementedError("categorical_crossentropy: only axis=-1 is supported")
    _check_same_shape(
        y_true,
        y_pred,
        "CategoricalCrossentropy",
        " For integer labels use SparseCategoricalCrossentropy instead.",
    )
    y_true = _as_float(y_true, y_pred)
    if label_smoothing:
        classes = y_pred.shape[-1]
        y_true = m.add(m.multiply(y_true, 1.0 - label_smoothing), label_smoothing / classes)
    logits = y_pred if from_logits else _softmax_logits(y_pred)
    if logits is not None:
        return nn.softmax_cross_entropy_with_logits(y_true, logits)
    eps = backend.epsilon()
    probs = m.divide(y_pred, m.reduce_sum(y_pred, axis=-1, keepdims=True))
    probs = m.clip(probs, eps, 1.0 - eps)
    return m.negative(m.reduce_sum(m.multiply(y_true, m.log(probs)), axis=-1))


def binary_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Symbol:
    """Binary cross-entropy, averaged over the last axis."""
    _check_same_shape(y_true, y_pred, "BinaryCrossentropy")
    y_true = _as_float(y_true, y_pred)
    if label_smoothing:
        y_true = m.add(m.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if not from_logits and y_pred.node.op.name == "sigmoid":
        # As tf.keras in a traced function: probabilities straight from a sigmoid are scored
        # from its logits, with the stable form (no clipping).
        y_pred, from_logits = y_pred.node.inputs[0], True
    if from_logits:
        per = nn.sigmoid_cross_entropy_with_logits(y_true, y_pred)
    else:
        eps = backend.epsilon()
        p = m.clip(y_pred, eps, 1.0 - eps)
        pos = m.multiply(y_true, m.log(m.add(p, eps)))
        neg = m.multiply(m.subtract(1.0, y_true), m.log(m.add(m.subtract(1.0, p), eps)))
        per = m.negative(m.add(pos, neg))
    return m.reduce_mean(per, axis=-1)


def mean_squared_error(y_true: Any, y_pred: Any) -> Symbol:
    """Mean of squared differences over the last axis."""
    _check_broadcastable(y_true, y_pred, "MeanSquaredError")
    return m.reduce_mean(m.square(m.subtract(y_pred, _as_float(y_true, y_pred))), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Symbol:
    """Mean of absolute differences over the last axis."""
    _check_broadcastable(y_true, y_pred, "MeanAbsoluteError")
    return m.reduce_mean(m.abs(m.subtract(y_pred, _as_float(y_true, y_pred))), axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


# ---------------------------------------------------------------------- loss classes
class Loss:
    """Base class: ``loss(y_true, y_pred, sample_weight=None)`` -> reduced loss.

    Args:
        reduction: ``"auto"``/``"sum_over_batch_size"`` (mean over examples), ``"sum"`` or
            ``"none"``.
        name: the loss name.
    """

    def __init__(self, reduction: str = "auto", name: str | None = None) -> None:
        if reduction not in REDUCTIONS:
            raise ValueError(
                f"Loss `reduction` must be one of {REDUCTIONS}, received {reduction!r}"
            )
        self.reduction = reduction
        self.name = name or backend.to_snake_case(type(self).__name__)

    def call(self, y_true: Any, y_pred: Any) -> Symbol:
        raise NotImplementedError

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        if not isinstance(y_pred, Symbol):
            return _eager_loss(self, y_true, y_pred, sample_weight)
        per_example = self.call(y_true, y_pred)
        if sample_weight is not None:
            weight = (
                m.cast(sample_weight, per_example.dtype)
                if getattr(sample_weight, "dtype", per_example.dtype) != per_example.dtype
                else sample_weight
            )
            per_example = m.multiply(per_example, weight)
        if self.reduction == "none":
            return per_example
        if self.reduction == "sum":
            return m.reduce_sum(per_example)
        return m.reduce_mean(per_example)

    def get_config(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A loss class around a per-example loss function with fixed keyword arguments."""

    def __init__(
        self,
        fn: Callable[..., Symbol],
        reduction: str = "auto",
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> Symbol:
        if isinstance(y_true, Symbol) and isinstance(y_pred, Symbol):
            y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._fn_kwargs}


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(
        self,
        from_logits: bool = False,
        reduction: str = "auto",
        name: str = "sparse_categorical_crossentropy",
    ) -> None:
        super().__init__(sparse_categorical_crossentropy, reduction, name, from_logits=from_logits)
        self.from_logits = from_logits


class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = "auto",
        name: str = "categorical_crossentropy",
    ) -> None:
        super().__init__(
            categorical_crossentropy,
            reduction,
            name,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
            axis=axis,
        )
        self.from_logits = from_logits


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis: int = -1,
        reduction: str = "auto",
        name: str = "binary_crossentropy",
    ) -> None:
        super().__init__(
            binary_crossentropy,
            reduction,
            name,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
            axis=axis,
        )
        self.from_logits = from_logits


class MeanSquaredError(LossFunctionWrapper):
    def __init__(self, reduction: str = "auto", name: str = "mean_squared_error") -> None:
        super().__init__(mean_squared_error, reduction, name)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction: str = "auto", name: str = "mean_absolute_error") -> None:
        super().__init__(mean_absolute_error, reduction, name)


_CLASSES: dict[str, type[Loss]] = {
    cls.__name__: cls
    for cls in (
        SparseCategoricalCrossentropy,
        CategoricalCrossentropy,
        BinaryCrossentropy,
        MeanSquaredError,
        MeanAbsoluteError,
    )
}
_FUNCTIONS: dict[str, Callable[..., Symbol]] = {
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
    "mean_squared_error": mean_squared_error,
    "mse": mean_squared_error,
    "MSE": mean_squared_error,
    "mean_absolute_error": mean_absolute_error,
    "mae": mean_absolute_error,
    "MAE": mean_absolute_error,
}


def get(identifier: Any) -> Loss | Callable[..., Any]:
    """A loss from a name (function or class name), a config dict, an instance or a function."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name", ""))
        if cls is None:
            raise ValueError(f"unknown loss config {identifier!r}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _FUNCTIONS:
            fn = _FUNCTIONS[identifier]
            return LossFunctionWrapper(fn, name=fn.__name__)
        close = difflib.get_close_matches(identifier, list(_FUNCTIONS) + list(_CLASSES), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"Unknown loss function: {identifier!r}.{hint} Valid names: "
            f"{', '.join(sorted(_FUNCTIONS))}"
        )
    if callable(identifier):
        return LossFunctionWrapper(identifier, name=getattr(identifier, "__name__", "loss"))
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}")


def serialize(loss: Any) -> dict[str, Any]:
    if type(loss).__name__ in _CLASSES:
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    if isinstance(loss, LossFunctionWrapper) and loss.fn.__name__ in _FUNCTIONS:
        return {"function": loss.fn.__name__}
    raise ValueError(f"loss {loss!r} cannot be serialized")


def _eager_loss(loss: Loss, y_true: Any, y_pred: Any, sample_weight: Any) -> Any:
    """Evaluate a loss on numpy arrays by tracing it once."""
    import numpy as np

    from ipusim.graph.execute import Executor
    from ipusim.graph.graph import Graph
    from ipusim.graph.spec import TensorSpec

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_pred.dtype.kind != "f":
        y_pred = y_pred.astype(backend.floatx())
    graph = Graph(f"{loss.name}_eager")
    t = graph.placeholder(
        TensorSpec(
            y_true.shape, y_true.dtype.name if y_true.dtype.kind != "f" else y_pred.dtype.name
        )
    )
    p = graph.placeholder(TensorSpec.from_array(y_pred))
    feeds = [y_true, y_pred]
    inputs = [t, p]
    w = None
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=y_pred.dtype)
        w = graph.placeholder(TensorSpec.from_array(sample_weight))
        feeds.append(sample_weight)
        inputs.append(w)
    out = loss(t, p, w)
    return Executor(graph, [out], inputs).run(feeds)[0]
