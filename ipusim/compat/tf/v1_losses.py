"""``tf.compat.v1.losses`` and ``tf.compat.v1.layers.dense``: the TF1 loss and layer functions
estimator ``model_fn``\\ s call, on the runtime's ops and ipusim's Keras layers.

The losses use TF1's default reduction ``SUM_BY_NONZERO_WEIGHTS``: with a scalar weight (the
usual 1.0) that is the mean of the weighted per-example losses; with per-example weights, their
sum divided by the number of non-zero weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ipusim.compat.runtime import ops
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.keras import layers

__all__ = [
    "Reduction",
    "absolute_difference",
    "dense",
    "mean_squared_error",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]


class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS


def _reduce(losses: Any, weights: Any, reduction: str) -> Any:
    """TF1 ``compute_weighted_loss``: weights broadcast to the losses, then reduced."""
    full = ops.ones_like(losses) * ops.cast(ops.constant(weights), "float32")
    weighted = losses * full
    if reduction == Reduction.NONE:
        return weighted
    total = ops.reduce_sum(weighted)
    if reduction == Reduction.SUM:
        return total
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        return total / ops.reduce_sum(ops.ones_like(losses))
    if reduction == Reduction.MEAN:
        denominator = ops.reduce_sum(full)
    elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
        denominator = ops.reduce_sum(ops.cast(ops.not_equal(full, 0.0), "float32"))
    else:
        raise ConfigurationError(f"Invalid Reduction Key {reduction!r}")
    # TF's safe division: 0 when nothing is weighted.
    return (
        total / ops.maximum(denominator, 1e-30) * ops.cast(ops.greater(denominator, 0.0), "float32")
    )


def difference(labels: Any, predictions: Any) -> Any:
    """``predictions - labels`` in float32 (the TF1 losses' and metrics' error term)."""
    return ops.cast(predictions, "float32") - ops.cast(labels, "float32")


def sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: Any = None,
    loss_collection: Any = None,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Any:
    """Cross entropy of integer ``labels`` against ``logits`` (TF1 ``losses``)."""
    per_example = ops.nn.sparse_softmax_cross_entropy_with_logits(
        labels=ops.cast(labels, "int32"), logits=logits
    )
    return _reduce(per_example, weights, reduction)


def softmax_cross_entropy(
    onehot_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: Any = None,
    loss_collection: Any = None,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Any:
    """Cross entropy of one-hot ``onehot_labels`` against ``logits`` (TF1 ``losses``)."""
    labels = ops.cast(onehot_labels, "float32")
    if label_smoothing:
        classes = float(labels.shape[-1])
        labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
    per_example = ops.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return _reduce(per_example, weights, reduction)


def _pointwise(name: str, fn: Callable[[Any], Any], formula: str) -> Callable[..., Any]:
    """A TF1 loss of ``fn(predictions - labels)`` per element, reduced."""

    def loss(
        labels: Any,
        predictions: Any,
        weights: Any = 1.0,
        scope: Any = None,
        loss_collection: Any = None,
        reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
    ) -> Any:
        return _reduce(fn(difference(labels, predictions)), weights, reduction)

    loss.__name__ = loss.__qualname__ = name
    loss.__doc__ = f"``{formula}`` reduced (TF1 ``losses``)."
    return loss


mean_squared_error = _pointwise("mean_squared_error", ops.square, "(predictions - labels)²")
absolute_difference = _pointwise("absolute_difference", ops.abs, "|predictions - labels|")


def dense(
    inputs: Any,
    units: int,
    activation: Any = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = "zeros",
    kernel_regularizer: Any = None,
    bias_regularizer: Any = None,
    activity_regularizer: Any = None,
    kernel_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Any:
    """``tf.compat.v1.layers.dense``: a new Keras ``Dense`` layer applied to ``inputs``.

    TF1's default kernel initializer is Glorot uniform, as Keras'. Variable reuse by name
    (``reuse=True``) is not simulated.
    """
    if reuse:
        raise UnsupportedError(
            "tf.compat.v1.layers.dense(reuse=True) is not simulated by ipusim; keep a "
            "tf.keras.layers.Dense object and call it again instead"
        )
    return layers.Dense(
        units,
        activation=activation,
        use_bias=use_bias,
        kernel_initializer=kernel_initializer or "glorot_uniform",
        bias_initializer=bias_initializer or "zeros",
        kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer,
        kernel_constraint=kernel_constraint,
        bias_constraint=bias_constraint,
        trainable=trainable,
        name=name,
    )(inputs)
