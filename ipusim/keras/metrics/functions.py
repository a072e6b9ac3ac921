"""Metric functions: per-sample values from ``(y_true, y_pred)``, as ``tf.keras.metrics`` 2.x.

Each averages over the *last* axis (Keras 2), so two 1-D arrays give one number for the batch;
``model.fit`` avoids that by calling :func:`match_dtype_and_rank` first, exactly as Keras'
``compile_utils`` does. Matching and averaging run in :mod:`ipusim.kernels.metrics`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras import loss_functions, losses
from ipusim.kernels import metrics as mk

_FLOATS = ("float32", "float64")


def _float_array(x: Any) -> np.ndarray:
    a = np.asarray(x)
    return a if a.dtype.name in _FLOATS else a.astype(np.float32)


def _squeeze_last(x: np.ndarray, what: str) -> np.ndarray:
    if x.ndim == 0 or x.shape[-1] != 1:
        raise ConfigurationError(f"cannot squeeze the last axis of {what} with shape {x.shape}")
    return x.reshape(x.shape[:-1])


def squeeze_or_expand_dimensions(
    y_pred: np.ndarray, y_true: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Drop a trailing size-1 axis so ``y_pred`` and ``y_true`` have equal rank (Keras' rule).

    ``y_pred`` is squeezed when it has one more axis than ``y_true`` and ends in 1; ``y_true`` when
    it has one more axis than ``y_pred`` and ends in 1.
    """
    diff = y_pred.ndim - y_true.ndim
    if diff == 1 and y_pred.shape[-1] == 1:
        y_pred = y_pred.reshape(y_pred.shape[:-1])
    elif diff == -1 and y_true.shape[-1] == 1:
        y_true = y_true.reshape(y_true.shape[:-1])
    return y_pred, y_true


def match_dtype_and_rank(
    y_true: Any, y_pred: Any, sample_weight: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """What Keras' ``MetricsContainer`` does before updating metrics in ``fit``/``evaluate``.

    1-D labels (and 1-D sample weights) get a trailing axis when the prediction is 2-D, and float
    labels take the prediction's dtype.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim == 1 and y_pred.ndim == 2:
        y_true = y_true[:, None]
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)
        if sample_weight.ndim == 1 and y_pred.ndim == 2:
            sample_weight = sample_weight[:, None]
        sample_weight = sample_weight.astype(y_pred.dtype, copy=False)
    same_kind = (y_true.dtype.kind == "f" and y_pred.dtype.kind == "f") or (
        y_true.dtype.kind in "iu" and y_pred.dtype.kind in "iu"
    )
    if same_kind:
        y_true = y_true.astype(y_pred.dtype, copy=False)
    return y_true, y_pred, sample_weight


# --- metric functions (per-sample values) --------------------------------------------------------


def accuracy(y_true: Any, y_pred: Any) -> np.ndarray:
    """1.0 where ``y_true == y_pred`` elementwise (same shapes)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape:
        raise ConfigurationError(
            f"accuracy: y_true shape {y_true.shape} is not compatible with y_pred shape "
            f"{y_pred.shape}"
        )
    return mk.equal(y_true, y_pred.astype(y_true.dtype, copy=False))


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> np.ndarray:
    """Mean over the last axis of ``y_true == (y_pred > threshold)``."""
    y_pred = _float_array(y_pred)
    y_true, y_pred = np.broadcast_arrays(np.asarray(y_true, dtype=y_pred.dtype), y_pred)
    return mk.binary_match_mean(y_true, y_pred, threshold)


def categorical_accuracy(y_true: Any, y_pred: Any) -> np.ndarray:
    """1.0 where ``argmax(y_true, -1) == argmax(y_pred, -1)`` (one-hot labels)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape[:-1] != y_pred.shape[:-1]:
        raise ConfigurationError(
            f"categorical_accuracy: y_true shape {y_true.shape} and y_pred shape {y_pred.shape} "
            "differ before the last (class) axis"
        )
    return mk.categorical_match(y_true, y_pred)


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> np.ndarray:
    """1.0 where the integer label equals ``argmax(y_pred, -1)``.

    Labels may be ints or floats of shape ``(N,)`` or ``(N, 1)`` for ``y_pred`` of shape
    ``(N, C)``; like Keras, a label axis of size 1 is dropped when the ranks are equal and the
    comparison is made after casting the argmax to the labels' type.
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim == y_pred.ndim:
        y_true = _squeeze_last(y_true, "sparse_categorical_accuracy y_true")
    if y_true.shape != y_pred.shape[:-1]:
        raise ConfigurationError(
            f"sparse_categorical_accuracy: y_true shape {y_true.shape} does not match y_pred "
            f"shape {y_pred.shape} without its class axis; pass one integer label per row"
        )
    return mk.sparse_categorical_match(y_true, y_pred)


def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> np.ndarray:
    """1.0 where ``argmax(y_true, -1)`` is among the top ``k`` predictions (ties count as in)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape[:-1] != y_pred.shape[:-1]:
        raise ConfigurationError(
            f"top_k_categorical_accuracy: y_true shape {y_true.shape} and y_pred shape "
            f"{y_pred.shape} differ before the last (class) axis"
        )
    return mk.in_top_k(y_pred, mk.argmax_last(y_true), k)


def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> np.ndarray:
    """1.0 where the integer label is among the top ``k`` predictions; shaped like ``y_true``."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    rows = int(np.prod(y_pred.shape[:-1], dtype=np.int64))
    if y_true.size != rows:
        raise ConfigurationError(
            f"sparse_top_k_categorical_accuracy: y_true shape {y_true.shape} holds {y_true.size} "
            f"labels but y_pred shape {y_pred.shape} has {rows} rows"
        )
    matches = mk.in_top_k(y_pred, y_true.reshape(-1).astype(np.int64), k)
    return matches.reshape(y_true.shape) if y_true.ndim > 1 else matches.reshape(-1)


def mean_squared_error(y_true: Any, y_pred: Any) -> np.ndarray:
    """``mean((y_pred - y_true)**2, axis=-1)``."""
    y_pred = _float_array(y_pred)
    y_true, y_pred = np.broadcast_arrays(np.asarray(y_true, dtype=y_pred.dtype), y_pred)
    return mk.mean_squared_diff(y_true, y_pred)


def mean_absolute_error(y_true: Any, y_pred: Any) -> np.ndarray:
    """``mean(|y_pred - y_true|, axis=-1)``."""
    y_pred = _float_array(y_pred)
    y_true, y_pred = np.broadcast_arrays(np.asarray(y_true, dtype=y_pred.dtype), y_pred)
    return mk.mean_abs_diff(y_true, y_pred)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> np.ndarray:
    """Cosine similarity along ``axis`` (1 is a perfect match): the negated loss."""
    return -np.asarray(loss_functions.cosine_similarity(y_true, y_pred, axis=axis))


acc = ACC = accuracy
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


#: Function names and Keras aliases that ``metrics.get`` resolves.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn
    for fn in (
        accuracy,
        binary_accuracy,
        categorical_accuracy,
        sparse_categorical_accuracy,
        top_k_categorical_accuracy,
        sparse_top_k_categorical_accuracy,
        mean_squared_error,
        mean_absolute_error,
    )
}
FUNCTIONS.update(acc=acc, ACC=ACC, mse=mse, MSE=MSE, mae=mae, MAE=MAE)

#: The loss functions ``tf.keras.metrics`` also exports, under every name it exports them by:
#: all of ``keras.losses`` but the errors above and Huber, with the metric's cosine similarity.
FUNCTIONS.update(
    (name, fn)
    for name, fn in losses.FUNCTIONS.items()
    if name not in FUNCTIONS and not name.startswith("huber")
)
FUNCTIONS["cosine_similarity"] = cosine_similarity
