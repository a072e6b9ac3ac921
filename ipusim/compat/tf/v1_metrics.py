"""``tf.compat.v1.metrics``: streaming metrics for estimator ``eval_metric_ops``.

In TensorFlow a metric is a pair ``(value, update_op)`` over two local variables (a total and a
count). Here each call returns a :class:`StreamingMetric` (as both elements of the pair): it
holds the traced per-batch total and count; the estimator sends them to the host with the loss
and accumulates them over the evaluation, so ``value`` is the metric over every batch evaluated,
as TensorFlow reports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.compat.runtime import ops
from ipusim.compat.tf.v1_losses import difference

__all__ = ["StreamingMetric", "accuracy", "mean", "mean_absolute_error", "mean_squared_error"]


class StreamingMetric:
    """A metric's per-batch ``total`` and ``count`` (traced float32 scalars)."""

    def __init__(self, total: Any, count: Any) -> None:
        self.total = total
        self.count = count

    @staticmethod
    def result(totals: np.ndarray, counts: np.ndarray) -> float:
        """The metric over all batches: sum of totals over sum of counts (0 when empty)."""
        count = float(np.sum(counts, dtype=np.float64))
        return float(np.sum(totals, dtype=np.float64)) / count if count else 0.0


def _pair(values: Any, weights: Any) -> tuple[StreamingMetric, StreamingMetric]:
    """``(metric, metric)``: the per-batch total and count of the (weighted) ``values``."""
    values = ops.cast(values, "float32")
    if weights is None:
        size = float(np.prod(values.shape)) if values.shape else 1.0
        metric = StreamingMetric(ops.reduce_sum(values), ops.constant(size, dtype="float32"))
    else:
        weights = ops.cast(weights, "float32") * ops.ones_like(values)
        metric = StreamingMetric(ops.reduce_sum(values * weights), ops.reduce_sum(weights))
    return metric, metric


def mean(
    values: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[StreamingMetric, StreamingMetric]:
    """The (weighted) mean of ``values`` over the evaluation."""
    return _pair(values, weights)


def accuracy(
    labels: Any,
    predictions: Any,
    weights: Any = None,
    metrics_collections: Any = None,
    updates_collections: Any = None,
    name: str | None = None,
) -> tuple[StreamingMetric, StreamingMetric]:
    """The fraction of ``predictions`` equal to ``labels`` (compared in float32)."""
    return _pair(ops.equal(ops.cast(predictions, "float32"), ops.cast(labels, "float32")), weights)


def mean_squared_error(
    labels: Any, predictions: Any, weights: Any = None, **kwargs: Any
) -> tuple[StreamingMetric, StreamingMetric]:
    """The mean of ``(predictions - labels)**2`` over the evaluation."""
    return _pair(ops.square(difference(labels, predictions)), weights)


def mean_absolute_error(
    labels: Any, predictions: Any, weights: Any = None, **kwargs: Any
) -> tuple[StreamingMetric, StreamingMetric]:
    """The mean of ``|predictions - labels|`` over the evaluation."""
    return _pair(ops.abs(difference(labels, predictions)), weights)
