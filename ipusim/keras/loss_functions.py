"""Per-example Keras loss functions beyond the cross-entropies and MSE/MAE (tf_keras 2.x).

Each is built from graph ops, so it differentiates with the training graph, and also takes NumPy
arrays (see :func:`ipusim.keras.loss_utils.eager_capable`), which is how the metrics of the same
names use them. Formulas follow ``tf_keras/src/losses.py`` and ``tf_keras/src/backend.py``
(tf_keras 2.x); reductions over ``axis=-1`` unless stated.
"""

from __future__ import annotations

from typing import Any

from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.keras import backend
from ipusim.keras.loss_utils import eager_capable, prepare_labels, smooth_labels

#: Smallest base ``power`` takes the log of for a non-integer exponent: keeps ``0**gamma`` at 0
#: with a zero (not NaN) gradient; the value changes by less than float32's smallest normal (D).
_POW_FLOOR = 1e-30


def power(x: Symbol, exponent: float) -> Symbol:
    """``x ** exponent`` for ``x >= 0``: repeated products for whole exponents, else exp-log."""
    if float(exponent).is_integer() and 0 <= exponent <= 8:
        out = m.add(m.multiply(x, 0.0), 1.0)
        for _ in range(int(exponent)):
            out = m.multiply(out, x)
        return out
    return m.exp(m.multiply(m.log(m.maximum(x, _POW_FLOOR)), float(exponent)))


def _maybe_convert_labels(y_true: Symbol) -> Symbol:
    """0/1 labels become -1/1 (all of them, only when every label is 0 or 1), as Keras' hinge.

    ``y * (y - 1)`` is 0 exactly for 0 and 1, so ``flag = (sum of its squares == 0)`` marks a
    binary batch and ``y + flag * (y - 1)`` is ``2y - 1`` then, ``y`` otherwise. Labels carry no
    gradient, so the data-dependent choice needs no select op.
    """
    off = m.subtract(y_true, 1.0)
    spread = m.reduce_sum(m.square(m.multiply(y_true, off)))
    flag = m.cast(m.equal(spread, 0.0), y_true.dtype)
    return m.add(y_true, m.multiply(flag, off))


@eager_capable
def hinge(y_true: Any, y_pred: Any) -> Symbol:
    """``mean(max(1 - y_true * y_pred, 0), -1)``; 0/1 labels are taken as -1/1."""
    y_true = _maybe_convert_labels(prepare_labels(y_true, y_pred, "Hinge"))
    return m.reduce_mean(m.relu(m.subtract(1.0, m.multiply(y_true, y_pred))), axis=-1)


@eager_capable
def squared_hinge(y_true: Any, y_pred: Any) -> Symbol:
    """``mean(max(1 - y_true * y_pred, 0) ** 2, -1)``; 0/1 labels are taken as -1/1."""
    y_true = _maybe_convert_labels(prepare_labels(y_true, y_pred, "SquaredHinge"))
    margin = m.relu(m.subtract(1.0, m.multiply(y_true, y_pred)))
    return m.reduce_mean(m.square(margin), axis=-1)


@eager_capable
def categorical_hinge(y_true: Any, y_pred: Any) -> Symbol:
    """``max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` over the last axis."""
    y_true = prepare_labels(y_true, y_pred, "CategoricalHinge")
    pos = m.reduce_sum(m.multiply(y_true, y_pred), axis=-1)
    neg = m.reduce_max(m.multiply(m.subtract(1.0, y_true), y_pred), axis=-1)
    return m.relu(m.add(m.subtract(neg, pos), 1.0))


@eager_capable
def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Symbol:
    """``0.5 e**2`` where ``|e| <= delta``, else ``delta |e| - 0.5 delta**2``; mean over -1.

    Written as ``0.5 q**2 + delta (|e| - q)`` with ``q = min(|e|, delta)``: the same values and
    gradients as Keras' select, from ops that have gradients.
    """
    y_true = prepare_labels(y_true, y_pred, "Huber")
    abs_error = m.abs(m.subtract(y_pred, y_true))
    quadratic = m.minimum(abs_error, float(delta))
    linear = m.subtract(abs_error, quadratic)
    per = m.add(m.multiply(m.square(quadratic), 0.5), m.multiply(linear, float(delta)))
    return m.reduce_mean(per, axis=-1)


@eager_capable
def log_cosh(y_true: Any, y_pred: Any) -> Symbol:
    """``mean(log(cosh(y_pred - y_true)), -1)`` as ``x + softplus(-2x) - log 2`` (no overflow)."""
    x = m.subtract(y_pred, prepare_labels(y_true, y_pred, "LogCosh"))
    per = m.add(x, m.softplus(m.multiply(x, -2.0)))
    return m.reduce_mean(m.subtract(per, 0.6931471805599453), axis=-1)


@eager_capable
def kl_divergence(y_true: Any, y_pred: Any) -> Symbol:
    """``sum(y_true * log(y_true / y_pred), -1)`` with both clipped to ``[epsilon, 1]``."""
    eps = backend.epsilon()
    y_true = m.clip(prepare_labels(y_true, y_pred, "KLDivergence"), eps, 1.0)
    y_pred = m.clip(y_pred, eps, 1.0)
    return m.reduce_sum(m.multiply(y_true, m.log(m.divide(y_true, y_pred))), axis=-1)


@eager_capable
def poisson(y_true: Any, y_pred: Any) -> Symbol:
    """``mean(y_pred - y_true * log(y_pred + epsilon), -1)``."""
    y_true = prepare_labels(y_true, y_pred, "Poisson")
    log_pred = m.log(m.add(y_pred, backend.epsilon()))
    return m.reduce_mean(m.subtract(y_pred, m.multiply(y_true, log_pred)), axis=-1)


def l2_normalize(x: Symbol, axis: int = -1) -> Symbol:
    """``x / sqrt(max(sum(x**2, axis), 1e-12))``, as ``tf.linalg.l2_normalize`` (whose default
    ``epsilon`` is 1e-12: tensorflow/python/ops/nn_impl.py, S)."""
    square_sum = m.reduce_sum(m.square(x), axis=axis, keepdims=True)
    return m.divide(x, m.sqrt(m.maximum(square_sum, 1e-12)))


@eager_capable
def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Symbol:
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`` (-1 is best)."""
    y_true = prepare_labels(y_true, y_pred, "CosineSimilarity")
    product = m.multiply(l2_normalize(y_true, axis), l2_normalize(y_pred, axis))
    return m.negative(m.reduce_sum(product, axis=axis))


@eager_capable
def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Symbol:
    """``100 * mean(|(y_true - y_pred) / max(|y_true|, epsilon)|, -1)``."""
    y_true = prepare_labels(y_true, y_pred, "MeanAbsolutePercentageError")
    scale = m.maximum(m.abs(y_true), backend.epsilon())
    diff = m.abs(m.divide(m.subtract(y_true, y_pred), scale))
    return m.multiply(m.reduce_mean(diff, axis=-1), 100.0)


@eager_capable
def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Symbol:
    """``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2, -1)``."""
    y_true = prepare_labels(y_true, y_pred, "MeanSquaredLogarithmicError")
    eps = backend.epsilon()
    first = m.log(m.add(m.maximum(y_pred, eps), 1.0))
    second = m.log(m.add(m.maximum(y_true, eps), 1.0))
    return m.reduce_mean(m.square(m.subtract(first, second)), axis=-1)


def binary_crossentropy_elementwise(
    y_true: Symbol, y_pred: Symbol, from_logits: bool = False
) -> Symbol:
    """Keras' ``backend.binary_crossentropy``: per element, not reduced.

    Probabilities straight from a sigmoid op are scored from its logits with the stable form (as
    tf.keras does in a traced function); other probabilities are clipped to
    ``[epsilon, 1 - epsilon]``.
    """
    if not from_logits and y_pred.node.op.name == "sigmoid":
        y_pred, from_logits = y_pred.node.inputs[0], True
    if from_logits:
        return nn.sigmoid_cross_entropy_with_logits(y_true, y_pred)
    eps = backend.epsilon()
    p = m.clip(y_pred, eps, 1.0 - eps)
    pos = m.multiply(y_true, m.log(m.add(p, eps)))
    neg = m.multiply(m.subtract(1.0, y_true), m.log(m.add(m.subtract(1.0, p), eps)))
    return m.negative(m.add(pos, neg))


@eager_capable
def binary_focal_crossentropy(
    y_true: Any,
    y_pred: Any,
    apply_class_balancing: bool = False,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Symbol:
    """Binary cross-entropy scaled by ``(1 - p_t) ** gamma`` (and ``alpha`` balancing)."""
    y_true = prepare_labels(y_true, y_pred, "BinaryFocalCrossentropy")
    if label_smoothing:
        y_true = smooth_labels(y_true, label_smoothing, 2)
    probs = m.sigmoid(y_pred) if from_logits else y_pred
    p_t = m.add(
        m.multiply(y_true, probs), m.multiply(m.subtract(1.0, y_true), m.subtract(1.0, probs))
    )
    focal = m.multiply(
        power(m.subtract(1.0, p_t), gamma),
        binary_crossentropy_elementwise(y_true, y_pred, from_logits),
    )
    if apply_class_balancing:
        weight = m.add(m.multiply(y_true, alpha), m.multiply(m.subtract(1.0, y_true), 1 - alpha))
        focal = m.multiply(weight, focal)
    return m.reduce_mean(focal, axis=axis)


@eager_capable
def categorical_focal_crossentropy(
    y_true: Any,
    y_pred: Any,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Symbol:
    """``sum(alpha (1 - p)**gamma * -y_true log p, axis)`` of normalised, clipped ``p``."""
    y_true = prepare_labels(y_true, y_pred, "CategoricalFocalCrossentropy")
    if label_smoothing:
        y_true = smooth_labels(y_true, label_smoothing, y_pred.shape[axis])
    probs = nn.softmax(y_pred, axis=axis) if from_logits else y_pred
    probs = m.divide(probs, m.reduce_sum(probs, axis=axis, keepdims=True))
    eps = backend.epsilon()
    probs = m.clip(probs, eps, 1.0 - eps)
    cce = m.negative(m.multiply(y_true, m.log(probs)))
    weight = m.multiply(power(m.subtract(1.0, probs), gamma), float(alpha))
    return m.reduce_sum(m.multiply(weight, cce), axis=axis)


kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
