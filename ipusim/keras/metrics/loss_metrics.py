"""Metrics that average a loss function over everything seen (``tf_keras`` 2.x
``probabilistic_metrics``, ``hinge_metrics`` and the loss-based ``regression_metrics``).

Each is a :class:`MeanMetricWrapper` around the loss function of the same formula in
:mod:`ipusim.keras.losses`, evaluated on the host (see :func:`ipusim.keras.loss_utils.
eager_capable`), so a metric and the loss of the same name always agree.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import UnsupportedError
from ipusim.keras import loss_functions, losses
from ipusim.keras.metrics.base import MeanMetricWrapper, wrapper_class
from ipusim.keras.metrics.functions import cosine_similarity


def _plain(
    fn: Any, cls_name: str, default_name: str, doc: str = "", **options: Any
) -> type[MeanMetricWrapper]:
    """A metric class averaging ``fn``: arguments ``name``, ``dtype``, then ``options`` (their
    defaults, passed on to ``fn``)."""
    doc = doc or f"Mean of ``{fn.__name__}`` over everything seen."
    return wrapper_class(fn, cls_name, __name__, doc, default_name, after=tuple(options.items()))


BinaryCrossentropy = _plain(
    losses.binary_crossentropy,
    "BinaryCrossentropy",
    "binary_crossentropy",
    "Mean binary cross-entropy.",
    from_logits=False,
    label_smoothing=0,
)
CategoricalCrossentropy = _plain(
    losses.categorical_crossentropy,
    "CategoricalCrossentropy",
    "categorical_crossentropy",
    "Mean categorical cross-entropy of one-hot (or soft) labels.",
    from_logits=False,
    label_smoothing=0,
    axis=-1,
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


CosineSimilarity = _plain(
    cosine_similarity,
    "CosineSimilarity",
    "cosine_similarity",
    "Mean cosine similarity between labels and predictions along ``axis``.",
    axis=-1,
)
Hinge = _plain(loss_functions.hinge, "Hinge", "hinge")
SquaredHinge = _plain(loss_functions.squared_hinge, "SquaredHinge", "squared_hinge")
CategoricalHinge = _plain(loss_functions.categorical_hinge, "CategoricalHinge", "categorical_hinge")
KLDivergence = _plain(loss_functions.kl_divergence, "KLDivergence", "kullback_leibler_divergence")
Poisson = _plain(loss_functions.poisson, "Poisson", "poisson")
LogCoshError = _plain(loss_functions.log_cosh, "LogCoshError", "logcosh")
MeanSquaredLogarithmicError = _plain(
    loss_functions.mean_squared_logarithmic_error,
    "MeanSquaredLogarithmicError",
    "mean_squared_logarithmic_error",
)
MeanAbsolutePercentageError = _plain(
    loss_functions.mean_absolute_percentage_error,
    "MeanAbsolutePercentageError",
    "mean_absolute_percentage_error",
)
