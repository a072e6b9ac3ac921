"""FBetaScore and F1Score (``tf_keras`` 2.x ``f_score_metrics``).

Predictions become 0/1 per class: above ``threshold`` when given, else the row's maximum (if not
~0). Per-class weighted TP/FP/FN (summed over everything for ``average="micro"``) give
``(1 + beta**2) P R / (beta**2 P + R)``, averaged as ``average`` says.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras.keyword_init import fields
from ipusim.keras.metrics.base import Metric
from ipusim.keras.metrics.confusion import div_no_nan

_AVERAGES = (None, "micro", "macro", "weighted")
#: A running count: one value per class, or a numpy scalar for ``average="micro"``.
_Count: TypeAlias = "np.ndarray | np.floating[Any]"


class FBetaScore(Metric):
    """F-beta score of multi-class / multi-label predictions of shape ``(batch, classes)``.

    Args:
        average: None (one score per class), ``"micro"``, ``"macro"`` or ``"weighted"``.
        beta: weight of recall relative to precision (a float > 0).
        threshold: a float in ``(0, 1]``; None takes each row's maximum as the prediction.
        name, dtype: as :class:`Metric`.
    """

    # Weighted counts, set by reset_state; None until the first batch gives the number of
    # classes.
    true_positives: _Count | None
    false_positives: _Count | None
    false_negatives: _Count | None
    weights_sum: _Count | None

    def __init__(
        self,
        average: str | None = None,
        beta: float = 1.0,
        threshold: float | None = None,
        name: str = "fbeta_score",
        dtype: Any = None,
    ) -> None:
        if average not in _AVERAGES:
            raise ConfigurationError(
                "Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                f"'weighted'}}. Received: average={average}"
            )
        if not isinstance(beta, float) or beta <= 0.0:
            raise ConfigurationError(
                f"Invalid `beta` argument value. It should be a Python float > 0. Received: "
                f"beta={beta!r}"
            )
        if threshold is not None and (
            not isinstance(threshold, float) or not 0.0 < threshold <= 1.0
        ):
            raise ConfigurationError(
                "Invalid `threshold` argument value. It should be a Python float with "
                f"0 < threshold <= 1. Received: threshold={threshold!r}"
            )
        self.average, self.beta, self.threshold = average, beta, threshold
        self._axis = None if average == "micro" else 0
        self._classes: int | None = None
        super().__init__(name=name, dtype=dtype)

    def reset_state(self) -> None:
        shape = () if self._axis is None else (self._classes or 0,)
        ready = self._classes is not None
        for attr in ("true_positives", "false_positives", "false_negatives", "weights_sum"):
            setattr(self, attr, np.zeros(shape, dtype=self.dtype) if ready else None)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_true = np.asarray(y_true, dtype=self.dtype)
        y_pred = np.asarray(y_pred, dtype=self.dtype)
        if y_true.ndim != 2 or y_pred.ndim != 2:
            raise ConfigurationError(
                f"{type(self).__name__} expects 2D inputs with shape (batch_size, output_dim). "
                f"Received input shapes: y_pred.shape={y_pred.shape} and "
                f"y_true.shape={y_true.shape}."
            )
        if self.true_positives is None:
            self._classes = y_pred.shape[-1]
            self.reset_state()
        if self.threshold is None:
            top = y_pred.max(axis=-1, keepdims=True)
            pred = ((y_pred >= top) & (np.abs(y_pred) > 1e-9)).astype(self.dtype)
        else:
            pred = (y_pred > self.threshold).astype(self.dtype)
        w = None
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=self.dtype)
            w = w[:, None] if w.ndim == 1 else w

        def total(values: np.ndarray) -> _Count:
            summed: _Count = np.sum(values if w is None else values * w, axis=self._axis)
            return summed

        t = np.dtype(self.dtype).type
        tp, fp, fn, weights_sum = self._counts()
        self.true_positives = (tp + total(pred * y_true)).astype(t)
        self.false_positives = (fp + total(pred * (1 - y_true))).astype(t)
        self.false_negatives = (fn + total((1 - pred) * y_true)).astype(t)
        self.weights_sum = (weights_sum + total(y_true)).astype(t)

    def _counts(self) -> tuple[_Count, _Count, _Count, _Count]:
        """TP, FP, FN and the weights' sum, once the first batch has set them."""
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        weights_sum = self.weights_sum
        # reset_state sets the four together (to None only before the first batch).
        assert tp is not None and fp is not None and fn is not None and weights_sum is not None
        return tp, fp, fn, weights_sum

    def result(self) -> float | np.ndarray:
        if self.true_positives is None:
            return 0.0
        tp, fp, fn, weights_sum = self._counts()
        precision = div_no_nan(tp, tp + fp)
        recall = div_no_nan(tp, tp + fn)
        beta2 = np.dtype(self.dtype).type(self.beta) ** 2
        score = div_no_nan(precision * recall, beta2 * precision + recall) * (1 + beta2)
        if self.average == "weighted":
            weights = div_no_nan(weights_sum, np.sum(weights_sum))
            return float(np.sum(score * weights))
        if self.average is not None:
            return float(np.mean(score))
        return np.asarray(score, dtype=self.dtype)

    def get_config(self) -> dict[str, Any]:
        return super().get_config() | fields(self, "average beta threshold")


class F1Score(FBetaScore):
    """F1 score: :class:`FBetaScore` with ``beta=1``."""

    def __init__(
        self,
        average: str | None = None,
        threshold: float | None = None,
        name: str = "f1_score",
        dtype: Any = None,
    ) -> None:
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["beta"]
        return config
