"""RootMeanSquaredError, MeanRelativeError, MeanTensor and R2Score (``tf_keras`` 2.x)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras.keyword_init import fields
from ipusim.keras.metrics.base import Mean, Metric
from ipusim.keras.metrics.confusion import broadcast_weights, div_no_nan
from ipusim.keras.metrics.functions import squeeze_or_expand_dimensions


class RootMeanSquaredError(Mean):
    """``sqrt`` of the weighted mean of ``(y_pred - y_true)**2`` over every element seen."""

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)

    def update_state(  # type: ignore[override]  # Keras': (y_true, y_pred), not Mean's (values)
        self, y_true: Any, y_pred: Any, sample_weight: Any = None
    ) -> None:
        y_true = np.asarray(y_true, dtype=self.dtype)
        y_pred = np.asarray(y_pred, dtype=self.dtype)
        y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        super().update_state(np.square(y_pred - y_true), sample_weight=sample_weight)

    def result(self) -> float:
        return float(np.sqrt(self.total / self.count)) if self.count != 0 else 0.0


class MeanRelativeError(Mean):
    """Weighted mean of ``|y_true - y_pred| / normalizer`` (0 where the normalizer is 0).

    Args:
        normalizer: values of the predictions' shape (or broadcastable to it).
    """

    def __init__(self, normalizer: Any, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.normalizer = np.asarray(normalizer, dtype=self.dtype)

    def update_state(  # type: ignore[override]  # Keras': (y_true, y_pred), not Mean's (values)
        self, y_true: Any, y_pred: Any, sample_weight: Any = None
    ) -> None:
        y_true = np.asarray(y_true, dtype=self.dtype)
        y_pred = np.asarray(y_pred, dtype=self.dtype)
        y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        normalizer = self.normalizer
        if normalizer.ndim == y_pred.ndim + 1 and normalizer.shape[-1] == 1:
            normalizer = normalizer.reshape(normalizer.shape[:-1])
        errors = div_no_nan(np.abs(y_true - y_pred), np.broadcast_to(normalizer, y_pred.shape))
        super().update_state(errors, sample_weight=sample_weight)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "normalizer": self.normalizer.tolist()}


class MeanTensor(Metric):
    """Element-wise weighted mean of tensors of one fixed shape.

    Args:
        name, dtype: as :class:`Metric`.
        shape: the values' shape; taken from the first update when None.
    """

    def __init__(self, name: str = "mean_tensor", dtype: Any = None, shape: Any = None):
        self._shape = None if shape is None else tuple(shape)
        super().__init__(name=name, dtype=dtype)

    def reset_state(self) -> None:
        shape = self._shape
        self.total = None if shape is None else np.zeros(shape, dtype=self.dtype)
        self.count = None if shape is None else np.zeros(shape, dtype=self.dtype)

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        values = np.asarray(values, dtype=self.dtype)
        if self.total is None:
            self._shape = values.shape
            self.reset_state()
        if values.shape != self._shape:
            raise ConfigurationError(
                f"MeanTensor input values must always have the same shape. Expected shape "
                f"(set during the first call): {self._shape}. Got: {values.shape}."
            )
        counts = np.ones_like(values)
        if sample_weight is not None:
            weights = broadcast_weights(sample_weight, values, self.dtype)
            counts, values = counts * weights, values * weights
        self.total = (self.total + values).astype(self.dtype)
        self.count = (self.count + counts).astype(self.dtype)

    def result(self) -> np.ndarray:
        total, count = self.total, self.count
        if total is None or count is None:  # reset_state sets both (None before any update)
            raise ConfigurationError(
                "MeanTensor does not have any value yet. Please call the MeanTensor instance or "
                "use `.update_state(value)` before retrieving the result."
            )
        return div_no_nan(total, count)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "shape": self._shape}


_AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")


class R2Score(Metric):
    """Coefficient of determination per output column, aggregated.

    Args:
        class_aggregation: ``"uniform_average"``, ``"variance_weighted_average"`` or None
            (one score per column).
        num_regressors: independent variables, for the adjusted R2 (0: plain R2).
        name, dtype: as :class:`Metric`.
    """

    def __init__(
        self,
        class_aggregation: str | None = "uniform_average",
        num_regressors: int = 0,
        name: str = "r2_score",
        dtype: Any = None,
    ) -> None:
        if class_aggregation not in _AGGREGATIONS:
            raise ConfigurationError(
                "Invalid value for argument `class_aggregation`. Expected one of "
                f"{_AGGREGATIONS}. Received: class_aggregation={class_aggregation}"
            )
        if num_regressors < 0:
            raise ConfigurationError(
                "Invalid value for argument `num_regressors`. Expected a value >= 0. "
                f"Received: num_regressors={num_regressors}"
            )
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        super().__init__(name=name, dtype=dtype)

    def reset_state(self) -> None:
        self._columns: int | None = getattr(self, "_columns", None)
        zeros = None if self._columns is None else np.zeros(self._columns, dtype=self.dtype)
        self.sum, self.squared_sum, self.total_mse, self.count = (
            None if zeros is None else zeros.copy() for _ in range(4)
        )
        self.num_samples = 0

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_true = np.asarray(y_true, dtype=self.dtype)
        y_pred = np.asarray(y_pred, dtype=self.dtype)
        if y_true.ndim != 2 or y_pred.ndim != 2:
            raise ConfigurationError(
                "R2Score expects 2D inputs with shape (batch_size, output_dim). Received input "
                f"shapes: y_pred.shape={y_pred.shape} and y_true.shape={y_true.shape}."
            )
        if self.sum is None:
            self._columns = y_pred.shape[-1]
            self.reset_state()
        w = np.asarray(1.0 if sample_weight is None else sample_weight, dtype=self.dtype)
        if w.ndim == 1:
            w = w[:, None]
        w = np.broadcast_to(w, y_true.shape)
        weighted = y_true * w
        t = np.dtype(self.dtype).type
        self.sum = (self.sum + weighted.sum(axis=0)).astype(t)
        self.squared_sum = (self.squared_sum + (y_true * weighted).sum(axis=0)).astype(t)
        self.total_mse = (self.total_mse + ((y_true - y_pred) ** 2 * w).sum(axis=0)).astype(t)
        self.count = (self.count + w.sum(axis=0)).astype(t)
        self.num_samples += y_true.size

    def result(self) -> float | np.ndarray:
        sums, squared_sum, total_mse, count = self.sum, self.squared_sum, self.total_mse, self.count
        if sums is None or squared_sum is None or total_mse is None or count is None:
            return 0.0  # reset_state sets the four together (None before the first batch)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = sums / count
            total = squared_sum - sums * mean
            raw = 1 - total_mse / total
        raw = np.where(np.isinf(raw), 0.0, raw).astype(self.dtype)
        if self.class_aggregation == "uniform_average":
            score = float(np.mean(raw))
        elif self.class_aggregation == "variance_weighted_average":
            score = float(np.sum(total * raw) / np.sum(total))
        else:
            return raw
        if self.num_regressors:
            n, p = self.num_samples, self.num_regressors
            if p >= n - 1:
                warnings.warn(
                    "More independent predictors than datapoints in adjusted R2 score "
                    "(or exactly one fewer: a division by zero). Falling back to standard R2 "
                    "score.",
                    stacklevel=2,
                )
            else:
                score = 1.0 - (1.0 - score) * (n - 1.0) / (n - p - 1.0)
        return score

    def get_config(self) -> dict[str, Any]:
        return super().get_config() | fields(self, "class_aggregation num_regressors")
