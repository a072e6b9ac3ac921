"""Metrics, as ``tf.keras.metrics`` in TensorFlow 2.4–2.6 (the Keras 2 ``Metric`` API).

``get`` resolves names the way Keras does (functions for function names and aliases, new instances
for class names); :func:`to_metric` turns one entry of ``compile(metrics=[...])`` into a
:class:`Metric`, picking the accuracy variant from the shapes as Keras' ``compile_utils``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras.loss_functions import (  # the loss functions tf.keras.metrics also exports
    binary_focal_crossentropy,
    categorical_focal_crossentropy,
    hinge,
    kl_divergence,
    kld,
    log_cosh,
    mape,
    mean_absolute_percentage_error,
    mean_squared_logarithmic_error,
    msle,
    poisson,
    squared_hinge,
)
from ipusim.keras.losses import (  # (the rest of them, defined in keras.losses itself)
    KLD,
    MAPE,
    MSLE,
    binary_crossentropy,
    categorical_crossentropy,
    kullback_leibler_divergence,
    logcosh,
    sparse_categorical_crossentropy,
)
from ipusim.keras.metrics import experimental
from ipusim.keras.metrics.auc import AUC
from ipusim.keras.metrics.base import (
    Mean,
    MeanMetricWrapper,
    Metric,
    Reduce,
    Sum,
    unknown_metric,
)
from ipusim.keras.metrics.classes import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    MeanAbsoluteError,
    MeanSquaredError,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
)
from ipusim.keras.metrics.confusion import (
    FalseNegatives,
    FalsePositives,
    Precision,
    PrecisionAtRecall,
    Recall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SensitivitySpecificityBase,
    SpecificityAtSensitivity,
    TrueNegatives,
    TruePositives,
)
from ipusim.keras.metrics.fscore import F1Score, FBetaScore
from ipusim.keras.metrics.functions import (
    ACC,
    FUNCTIONS,
    MAE,
    MSE,
    acc,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    mae,
    match_dtype_and_rank,
    mean_absolute_error,
    mean_squared_error,
    mse,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    squeeze_or_expand_dimensions,
    top_k_categorical_accuracy,
)
from ipusim.keras.metrics.iou import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from ipusim.keras.metrics.loss_metrics import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CategoricalHinge,
    CosineSimilarity,
    Hinge,
    KLDivergence,
    LogCoshError,
    MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError,
    Poisson,
    SparseCategoricalCrossentropy,
    SquaredHinge,
)
from ipusim.keras.metrics.regression import (
    MeanRelativeError,
    MeanTensor,
    R2Score,
    RootMeanSquaredError,
)

__all__ = [
    "experimental",
    "AUC",
    "BinaryCrossentropy",
    "BinaryIoU",
    "CategoricalCrossentropy",
    "CategoricalHinge",
    "CosineSimilarity",
    "F1Score",
    "FBetaScore",
    "FalseNegatives",
    "FalsePositives",
    "Hinge",
    "IoU",
    "KLDivergence",
    "LogCoshError",
    "MeanAbsolutePercentageError",
    "MeanIoU",
    "MeanRelativeError",
    "MeanSquaredLogarithmicError",
    "MeanTensor",
    "OneHotIoU",
    "OneHotMeanIoU",
    "Poisson",
    "Precision",
    "PrecisionAtRecall",
    "R2Score",
    "Recall",
    "RecallAtPrecision",
    "RootMeanSquaredError",
    "SensitivityAtSpecificity",
    "SparseCategoricalCrossentropy",
    "SpecificityAtSensitivity",
    "SquaredHinge",
    "TrueNegatives",
    "TruePositives",
    "KLD",
    "MAPE",
    "MSLE",
    "binary_crossentropy",
    "binary_focal_crossentropy",
    "categorical_crossentropy",
    "categorical_focal_crossentropy",
    "hinge",
    "kl_divergence",
    "kld",
    "kullback_leibler_divergence",
    "log_cosh",
    "logcosh",
    "mape",
    "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error",
    "msle",
    "poisson",
    "sparse_categorical_crossentropy",
    "squared_hinge",
    "SensitivitySpecificityBase",
    "ACC",
    "MAE",
    "MSE",
    "Accuracy",
    "BinaryAccuracy",
    "CategoricalAccuracy",
    "Mean",
    "MeanAbsoluteError",
    "MeanMetricWrapper",
    "MeanSquaredError",
    "Metric",
    "Reduce",
    "SparseCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "Sum",
    "TopKCategoricalAccuracy",
    "acc",
    "accuracy",
    "binary_accuracy",
    "categorical_accuracy",
    "deserialize",
    "get",
    "mae",
    "match_dtype_and_rank",
    "mean_absolute_error",
    "mean_squared_error",
    "mse",
    "resolve_accuracy",
    "resolve_crossentropy",
    "serialize",
    "sparse_categorical_accuracy",
    "sparse_top_k_categorical_accuracy",
    "squeeze_or_expand_dimensions",
    "to_metric",
    "top_k_categorical_accuracy",
]

#: The metric classes by name: every Metric subclass above but the bases.
_CLASSES: dict[str, type[Metric]] = {
    name: value
    for name, value in list(globals().items())
    if isinstance(value, type)
    and issubclass(value, Metric)
    and value not in (Metric, Reduce, SensitivitySpecificityBase)
}


def _unknown(name: str) -> ValueError:
    return unknown_metric(name, sorted(FUNCTIONS) + sorted(_CLASSES))


def serialize(metric: Metric | Callable[..., Any]) -> dict[str, Any] | str:
    """A metric object as ``{"class_name", "config"}``, a metric function as its name."""
    if isinstance(metric, Metric):
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    return metric.__name__


def deserialize(config: dict[str, Any] | str) -> Metric | Callable[..., Any]:
    """A function for a function name, a new instance for a class name or config dict."""
    if isinstance(config, str):
        if config in _CLASSES:
            return _CLASSES[config]()
        if config not in FUNCTIONS:
            raise _unknown(config)
        return FUNCTIONS[config]
    if not isinstance(config, dict) or "class_name" not in config:
        raise ConfigurationError(
            f"metric config must be a name or a class_name/config dict: {config!r}"
        )
    name = config["class_name"]
    if name not in _CLASSES:
        raise _unknown(str(name))
    return _CLASSES[name].from_config(dict(config.get("config") or {}))


def get(identifier: Any) -> Metric | Callable[..., Any]:
    """Resolve a metric identifier as ``tf.keras.metrics.get``.

    Function names and aliases (``"accuracy"``, ``"acc"``, ``"mse"``, …) give the function; class
    names (``"SparseCategoricalAccuracy"``) give a new instance; dicts are deserialized; metric
    objects and other callables are returned as is. ``"accuracy"`` here is exact equality: the
    compile step picks the right accuracy with :func:`resolve_accuracy` / :func:`to_metric`.

    Raises:
        ValueError: for an unknown name (with a close-match suggestion) or another type.
    """
    if isinstance(identifier, dict | str):
        return deserialize(identifier)
    if callable(identifier):
        function: Callable[..., Any] = identifier
        return function
    raise ConfigurationError(f"Could not interpret metric function identifier: {identifier!r}")


def _output_kind(y_true_shape: tuple[int | None, ...], y_pred_shape: tuple[int | None, ...]) -> str:
    """``"binary"``, ``"sparse"`` or ``"categorical"``: Keras' ``compile_utils`` shape rule."""
    y_true_shape, y_pred_shape = tuple(y_true_shape), tuple(y_pred_shape)
    y_t_last = y_true_shape[-1] if y_true_shape else None
    y_p_last = y_pred_shape[-1] if y_pred_shape else None
    if y_p_last == 1:
        return "binary"
    sparse = len(y_true_shape) < len(y_pred_shape) or (
        y_t_last == 1 and y_p_last is not None and y_p_last > 1
    )
    return "sparse" if sparse else "categorical"


#: Metric names resolved from the data's shapes when the metrics are built (first fit).
_SHAPE_RESOLVED = ("accuracy", "acc", "crossentropy", "ce")
#: The (accuracy, cross-entropy) functions ``"accuracy"`` and ``"crossentropy"`` mean per kind.
_BY_OUTPUT_KIND = {
    "binary": (binary_accuracy, binary_crossentropy),
    "sparse": (sparse_categorical_accuracy, sparse_categorical_crossentropy),
    "categorical": (categorical_accuracy, categorical_crossentropy),
}


def resolve_accuracy(
    loss: Any, y_true_shape: tuple[int | None, ...], y_pred_shape: tuple[int | None, ...]
) -> MeanMetricWrapper:
    """The accuracy metric ``compile(metrics=["accuracy"])`` means for these shapes.

    Keras 2's ``compile_utils`` decides from the shapes alone: binary when the output's last
    dimension is 1; sparse categorical when the labels have lower rank than the output or a last
    dimension of 1 against a wider output; categorical otherwise. ``loss`` is accepted for the
    caller's convenience but, as in TensorFlow 2.4–2.6, does not take part (so a multi-label
    ``binary_crossentropy`` model with ``(N, C)`` outputs gets categorical accuracy, as in Keras).

    Returns:
        A new :class:`MeanMetricWrapper` of the chosen function, named after it (e.g.
        ``"sparse_categorical_accuracy"``); callers rename it to the user's spelling.
    """
    del loss
    return MeanMetricWrapper(_BY_OUTPUT_KIND[_output_kind(y_true_shape, y_pred_shape)][0])


def resolve_crossentropy(
    y_true_shape: tuple[int | None, ...], y_pred_shape: tuple[int | None, ...]
) -> MeanMetricWrapper:
    """The cross-entropy ``compile(metrics=["crossentropy"])`` (or ``"ce"``) means for these
    shapes, by the same rule as :func:`resolve_accuracy` (Keras' ``compile_utils``)."""
    return MeanMetricWrapper(_BY_OUTPUT_KIND[_output_kind(y_true_shape, y_pred_shape)][1])


def to_metric(
    identifier: Any,
    y_true_shape: tuple[int | None, ...] | None = None,
    y_pred_shape: tuple[int | None, ...] | None = None,
    loss: Any = None,
) -> Metric:
    """A :class:`Metric` object for one entry of ``compile(metrics=[...])`` (Keras' rules).

    ``"accuracy"``/``"acc"`` (any case) resolve through :func:`resolve_accuracy` and keep the
    user's spelling as the name; other names and functions are wrapped in a
    :class:`MeanMetricWrapper` named after the string given (or the function's name); metric
    objects are returned as is.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _SHAPE_RESOLVED:
        if y_true_shape is None or y_pred_shape is None:
            raise ConfigurationError(
                f"to_metric({identifier!r}) needs y_true_shape and y_pred_shape to pick between "
                "the binary, categorical and sparse categorical variants"
            )
        if identifier.lower() in ("accuracy", "acc"):
            metric = resolve_accuracy(loss, y_true_shape, y_pred_shape)
        else:
            metric = resolve_crossentropy(y_true_shape, y_pred_shape)
        metric.name = identifier
        return metric
    resolved = get(identifier)
    if isinstance(resolved, Metric):
        return resolved
    name = identifier if isinstance(identifier, str) else getattr(resolved, "__name__", "metric")
    return MeanMetricWrapper(resolved, name)
