"""Confusion-matrix metrics: TruePositives … FalseNegatives, Precision, Recall and the
sensitivity/specificity family, as ``tf_keras`` 2.x (``metrics_utils.
update_confusion_matrix_variables``).

State is one weighted count per threshold (per label for a multi-label AUC), in the metric's
dtype. A prediction counts as positive at threshold ``t`` when ``y_pred > t``; a label is positive
when it is non-zero. Evenly spaced thresholds (those the metrics generate themselves) are counted
as Keras' optimised path does: predictions clipped to ``[0, 1]`` and binned by
``ceil(p * (T - 1)) - 1``, then accumulated from the top bin down.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ipusim.errors import ConfigurationError, InputDataError
from ipusim.keras import backend
from ipusim.keras.keyword_init import REQUIRED, fields, keyword_init, table_class
from ipusim.keras.metrics.base import Metric
from ipusim.keras.metrics.functions import squeeze_or_expand_dimensions
from ipusim.kernels import confusion as ck

#: Value given to the predictions outside the top k (``metrics_utils.NEG_INF`` in tf_keras).
NEG_INF = -1e10
KEYS = ("tp", "fp", "tn", "fn")
#: The attribute holding each count.
ATTRIBUTES = dict(
    zip(KEYS, ("true_positives", "false_positives", "true_negatives", "false_negatives"))
)


def broadcast_weights(weights: Any, like: np.ndarray, dtype: str) -> np.ndarray:
    """Sample weights fixed up to ``like``'s rank (Keras' squeeze/expand) and broadcast to it."""
    w = np.asarray(weights, dtype=dtype)
    if w.ndim and w.ndim - like.ndim == 1 and w.shape[-1] == 1:
        w = w.reshape(w.shape[:-1])
    elif w.ndim and like.ndim - w.ndim == 1:
        w = w[..., None]
    try:
        return np.broadcast_to(w, like.shape)
    except ValueError:
        raise ConfigurationError(
            f"sample_weight of shape {np.shape(weights)} cannot be broadcast to predictions of "
            f"shape {like.shape}"
        ) from None


def filter_top_k(x: np.ndarray, k: int) -> np.ndarray:
    """``x`` with every entry outside the top ``k`` of its last axis set to ``NEG_INF``.

    Ties keep the lower index, as ``tf.math.top_k``.
    """
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    keep = np.zeros(x.shape, dtype=bool)
    np.put_along_axis(keep, order, True, axis=-1)
    return np.where(keep, x, np.asarray(NEG_INF, dtype=x.dtype))


def evenly_distributed(thresholds: list[float]) -> bool:
    """Whether ``thresholds`` are ``i / (T - 1)`` within epsilon (Keras' test)."""
    t = np.asarray(thresholds, dtype=np.float64)
    if t.size < 3:
        return False
    even = np.arange(t.size, dtype=np.float32) / (t.size - 1)
    return bool(np.allclose(t, even, atol=backend.epsilon()))


def prepare(
    y_true: Any,
    y_pred: Any,
    sample_weight: Any,
    dtype: str,
    top_k: int | None = None,
    class_id: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Labels (0/1), predictions and broadcast weights, with Keras' shape fix-ups applied."""
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred, dtype=dtype)
    y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
    if y_true.shape != y_pred.shape:
        raise ConfigurationError(
            f"Shapes {y_true.shape} (y_true) and {y_pred.shape} (y_pred) are incompatible: "
            "confusion-matrix metrics need one label per prediction"
        )
    if y_pred.size and (np.nanmin(y_pred) < 0 or np.nanmax(y_pred) > 1):
        # IPU TensorFlow's Keras asserts this (later Keras versions dropped the check).
        raise InputDataError(
            f"predictions must be >= 0 and <= 1 for confusion-matrix metrics (Precision, Recall, "
            f"AUC, TruePositives, ...); received values in [{float(np.nanmin(y_pred))}, "
            f"{float(np.nanmax(y_pred))}]. Pass probabilities (e.g. a sigmoid output), or use "
            "AUC(from_logits=True) for logits."
        )
    labels = (y_true != 0).astype(dtype)
    weights = None if sample_weight is None else broadcast_weights(sample_weight, y_pred, dtype)
    if top_k is not None:
        y_pred = filter_top_k(y_pred, top_k)
    if class_id is not None:
        labels, y_pred = labels[..., class_id, None], y_pred[..., class_id, None]
        weights = None if weights is None else weights[..., class_id, None]
    return labels, y_pred, weights


def confusion_counts(
    labels: np.ndarray,
    y_pred: np.ndarray,
    weights: np.ndarray | None,
    thresholds: np.ndarray,
    evenly: bool,
    multi_label: bool = False,
) -> dict[str, np.ndarray]:
    """Weighted TP/FP/TN/FN per threshold: shape ``(T,)``, or ``(T, L)`` when ``multi_label``.

    Args:
        labels: 0/1 labels, shape of ``y_pred``.
        y_pred: predictions (any rank; the last axis is the label axis if ``multi_label``).
        weights: per-prediction weights of the same shape, or None.
        thresholds: ``(T,)`` thresholds in the state dtype.
        evenly: count with Keras' binning for evenly spaced thresholds.
        multi_label: keep the last axis separate.
    """
    if multi_label:
        lab = labels.reshape(-1, labels.shape[-1]) if labels.ndim > 1 else labels[:, None]
    else:
        lab = labels.reshape(-1, 1)
    pred = y_pred.reshape(lab.shape)
    w = np.ones(lab.shape) if weights is None else weights.reshape(lab.shape).astype(np.float64)
    pos, neg = lab * w, (1.0 - lab) * w  # float64: the kernels accumulate in float64
    tp, fp = ck.positive_counts(pred, pos, neg, thresholds, evenly)
    tn = neg.sum(axis=0)[None, :] - fp
    fn = pos.sum(axis=0)[None, :] - tp
    counts = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
    if not multi_label:
        counts = {k: v[:, 0] for k, v in counts.items()}
    return counts


def div_no_nan(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``a / b``, 0 where ``b == 0`` (``tf.math.divide_no_nan``)."""
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, a / safe).astype(a.dtype)


def _thresholds_list(thresholds: Any, default: float) -> list[float]:
    if thresholds is None:
        return [default]
    values = list(thresholds) if isinstance(thresholds, list | tuple | np.ndarray) else [thresholds]
    for t in values:
        if not 0.0 <= float(t) <= 1.0:
            raise ConfigurationError(
                f"Threshold values must be in [0, 1]. Received: {values}; use thresholds "
                "between 0 and 1 (predictions are compared with `y_pred > threshold`)"
            )
    return [float(t) for t in values]


class ConfusionMetric(Metric):
    """Accumulates the confusion counts at fixed thresholds; subclasses define :meth:`result`.

    Args:
        thresholds: the thresholds (stored as given, compared in the state dtype).
        keys: which counts to keep (subset of ``tp fp tn fn``).
        top_k, class_id: as :func:`prepare`.
        name, dtype: as :class:`Metric`.
    """

    # Weighted counts per threshold (those named in ``keys`` exist).
    true_positives: np.ndarray
    false_positives: np.ndarray
    true_negatives: np.ndarray
    false_negatives: np.ndarray

    def __init__(
        self,
        thresholds: list[float],
        keys: tuple[str, ...] = KEYS,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
        evenly: bool = False,
    ) -> None:
        self.thresholds = thresholds
        self._keys = keys
        self.top_k = top_k
        self.class_id = class_id
        self._evenly = evenly or evenly_distributed(thresholds)
        super().__init__(name=name, dtype=dtype)

    def reset_state(self) -> None:
        for key in self._keys:
            setattr(self, ATTRIBUTES[key], np.zeros(len(self.thresholds), dtype=self.dtype))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add a batch: labels, predictions in ``[0, 1]``, optional sample weights."""
        labels, pred, weights = prepare(
            y_true, y_pred, sample_weight, self.dtype, self.top_k, self.class_id
        )
        thresholds = np.asarray(self.thresholds, dtype=self.dtype)
        counts = confusion_counts(labels, pred, weights, thresholds, self._evenly)
        for key in self._keys:
            attr = ATTRIBUTES[key]
            setattr(self, attr, (getattr(self, attr) + counts[key]).astype(self.dtype))

    def _scalar(self, values: np.ndarray) -> float | np.ndarray:
        return float(values[0]) if len(self.thresholds) == 1 else np.asarray(values)


class _ConditionCount(ConfusionMetric):
    _key = "tp"

    def __init__(self, thresholds: Any = None, name: str | None = None, dtype: Any = None):
        self.init_thresholds = thresholds
        super().__init__(_thresholds_list(thresholds, 0.5), (self._key,), name=name, dtype=dtype)

    def result(self) -> float | np.ndarray:
        return self._scalar(getattr(self, ATTRIBUTES[self._key]))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConditionCount):
    """Weighted count of positive labels predicted above the threshold(s) (default 0.5)."""

    _key = "tp"


class FalsePositives(_ConditionCount):
    """Weighted count of negative labels predicted above the threshold(s)."""

    _key = "fp"


class TrueNegatives(_ConditionCount):
    """Weighted count of negative labels predicted at or below the threshold(s)."""

    _key = "tn"


class FalseNegatives(_ConditionCount):
    """Weighted count of positive labels predicted at or below the threshold(s)."""

    _key = "fn"


class _PrecisionRecall(ConfusionMetric):
    _other = "fp"

    def __init__(
        self,
        thresholds: Any = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        self.init_thresholds = thresholds
        default = 0.5 if top_k is None else NEG_INF
        super().__init__(
            [default] if thresholds is None else _thresholds_list(thresholds, default),
            ("tp", self._other),
            top_k,
            class_id,
            name,
            dtype,
        )

    def result(self) -> float | np.ndarray:
        tp = self.true_positives
        return self._scalar(div_no_nan(tp, tp + getattr(self, ATTRIBUTES[self._other])))

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "thresholds": self.init_thresholds,
            **fields(self, "top_k class_id"),
        }


class Precision(_PrecisionRecall):
    """``TP / (TP + FP)`` at the threshold(s) (default 0.5), optionally over the top k or one
    class."""

    _other = "fp"


class Recall(_PrecisionRecall):
    """``TP / (TP + FN)`` at the threshold(s) (default 0.5), optionally over the top k or one
    class."""

    _other = "fn"


def _rates(metric: ConfusionMetric) -> dict[str, np.ndarray]:
    tp, fp, tn, fn = (getattr(metric, ATTRIBUTES[key]) for key in KEYS)
    return {
        "sensitivity": div_no_nan(tp, tp + fn),
        "specificity": div_no_nan(tn, tn + fp),
        "precision": div_no_nan(tp, tp + fp),
    }


class SensitivitySpecificityBase(ConfusionMetric):
    """Best ``dependent`` rate among thresholds whose ``constrained`` rate is at least ``value``.

    Thresholds: ``[0.5]`` for ``num_thresholds=1``, else ``i / (num_thresholds - 1)``.
    """

    _constrained = "specificity"
    _dependent = "sensitivity"
    _value_name = "specificity"

    def __init__(
        self,
        value: float,
        num_thresholds: int = 200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        if num_thresholds <= 0:
            raise ConfigurationError(
                f"Argument `num_thresholds` must be an integer > 0. Received: "
                f"num_thresholds={num_thresholds}"
            )
        if not 0 <= value <= 1:
            raise ConfigurationError(
                f"Argument `{self._value_name}` must be in the range [0, 1]. Received: "
                f"{self._value_name}={value}"
            )
        self.value = value
        setattr(self, self._value_name, value)  # e.g. ``self.recall``, as Keras
        self.num_thresholds = num_thresholds
        if num_thresholds == 1:
            thresholds = [0.5]
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            thresholds = [0.0, *inner, 1.0]
        super().__init__(thresholds, KEYS, None, class_id, name, dtype, evenly=num_thresholds > 1)

    def result(self) -> float:
        rates = _rates(self)
        feasible = rates[self._constrained] >= self.value
        if not feasible.any():
            return 0.0
        return float(np.max(rates[self._dependent][feasible]))

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_thresholds": self.num_thresholds,
            self._value_name: self.value,
            "class_id": self.class_id,
        }


def _at_least(
    cls_name: str, doc: str, constrained: str, dependent: str, value_name: str
) -> type[SensitivitySpecificityBase]:
    """A :class:`SensitivitySpecificityBase` class whose first argument is ``value_name``."""

    def build(
        self: Any, num_thresholds: int, class_id: Any, name: Any, dtype: Any, **value: Any
    ) -> None:
        args = (value[value_name], num_thresholds, class_id, name, dtype)
        SensitivitySpecificityBase.__init__(self, *args)

    parameters = [(value_name, REQUIRED), ("num_thresholds", 200), ("class_id", None)]
    init = keyword_init([*parameters, ("name", None), ("dtype", None)], build)
    return table_class(
        cls_name,
        SensitivitySpecificityBase,
        __name__,
        doc,
        init,
        _constrained=constrained,
        _dependent=dependent,
        _value_name=value_name,
    )


SensitivityAtSpecificity = _at_least(
    "SensitivityAtSpecificity",
    "Best sensitivity (recall) where the specificity is at least ``specificity``.",
    constrained="specificity",
    dependent="sensitivity",
    value_name="specificity",
)
SpecificityAtSensitivity = _at_least(
    "SpecificityAtSensitivity",
    "Best specificity where the sensitivity (recall) is at least ``sensitivity``.",
    constrained="sensitivity",
    dependent="specificity",
    value_name="sensitivity",
)
PrecisionAtRecall = _at_least(
    "PrecisionAtRecall",
    "Best precision where the recall is at least ``recall``.",
    constrained="sensitivity",
    dependent="precision",
    value_name="recall",
)
RecallAtPrecision = _at_least(
    "RecallAtPrecision",
    "Best recall where the precision is at least ``precision``.",
    constrained="precision",
    dependent="sensitivity",
    value_name="precision",
)
