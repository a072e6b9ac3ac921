"""Keras losses, built from graph ops (they run inside the traced training graph).

Semantics follow tf.keras 2.x: ``from_logits=False`` losses clip probabilities to
``[epsilon, 1 - epsilon]``; when the predictions come straight from a softmax op the softmax is
skipped and the fused, stable cross-entropy on its logits is used instead, as TensorFlow does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from ipusim.errors import ConfigurationError, InputDataError, UnsupportedError
from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn, shape
from ipusim.keras import backend
from ipusim.keras.keyword_init import keyword_init, table_class
from ipusim.keras.loss_functions import (
    binary_crossentropy_elementwise,
    binary_focal_crossentropy,
    categorical_focal_crossentropy,
    categorical_hinge,
    cosine_similarity,
    hinge,
    huber,
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
from ipusim.keras.loss_utils import (
    as_float,
    eager_capable,
    prepare_labels,
    smooth_labels,
    softmax_logits,
)
from ipusim.keras.loss_utils import float_array as _float_array

REDUCTIONS = ("auto", "sum_over_batch_size", "sum", "none")


def _sparse_labels(y_true: Symbol, y_pred: Symbol, loss_name: str) -> Symbol:
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = shape.squeeze(y_true, axis=-1)
    if y_true.ndim != y_pred.ndim - 1 or any(
        a is not None and b is not None and a != b for a, b in zip(y_true.shape, y_pred.shape)
    ):
        raise InputDataError(
            f"{loss_name} expects integer class labels of shape {y_pred.shape[:-1]} (or with a "
            f"trailing 1) for predictions of shape {y_pred.shape}; received labels of shape "
            f"{y_true.shape}. For one-hot labels use CategoricalCrossentropy instead."
        )
    if y_true.dtype not in ("int32", "int64"):
        y_true = m.cast(y_true, "int32")
    return y_true


def squeeze_or_expand_dimensions(y_pred: Symbol, y_true: Symbol) -> tuple[Symbol, Symbol]:
    """Keras' rank reconciliation of labels and predictions (``losses_utils``).

    When the ranks differ by one, the trailing axis of the higher-rank one is squeezed if it is 1
    (or unknown), so ``(N,)`` labels meet ``(N, 1)`` predictions; except that predictions of
    rank one more than the labels whose last axis is not 1 are sparse-label scores and are kept.
    """
    diff = y_pred.ndim - y_true.ndim
    if diff == 1 and y_pred.shape[-1] in (1, None):
        y_pred = shape.squeeze(y_pred, axis=-1)
    elif diff == -1 and y_true.shape[-1] in (1, None):
        y_true = shape.squeeze(y_true, axis=-1)
    return y_pred, y_true


def _check_broadcastable(y_true: Symbol, y_pred: Symbol, loss_name: str) -> None:
    """As TensorFlow's elementwise difference: the shapes must broadcast (after the squeeze)."""
    for a, b in zip(reversed(y_true.shape), reversed(y_pred.shape)):
        if a is not None and b is not None and a != b and 1 not in (a, b):
            raise InputDataError(
                f"{loss_name}: labels of shape {y_true.shape} and predictions of shape "
                f"{y_pred.shape} are incompatible (they do not broadcast); give labels of the "
                "predictions' shape"
            )


# ---------------------------------------------------------------------- loss functions
@eager_capable
def sparse_categorical_crossentropy(
    y_true: Any, y_pred: Any, from_logits: bool = False, axis: int = -1
) -> Symbol:
    """Per-example cross-entropy of integer labels against class scores."""
    if axis not in (-1, y_pred.ndim - 1):
        raise UnsupportedError("sparse_categorical_crossentropy: only axis=-1 is supported")
    labels = _sparse_labels(y_true, y_pred, "SparseCategoricalCrossentropy")
    logits = y_pred if from_logits else softmax_logits(y_pred)
    if logits is None:
        eps = backend.epsilon()
        logits = m.log(m.clip(y_pred, eps, 1.0 - eps))
    return nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


@eager_capable
def categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Symbol:
    """Per-example cross-entropy of one-hot (or soft) labels against class scores."""
    if axis not in (-1, y_pred.ndim - 1):
        raise UnsupportedError("categorical_crossentropy: only axis=-1 is supported")
    y_true = prepare_labels(
        y_true,
        y_pred,
        "CategoricalCrossentropy",
        " For integer labels use SparseCategoricalCrossentropy instead.",
    )
    if label_smoothing:
        y_true = smooth_labels(y_true, label_smoothing, y_pred.shape[-1])
    logits = y_pred if from_logits else softmax_logits(y_pred)
    if logits is not None:
        return nn.softmax_cross_entropy_with_logits(y_true, logits)
    eps = backend.epsilon()
    probs = m.divide(y_pred, m.reduce_sum(y_pred, axis=-1, keepdims=True))
    probs = m.clip(probs, eps, 1.0 - eps)
    return m.negative(m.reduce_sum(m.multiply(y_true, m.log(probs)), axis=-1))


@eager_capable
def binary_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Symbol:
    """Binary cross-entropy, averaged over the last axis."""
    y_true = prepare_labels(y_true, y_pred, "BinaryCrossentropy")
    if label_smoothing:
        y_true = smooth_labels(y_true, label_smoothing, 2)
    per = binary_crossentropy_elementwise(y_true, y_pred, from_logits)
    return m.reduce_mean(per, axis=axis)


@eager_capable
def mean_squared_error(y_true: Any, y_pred: Any) -> Symbol:
    """Mean of squared differences over the last axis."""
    _check_broadcastable(y_true, y_pred, "MeanSquaredError")
    return m.reduce_mean(m.square(m.subtract(y_pred, as_float(y_true, y_pred))), axis=-1)


@eager_capable
def mean_absolute_error(y_true: Any, y_pred: Any) -> Symbol:
    """Mean of absolute differences over the last axis."""
    _check_broadcastable(y_true, y_pred, "MeanAbsoluteError")
    return m.reduce_mean(m.abs(m.subtract(y_pred, as_float(y_true, y_pred))), axis=-1)


mse = mean_squared_error
mae = mean_absolute_error


# ---------------------------------------------------------------------- loss classes
class Loss:
    """Base class: ``loss(y_true, y_pred, sample_weight=None)`` -> reduced loss.

    Args:
        reduction: ``"auto"``/``"sum_over_batch_size"`` (mean over examples), ``"sum"`` or
            ``"none"``.
        name: the loss name.
    """

    def __init__(self, reduction: str = "auto", name: str | None = None) -> None:
        if reduction not in REDUCTIONS:
            raise ConfigurationError(
                f"Loss `reduction` must be one of {REDUCTIONS}, received {reduction!r}"
            )
        self.reduction = reduction
        self.name = name or backend.to_snake_case(type(self).__name__)

    def call(self, y_true: Any, y_pred: Any) -> Symbol:
        raise NotImplementedError

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        if not isinstance(y_pred, Symbol):
            return _eager_loss(self, y_true, y_pred, sample_weight)
        per_example = self.call(y_true, y_pred)
        if sample_weight is not None:
            weight = (
                m.cast(sample_weight, per_example.dtype)
                if getattr(sample_weight, "dtype", per_example.dtype) != per_example.dtype
                else sample_weight
            )
            per_example = m.multiply(per_example, weight)
        if self.reduction == "none":
            return per_example
        if self.reduction == "sum":
            return m.reduce_sum(per_example)
        return m.reduce_mean(per_example)

    def get_config(self) -> dict[str, Any]:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A loss class around a per-example loss function with fixed keyword arguments."""

    def __init__(
        self,
        fn: Callable[..., Symbol],
        reduction: str = "auto",
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs
        if "from_logits" in kwargs:  # as Keras' cross-entropy classes
            self.from_logits = kwargs["from_logits"]

    def call(self, y_true: Any, y_pred: Any) -> Symbol:
        if isinstance(y_true, Symbol) and isinstance(y_pred, Symbol):
            y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self._fn_kwargs}


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(
        self,
        from_logits: bool = False,
        ignore_class: int | None = None,
        reduction: str = "auto",
        name: str = "sparse_categorical_crossentropy",
    ) -> None:
        if ignore_class is not None:
            raise UnsupportedError(
                f"SparseCategoricalCrossentropy(ignore_class={ignore_class!r}) is not simulated "
                "by ipusim; pass ignore_class=None and give those labels a sample_weight of 0"
            )
        super().__init__(sparse_categorical_crossentropy, reduction, name, from_logits=from_logits)


_CROSSENTROPY = (("from_logits", False), ("label_smoothing", 0.0), ("axis", -1))


def _wrapper(
    fn: Callable[..., Symbol], cls_name: str, default_name: str, doc: str = "", **options: Any
) -> type[Loss]:
    """A loss class around ``fn`` taking ``options`` (Keras' order and defaults), then
    ``reduction`` and ``name``, all passed on to ``fn`` except those two."""

    def build(self: Any, reduction: str, name: str, **kwargs: Any) -> None:
        LossFunctionWrapper.__init__(self, fn, reduction, name, **kwargs)

    init = keyword_init([*options.items(), ("reduction", "auto"), ("name", default_name)], build)
    doc = doc or f"``{fn.__name__}`` as a loss class (``reduction`` and ``name`` only)."
    return table_class(cls_name, LossFunctionWrapper, __name__, doc, init)


CategoricalCrossentropy = _wrapper(
    categorical_crossentropy,
    "CategoricalCrossentropy",
    "categorical_crossentropy",
    "Cross-entropy of one-hot (or soft) labels against class scores.",
    **dict(_CROSSENTROPY),
)
BinaryCrossentropy = _wrapper(
    binary_crossentropy,
    "BinaryCrossentropy",
    "binary_crossentropy",
    "Binary cross-entropy, averaged over the last axis.",
    **dict(_CROSSENTROPY),
)
BinaryFocalCrossentropy = _wrapper(
    binary_focal_crossentropy,
    "BinaryFocalCrossentropy",
    "binary_focal_crossentropy",
    "Binary cross-entropy down-weighting easy examples by ``(1 - p_t) ** gamma``.",
    apply_class_balancing=False,
    alpha=0.25,
    gamma=2.0,
    **dict(_CROSSENTROPY),
)
CategoricalFocalCrossentropy = _wrapper(
    categorical_focal_crossentropy,
    "CategoricalFocalCrossentropy",
    "categorical_focal_crossentropy",
    "Categorical cross-entropy weighted by ``alpha (1 - p) ** gamma`` per class.",
    alpha=0.25,
    gamma=2.0,
    **dict(_CROSSENTROPY),
)
Huber = _wrapper(
    huber, "Huber", "huber_loss", "Quadratic for errors up to ``delta``, linear beyond.", delta=1.0
)
CosineSimilarity = _wrapper(
    cosine_similarity,
    "CosineSimilarity",
    "cosine_similarity",
    "Negative cosine similarity along ``axis`` (-1 is a perfect match).",
    axis=-1,
)
MeanSquaredError = _wrapper(mean_squared_error, "MeanSquaredError", "mean_squared_error")
MeanAbsoluteError = _wrapper(mean_absolute_error, "MeanAbsoluteError", "mean_absolute_error")
MeanAbsolutePercentageError = _wrapper(
    mean_absolute_percentage_error,
    "MeanAbsolutePercentageError",
    "mean_absolute_percentage_error",
)
MeanSquaredLogarithmicError = _wrapper(
    mean_squared_logarithmic_error,
    "MeanSquaredLogarithmicError",
    "mean_squared_logarithmic_error",
)
Hinge = _wrapper(hinge, "Hinge", "hinge")
SquaredHinge = _wrapper(squared_hinge, "SquaredHinge", "squared_hinge")
CategoricalHinge = _wrapper(categorical_hinge, "CategoricalHinge", "categorical_hinge")
LogCosh = _wrapper(log_cosh, "LogCosh", "log_cosh")
KLDivergence = _wrapper(kl_divergence, "KLDivergence", "kl_divergence")
Poisson = _wrapper(poisson, "Poisson", "poisson")


class Reduction:
    """The reduction names of ``tf.keras.losses.Reduction``."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ConfigurationError(
                f'Invalid Reduction Key: {key}. Expected keys are "{cls.all()}"'
            )


#: ``keras.losses.losses_utils`` (in Keras 2 the module ``keras.utils.losses_utils``, which
#: ``keras/losses.py`` imports): its reduction enum, ``ReductionV2``.
losses_utils = SimpleNamespace(ReductionV2=Reduction)


#: The loss classes by name: every LossFunctionWrapper subclass defined above.
_CLASSES: dict[str, type[Loss]] = {
    name: value
    for name, value in list(globals().items())
    if isinstance(value, type)
    and issubclass(value, LossFunctionWrapper)
    and value is not LossFunctionWrapper
}
MSE, MAE, MAPE, MSLE, KLD = mse, mae, mape, msle, kld
kullback_leibler_divergence, logcosh = kl_divergence, log_cosh
FUNCTIONS: dict[str, Callable[..., Symbol]] = {
    fn.__name__: fn
    for fn in (
        sparse_categorical_crossentropy,
        categorical_crossentropy,
        binary_crossentropy,
        binary_focal_crossentropy,
        categorical_focal_crossentropy,
        mean_squared_error,
        mean_absolute_error,
        mean_absolute_percentage_error,
        mean_squared_logarithmic_error,
        hinge,
        squared_hinge,
        categorical_hinge,
        huber,
        log_cosh,
        kl_divergence,
        poisson,
        cosine_similarity,
    )
}
#: Keras' short and legacy names of the functions above (the aliases defined in this module).
_ALIASES = "mse MSE mae MAE mape MAPE msle MSLE kld KLD kullback_leibler_divergence logcosh"
FUNCTIONS.update({alias: globals()[alias] for alias in _ALIASES.split()}, huber_loss=huber)


def get(identifier: Any) -> Loss | Callable[..., Any]:
    """A loss from a name (function or class name), a config dict, an instance or a function."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name", ""))
        if cls is None:
            raise ConfigurationError(f"unknown loss config {identifier!r}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in FUNCTIONS:
            fn = FUNCTIONS[identifier]
            return LossFunctionWrapper(fn, name=fn.__name__)
        close = difflib.get_close_matches(identifier, list(FUNCTIONS) + list(_CLASSES), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigurationError(
            f"Unknown loss function: {identifier!r}.{hint} Valid names: "
            f"{', '.join(sorted(FUNCTIONS))}"
        )
    if callable(identifier):
        return LossFunctionWrapper(identifier, name=getattr(identifier, "__name__", "loss"))
    raise ConfigurationError(f"Could not interpret loss identifier: {identifier!r}")


def serialize(loss: Any) -> dict[str, Any]:
    if type(loss).__name__ in _CLASSES:
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    if isinstance(loss, LossFunctionWrapper) and loss.fn.__name__ in FUNCTIONS:
        return {"function": loss.fn.__name__}
    raise ConfigurationError(f"loss {loss!r} cannot be serialized")


def _eager_loss(loss: Loss, y_true: Any, y_pred: Any, sample_weight: Any) -> Any:
    """Evaluate a loss on numpy arrays by tracing it once."""
    import numpy as np

    from ipusim.graph.execute import Executor
    from ipusim.graph.graph import Graph
    from ipusim.graph.spec import TensorSpec

    y_true, y_pred = np.asarray(y_true), _float_array(np.asarray(y_pred))
    graph = Graph(f"{loss.name}_eager")
    t = graph.placeholder(
        TensorSpec(
            y_true.shape, y_true.dtype.name if y_true.dtype.kind != "f" else y_pred.dtype.name
        )
    )
    p = graph.placeholder(TensorSpec.from_array(y_pred))
    feeds = [y_true, y_pred]
    inputs = [t, p]
    w = None
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=y_pred.dtype)
        w = graph.placeholder(TensorSpec.from_array(sample_weight))
        feeds.append(sample_weight)
        inputs.append(w)
    out = loss(t, p, w)
    return Executor(graph, [out], inputs).run(feeds)[0]


def deserialize(config: dict[str, Any] | str) -> Loss | Callable[..., Any]:
    """A loss from ``serialize``'s output or a name (as ``tf.keras.losses.deserialize``)."""
    if isinstance(config, dict) and "function" in config:
        return get(config["function"])
    return get(config)
