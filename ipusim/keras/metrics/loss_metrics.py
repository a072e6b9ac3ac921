"""Metrics that average a loss function over everything seen (``tf_keras`` 2.x
``probabilistic_metrics``, ``hinge_metrics`` and the loss-based ``regression_metrics``).

Each is a :class:`MeanMetricWrapper` around the loss function of the same formula in
:mod:`ipusim.keras.losses`, evaluated on the host (see :func:`ipusim.keras.loss_utils.
eager_capable`), so a metric and the loss of the same name always agree.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import UnsupportedError
from ipusim.keras import losses
from ipusim.keras.metrics.base import MeanMetricWrapper
from ipusim.keras.metrics.functions import cosine_similarity


class BinaryCrossentropy(MeanMetricWrapper):
    """Mean binary cross-entropy."""

    def __init__(
        self,
        name: str = "binary_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        label_smoothing: float = 0,
    ) -> None:
        super().__init__(
            losses.binary_crossentropy,
            name,
            dtype=dtype,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
        )


class CategoricalCrossentropy(MeanMetricWrapper):
    """Mean categorical cross-entropy of one-hot (or soft) labels."""

    def __init__(
        self,
        name: str = "categorical_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        label_smoothing: float = 0,
        axis: int = -1,
    ) -> None:
        super().__init__(
            losses.categorical_crossentropy,
            name,
            dtype=dtype,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
            axis=axis,
        )


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """Mean cross-entropy of integer labels."""

    def __init__(
        self,
        name: str = "sparse_categorical_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        ignore_class: int | None = None,
        axis: int = -1,
    ) -> None:
        if ignore_class is not None:
            raise UnsupportedError(
                f"metrics.SparseCategoricalCrossentropy(ignore_class={ignore_class!r}) is not "
                "simulated by ipusim; pass ignore_class=None and a sample_weight of 0 for those "
                "labels"
            )
        super().__init__(
            losses.sparse_categorical_crossentropy,
            name,
            dtype=dtype,
            from_logits=from_logits,
            axis=axis,
        )


class CosineSimilarity(MeanMetricWrapper):
    """Mean cosine similarity between labels and predictions along ``axis``."""

    def __init__(self, name: str = "cosine_similarity", dtype: Any = None, axis: int = -1):
        super().__init__(cosine_similarity, name, dtype=dtype, axis=axis)


def _plain(fn: Any, cls_name: str, default_name: str) -> type[MeanMetricWrapper]:
    """A metric class averaging ``fn`` with only ``name`` and ``dtype`` arguments."""

    def __init__(self: Any, name: str = default_name, dtype: Any = None) -> None:
        MeanMetricWrapper.__init__(self, fn, name, dtype=dtype)

    doc = f"Mean of ``{fn.__name__}`` over everything seen."
    return type(cls_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc})


Hinge = _plain(losses.hinge, "Hinge", "hinge")
SquaredHinge = _plain(losses.squared_hinge, "SquaredHinge", "squared_hinge")
CategoricalHinge = _plain(losses.categorical_hinge, "CategoricalHinge", "categorical_hinge")
KLDivergence = _plain(losses.kl_divergence, "KLDivergence", "kullback_leibler_divergence")
Poisson = _plain(losses.poisson, "Poisson", "poisson")
LogCoshError = _plain(losses.log_cosh, "LogCoshError", "logcosh")
MeanSquaredLogarithmicError = _plain(
    losses.mean_squared_logarithmic_error,
    "MeanSquaredLogarithmicError",
    "mean_squared_logarithmic_error",
)
MeanAbsolutePercentageError = _plain(
    losses.mean_absolute_percentage_error,
    "MeanAbsolutePercentageError",
    "mean_absolute_percentage_error",
)
