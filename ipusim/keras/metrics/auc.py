"""``AUC``: area under the ROC or precision-recall curve, as ``tf_keras`` 2.x.

The curve is sampled at ``num_thresholds`` thresholds (``i / (T - 1)`` with the end points moved
out by epsilon so that 0 and 1 predictions are counted) and integrated with a Riemann sum
(``interpolation``, ``minoring`` or ``majoring``); PR with interpolation uses Davis & Goadrich's
interpolation (https://www.biostat.wisc.edu/~page/rocpr.pdf), as Keras does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras import backend
from ipusim.keras.keyword_init import fields
from ipusim.keras.metrics.base import Metric
from ipusim.keras.metrics.confusion import (
    ATTRIBUTES,
    confusion_counts,
    div_no_nan,
    evenly_distributed,
    prepare,
)

_CURVES = ("ROC", "PR", "PR_GAIN")
_SUMMATIONS = ("interpolation", "minoring", "majoring")


def _parse(value: Any, allowed: tuple[str, ...], what: str) -> str:
    text = str(getattr(value, "value", value))
    for option in allowed:
        if text.lower() == option.lower():
            return option
    raise ConfigurationError(f'Invalid AUC {what}: "{value}". Valid options are: {list(allowed)}')


class AUC(Metric):
    """Approximate AUC of the ROC or PR curve, accumulated over batches.

    Args:
        num_thresholds: thresholds to sample the curve at (> 1); ignored when ``thresholds``.
        curve: ``"ROC"``, ``"PR"`` or ``"PR_GAIN"``.
        summation_method: ``"interpolation"``, ``"minoring"`` or ``"majoring"``.
        name, dtype: as :class:`Metric`.
        thresholds: explicit thresholds in ``[0, 1]`` (0 and 1 end points are added).
        multi_label: one curve per label (last axis), averaged (or weighted by
            ``label_weights``); otherwise every prediction is one point of a single curve.
        num_labels: number of labels when ``multi_label`` (else taken from the first batch).
        label_weights: non-negative weight per label.
        from_logits: apply a sigmoid to the predictions first.
    """

    # Weighted counts per threshold (and per label when ``multi_label``), set by reset_state.
    true_positives: np.ndarray
    false_positives: np.ndarray
    true_negatives: np.ndarray
    false_negatives: np.ndarray

    def __init__(
        self,
        num_thresholds: int = 200,
        curve: str = "ROC",
        summation_method: str = "interpolation",
        name: str | None = None,
        dtype: Any = None,
        thresholds: list[float] | None = None,
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Any = None,
        from_logits: bool = False,
    ) -> None:
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            thresholds = sorted(float(t) for t in thresholds)
            self.num_thresholds = len(thresholds) + 2
            evenly = evenly_distributed([0.0, *thresholds, 1.0])
        else:
            if num_thresholds <= 1:
                raise ConfigurationError(
                    "Argument `num_thresholds` must be an integer > 1. Received: "
                    f"num_thresholds={num_thresholds}"
                )
            self.num_thresholds = num_thresholds
            thresholds = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            evenly = True
        self._evenly = evenly
        eps = backend.epsilon()
        self._thresholds = np.array([0.0 - eps, *thresholds, 1.0 + eps])
        self.curve = _parse(curve, _CURVES, "curve")
        self.summation_method = _parse(summation_method, _SUMMATIONS, "summation_method")
        if not multi_label and num_labels:
            raise ConfigurationError("`num_labels` is needed only when `multi_label` is True.")
        self.multi_label = multi_label
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else np.asarray(label_weights)
        if self.label_weights is not None and np.any(self.label_weights < 0):
            raise ConfigurationError(
                f"All values of `label_weights` must be non-negative; received {label_weights}"
            )
        self._from_logits = from_logits
        super().__init__(name=name, dtype=dtype)

    @property
    def thresholds(self) -> list[float]:
        """The thresholds, end points included."""
        return list(self._thresholds)

    def reset_state(self) -> None:
        labels = self.num_labels if self.multi_label else None
        shape = (self.num_thresholds,) if labels is None else (self.num_thresholds, labels)
        self._built = not self.multi_label or labels is not None
        for attr in ATTRIBUTES.values():
            setattr(self, attr, np.zeros(shape, dtype=self.dtype))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add a batch of labels, predictions (probabilities, or logits) and sample weights."""
        if self._from_logits:
            logits = np.asarray(y_pred, dtype=np.float64)
            y_pred = (0.5 + 0.5 * np.tanh(0.5 * logits)).astype(self.dtype)  # overflow-free
        labels, pred, weights = prepare(y_true, y_pred, sample_weight, self.dtype)
        self._check_labels(labels)
        if self.label_weights is not None and not self.multi_label:
            lw = np.broadcast_to(self.label_weights.astype(self.dtype), pred.shape)
            weights = lw if weights is None else weights * lw
        counts = confusion_counts(
            labels,
            pred,
            weights,
            self._thresholds.astype(self.dtype),
            self._evenly,
            self.multi_label,
        )
        if self.multi_label and not self._built:
            self.num_labels = counts["tp"].shape[1]
            self._built = True
            self.reset_state()
        for key, attr in ATTRIBUTES.items():
            setattr(self, attr, (getattr(self, attr) + counts[key]).astype(self.dtype))

    def _check_labels(self, labels: np.ndarray) -> None:
        if not (self.multi_label or self.label_weights is not None):
            return
        last = labels.shape[-1] if labels.ndim else 1
        expected = self.num_labels if self.multi_label and self._built else None
        if self.label_weights is not None:
            expected = self.label_weights.shape[-1]
        if expected is not None and last != expected:
            raise ConfigurationError(
                f"AUC: number of labels is not consistent: the labels have {last} on their last "
                f"axis but {expected} are expected (num_labels / label_weights)"
            )

    def _interpolate_pr_auc(self) -> np.ndarray:
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = div_no_nan(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, div_no_nan(p[:-1], np.maximum(p[1:], 0)), 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            area = slope * (dtp + intercept * np.log(ratio))
        return div_no_nan(area.astype(self.dtype), np.maximum(tp[1:] + fn[1:], 0))

    def _curve_xy(self) -> tuple[np.ndarray, np.ndarray]:
        tp, fp = self.true_positives, self.false_positives
        tn, fn = self.true_negatives, self.false_negatives
        recall = div_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            return div_no_nan(fp, fp + tn), recall
        if self.curve == "PR":
            return recall, div_no_nan(tp, tp + fp)
        scale = div_no_nan(tp + fn, fp + tn)
        recall_gain = np.where(tp == 0, 0.0, 1.0 - scale * div_no_nan(fn, tp))
        precision_gain = np.where(tp == 0, 1.0, 1.0 - scale * div_no_nan(fp, tp))
        return np.maximum(recall_gain, 0.0).astype(self.dtype), precision_gain.astype(self.dtype)

    def result(self) -> float:
        if self.curve == "PR" and self.summation_method == "interpolation":
            terms = self._interpolate_pr_auc()
        else:
            x, y = self._curve_xy()
            if self.summation_method == "interpolation":
                heights = (y[:-1] + y[1:]) / 2.0
            elif self.summation_method == "minoring":
                heights = np.minimum(y[:-1], y[1:])
            else:
                heights = np.maximum(y[:-1], y[1:])
            terms = (x[:-1] - x[1:]) * heights
        if not self.multi_label:
            return float(np.sum(terms, dtype=np.float64))
        by_label = np.sum(terms, axis=0, dtype=np.float64)
        if self.label_weights is None:
            return float(np.mean(by_label)) if by_label.size else 0.0
        weights = self.label_weights.astype(np.float64)
        total = weights.sum()
        return float(np.sum(by_label * weights) / total) if total else 0.0

    def get_config(self) -> dict[str, Any]:
        config = {
            **super().get_config(),
            **fields(self, "num_thresholds curve summation_method multi_label num_labels"),
            "label_weights": None if self.label_weights is None else self.label_weights.tolist(),
            "from_logits": self._from_logits,
        }
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return config
