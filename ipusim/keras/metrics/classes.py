"""Built-in metric classes: accuracies and regression errors, as ``tf.keras.metrics`` 2.x."""

from __future__ import annotations

from typing import Any

from ipusim.keras.metrics.base import MeanMetricWrapper, wrapper_class
from ipusim.keras.metrics.functions import (
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    mean_absolute_error,
    mean_squared_error,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)


def _accuracy(fn: Any, cls_name: str, doc: str, **options: Any) -> type[MeanMetricWrapper]:
    """A metric class named after ``fn``; ``options``: its ``(argument, default)`` pairs."""
    return wrapper_class(fn, cls_name, __name__, doc, fn.__name__, **options)


Accuracy = _accuracy(accuracy, "Accuracy", "How often predictions equal labels exactly.")
BinaryAccuracy = _accuracy(
    binary_accuracy,
    "BinaryAccuracy",
    "How often ``y_pred > threshold`` equals the 0/1 label.",
    after=(("threshold", 0.5),),
)
CategoricalAccuracy = _accuracy(
    categorical_accuracy,
    "CategoricalAccuracy",
    "How often the argmax of the prediction equals the argmax of a one-hot label.",
)
SparseCategoricalAccuracy = _accuracy(
    sparse_categorical_accuracy,
    "SparseCategoricalAccuracy",
    "How often the argmax of the prediction equals an integer label.",
)
TopKCategoricalAccuracy = _accuracy(
    top_k_categorical_accuracy,
    "TopKCategoricalAccuracy",
    "How often a one-hot label's class is among the top ``k`` predictions.",
    before=(("k", 5),),
)
SparseTopKCategoricalAccuracy = _accuracy(
    sparse_top_k_categorical_accuracy,
    "SparseTopKCategoricalAccuracy",
    "How often an integer label is among the top ``k`` predictions.",
    before=(("k", 5),),
)
MeanSquaredError = _accuracy(
    mean_squared_error, "MeanSquaredError", "Mean of ``mean((y_pred - y_true)**2, axis=-1)``."
)
MeanAbsoluteError = _accuracy(
    mean_absolute_error, "MeanAbsoluteError", "Mean of ``mean(|y_pred - y_true|, axis=-1)``."
)
