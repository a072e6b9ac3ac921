"""The Keras 2 ``Metric`` API: :class:`Metric`, :class:`Reduce`, :class:`Sum`, :class:`Mean` and
:class:`MeanMetricWrapper`.

A metric accumulates state across batches (``update_state``), reports it (``result``, a Python
float) and starts over (``reset_state``). State is kept in the metric's ``dtype`` (float32 by
default, as Keras' metric variables); per-batch sums run in :mod:`ipusim.kernels.metrics`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.keras import backend
from ipusim.keras.keyword_init import keyword_init, table_class
from ipusim.keras.metrics.functions import FUNCTIONS, squeeze_or_expand_dimensions
from ipusim.keras.metrics.variables import MetricVariable
from ipusim.kernels import metrics as mk

#: dtypes a metric's state may have.
_STATE_DTYPES = ("float32", "float64")


def unknown_metric(name: str, known: list[str]) -> ValueError:
    """The error for an unknown metric name, listing the known ones and a close match."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(
        f"Unknown metric function: {name!r}. Known metrics: {', '.join(known)}.{hint}"
    )


def _snake_case(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or name[i + 1 : i + 2].islower()):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


class Metric:
    """Base class: stateful, accumulated over batches.

    Args:
        name: display name (the key in ``fit`` logs). Defaults to the snake-case class name,
            made unique in the session (``auc``, ``auc_1``, ...) as Keras does.
        dtype: dtype of the accumulated state. Defaults to ``"float32"``.
    """

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        if kwargs:
            raise InvalidTypeError(
                f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)}"
            )
        # As Keras: a metric left unnamed takes its class's snake-case name, made unique in the
        # session ("auc", then "auc_1", ...).
        self.name = (
            name if name is not None else backend.unique_name(_snake_case(type(self).__name__))
        )
        self.dtype = np.dtype(dtype if dtype is not None else "float32").name
        if self.dtype not in _STATE_DTYPES:
            raise ConfigurationError(
                f"{type(self).__name__}: dtype must be 'float32' or 'float64', got {self.dtype!r}"
            )
        self._metric_variables: list[MetricVariable] = []
        # ipusim's metrics create their state in reset_state. A user's metric creates it with
        # add_weight after this __init__ (as in Keras, whose base __init__ resets nothing), so
        # its own reset_state, which may use those variables, is not called here.
        ours = ("reset_state", "reset_states")
        if all(getattr(type(self), n).__module__.startswith("ipusim.") for n in ours):
            self.reset_state()

    def add_weight(
        self,
        name: str,
        shape: Any = (),
        aggregation: Any = None,
        synchronization: Any = None,
        initializer: Any = None,
        dtype: Any = None,
    ) -> MetricVariable:
        """A state variable for a user-written metric (Keras' ``Metric.add_weight``).

        Args:
            name: the weight's name.
            shape: its shape (a scalar by default).
            aggregation, synchronization: accepted for compatibility (one replica's host state).
            initializer: ``"zeros"`` (default), ``"ones"`` or any Keras initializer.
            dtype: defaults to the metric's dtype.
        """
        del aggregation, synchronization
        shape = tuple(shape) if shape is not None else ()
        dtype = np.dtype(dtype if dtype is not None else self.dtype).name
        if initializer is None or initializer == "zeros":
            value = np.zeros(shape, dtype=dtype)
        else:
            from ipusim.keras import initializers

            value = np.asarray(initializers.get(initializer)(shape, dtype=dtype), dtype=dtype)
        variable = MetricVariable(f"{self.name}/{name}:0", value)
        self._metric_variables.append(variable)
        return variable

    @property
    def variables(self) -> list[MetricVariable]:
        """The variables made with :meth:`add_weight`."""
        return list(getattr(self, "_metric_variables", []))

    weights = variables

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")

    def result(self) -> float | np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement result")

    def reset_state(self) -> None:
        """Forget everything accumulated so far (a user metric's variables go back to 0)."""
        if type(self).reset_states is not Metric.reset_states:
            self.reset_states()  # a metric written for Keras < 2.5 overrides the old name
            return
        for variable in getattr(self, "_metric_variables", []):
            variable.reset()

    def reset_states(self) -> None:
        """Alias of :meth:`reset_state` (Keras < 2.5 name)."""
        self.reset_state()

    def __call__(self, *args: Any, **kwargs: Any) -> float | np.ndarray:
        """``update_state(*args, **kwargs)`` then ``result()``."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


_SUM, _SUM_OVER_BATCH_SIZE, _WEIGHTED_MEAN = "sum", "sum_over_batch_size", "weighted_mean"


class Reduce(Metric):
    """Accumulates ``total`` (and ``count``) of values, with optional sample weights.

    Args:
        reduction: ``"sum"``, ``"sum_over_batch_size"`` or ``"weighted_mean"``.
        name: display name.
        dtype: state dtype.
    """

    def __init__(self, reduction: str, name: str | None = None, dtype: Any = None) -> None:
        if reduction not in (_SUM, _SUM_OVER_BATCH_SIZE, _WEIGHTED_MEAN):
            raise ConfigurationError(
                f"Reduce: unknown reduction {reduction!r}; expected 'sum', "
                "'sum_over_batch_size' or 'weighted_mean'"
            )
        self.reduction = reduction
        super().__init__(name=name, dtype=dtype)

    def reset_state(self) -> None:
        t = np.dtype(self.dtype).type
        self.total = t(0)
        self.count = t(0)

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        """Add ``values`` (weighted by ``sample_weight`` if given) to the running state.

        Weights broadcast against the values after Keras' rank fix-up (a trailing size-1 axis
        squeezed, or one added); when they cannot, the values are first summed (``"sum"``) or
        averaged over their trailing axes down to the weights' rank.
        """
        t = np.dtype(self.dtype).type
        values = np.asarray(values, dtype=self.dtype)
        if sample_weight is None:
            value_sum, num_values = mk.total(values), float(values.size)
        else:
            weights = np.asarray(sample_weight, dtype=self.dtype)
            values, weights = self._align_weights(values, weights)
            try:
                b_values, b_weights = np.broadcast_arrays(values, weights)
            except ValueError:
                raise ConfigurationError(
                    f"{self.name}: sample_weight of shape {weights.shape} cannot be broadcast to "
                    f"values of shape {values.shape}"
                ) from None
            value_sum = mk.weighted_total(b_values, b_weights)
            num_values = mk.total(weights) if self.reduction == _WEIGHTED_MEAN else values.size
        self.total = t(self.total + t(value_sum))
        if self.reduction != _SUM:
            self.count = t(self.count + t(num_values))

    def _align_weights(
        self, values: np.ndarray, weights: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        if weights.ndim == 0:
            return values, np.broadcast_to(weights, values.shape)
        if weights.ndim - values.ndim == 1 and weights.shape[-1] == 1:
            weights = weights.reshape(weights.shape[:-1])
        elif values.ndim - weights.ndim == 1:
            weights = weights[..., None]
        broadcastable = weights.ndim == values.ndim and all(
            w in (1, v) for w, v in zip(weights.shape, values.shape, strict=True)
        )
        if broadcastable:
            return values, np.broadcast_to(weights, values.shape)
        if values.ndim > weights.ndim:
            values = mk.reduce_trailing(values, weights.ndim, mean=self.reduction != _SUM)
        return values, weights

    def result(self) -> float:
        if self.reduction == _SUM:
            return float(self.total)
        return float(self.total / self.count) if self.count != 0 else 0.0


class Sum(Reduce):
    """Weighted sum of every value seen."""

    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__(_SUM, name=name, dtype=dtype)


class Mean(Reduce):
    """Weighted mean of every value seen: ``sum(w * v) / sum(w)`` (0 before any weight)."""

    def __init__(self, name: str | None = "mean", dtype: Any = None) -> None:
        super().__init__(_WEIGHTED_MEAN, name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The weighted mean of ``fn(y_true, y_pred, **kwargs)`` over everything seen.

    Args:
        fn: per-sample metric function (or the name of one in this module).
        name: display name. Defaults to ``fn``'s name.
        dtype: state dtype; inputs are cast to it before ``fn`` (as Keras).
        **kwargs: extra keyword arguments for ``fn`` (e.g. ``threshold``, ``k``).
    """

    def __init__(
        self,
        fn: Callable[..., Any] | str,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(fn, str):
            if fn not in FUNCTIONS:
                raise unknown_metric(fn, sorted(FUNCTIONS))
            fn = FUNCTIONS[fn]
        self._fn = fn
        self._fn_kwargs = kwargs
        super().__init__(name=name or getattr(fn, "__name__", "mean"), dtype=dtype)

    def update_state(  # type: ignore[override]  # Keras': (y_true, y_pred), not Mean's (values)
        self, y_true: Any, y_pred: Any, sample_weight: Any = None
    ) -> None:
        """Add a batch: ``y_true`` and ``y_pred`` arrays, optional per-sample weights."""
        y_true = np.asarray(y_true, dtype=self.dtype)
        y_pred = np.asarray(y_pred, dtype=self.dtype)
        y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        matches = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(matches, sample_weight=sample_weight)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"name": self.name, "dtype": self.dtype}
        if type(self) is MeanMetricWrapper:
            config["fn"] = getattr(self._fn, "__name__", self._fn)
        config.update(self._fn_kwargs)
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        config = dict(config)
        if cls is MeanMetricWrapper:
            return cls(config.pop("fn"), **config)
        config.pop("fn", None)
        return cls(**config)


def wrapper_class(
    fn: Callable[..., Any],
    cls_name: str,
    module: str,
    doc: str,
    default_name: str,
    before: tuple[tuple[str, Any], ...] = (),
    after: tuple[tuple[str, Any], ...] = (),
) -> type[MeanMetricWrapper]:
    """A :class:`MeanMetricWrapper` class around ``fn`` with Keras' signature
    ``(<before>, name=default_name, dtype=None, <after>)``; ``before`` and ``after`` are
    ``(argument, default)`` pairs passed on to ``fn`` (and listed by ``get_config``)."""

    def build(self: Any, name: str, dtype: Any, **options: Any) -> None:
        MeanMetricWrapper.__init__(self, fn, name, dtype=dtype, **options)

    parameters = [*before, ("name", default_name), ("dtype", None), *after]
    return table_class(cls_name, MeanMetricWrapper, module, doc, keyword_init(parameters, build))
