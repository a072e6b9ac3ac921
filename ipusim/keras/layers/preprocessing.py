"""Preprocessing layers the image applications start with: Rescaling and Normalization."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, IncompatibleStateError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as shape_ops
from ipusim.keras import backend
from ipusim.keras.engine.layer import Layer


def _number(value: Any, name: str, layer: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise ConfigurationError(f"{layer}: `{name}` must be a number, received {value!r}")
    return float(value)


class Rescaling(Layer):
    """``inputs * scale + offset`` (e.g. ``Rescaling(1 / 255)`` maps bytes to [0, 1]).

    Args:
        scale: the multiplier.
        offset: added after scaling.
    """

    def __init__(self, scale: float, offset: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scale = _number(scale, "scale", "Rescaling")
        self.offset = _number(offset, "offset", "Rescaling")

    def call(self, inputs: Any) -> Any:
        y = m.multiply(m.cast(inputs, self.dtype), self.scale)
        return m.add(y, self.offset) if self.offset else y

    _config_names = "scale offset"


class Normalization(Layer):
    """Feature-wise ``(inputs - mean) / sqrt(variance)`` (the divisor floored at ``epsilon``).

    Without ``mean`` / ``variance`` the layer holds them as non-trainable weights (``mean``,
    ``variance`` and the sample ``count``, as Keras), starting at 0 and 1 and set by
    :meth:`adapt`; with them, they are constants of the layer and it has no weights.

    Args:
        axis: the feature axis (or axes) that keep separate statistics; default the last.
        mean / variance: fixed statistics (both or neither), broadcastable to the feature shape.
    """

    def __init__(
        self, axis: Any = -1, mean: Any = None, variance: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ConfigurationError(
                "Normalization: pass both `mean` and `variance` or neither (then call adapt())"
            )
        axes = (axis,) if isinstance(axis, int) else tuple(axis or ())
        if any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
            raise ConfigurationError(f"Normalization: `axis` must be ints, received {axis!r}")
        self.axis = axes
        self.input_mean = None if mean is None else np.asarray(mean, np.float64)
        self.input_variance = None if variance is None else np.asarray(variance, np.float64)

    def _feature_shape(self, input_shape: tuple[int | None, ...]) -> tuple[int, ...]:
        rank = len(input_shape)
        axes = {a % rank for a in self.axis}
        known = {a: size for a in axes if (size := input_shape[a]) is not None}
        unknown = [a for a in axes if a not in known]
        if unknown:
            raise ConfigurationError(
                f"Normalization {self.name!r}: the feature axes {sorted(axes)} must have known "
                f"sizes, received input shape {input_shape}"
            )
        return tuple(known.get(a, 1) for a in range(rank))

    def build(self, input_shape: Any) -> None:
        self._broadcast_shape = self._feature_shape(tuple(input_shape))
        rank = len(self._broadcast_shape)
        feature_axes = sorted({a % rank for a in self.axis})
        stats_shape = tuple(self._broadcast_shape[a] for a in feature_axes)
        if self.input_mean is None:
            self.mean = self.add_weight("mean", stats_shape, initializer="zeros", trainable=False)
            self.variance = self.add_weight(
                "variance", stats_shape, initializer="ones", trainable=False
            )
            self.count = self.add_weight(
                "count", (), dtype="int32", initializer="zeros", trainable=False
            )
        self.built = True

    def _statistics(self, dtype: str) -> tuple[Any, Any]:
        fixed_mean, fixed_variance = self.input_mean, self.input_variance
        if fixed_mean is not None and fixed_variance is not None:  # given together (__init__)
            shape = self._broadcast_shape
            mean = np.broadcast_to(fixed_mean, shape).astype(dtype)
            variance = np.broadcast_to(fixed_variance, shape).astype(dtype)
            return mean, variance
        shape = tuple(1 if d is None else d for d in self._broadcast_shape)
        return shape_ops.reshape(self.mean, shape), shape_ops.reshape(self.variance, shape)

    def call(self, inputs: Any) -> Any:
        x = m.cast(inputs, self.dtype)
        mean, variance = self._statistics(self.dtype)
        return m.divide(m.subtract(x, mean), m.maximum(m.sqrt(variance), backend.epsilon()))

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Set ``mean`` and ``variance`` from ``data`` (an array of samples, batch axis first)."""
        if self.input_mean is not None:
            raise IncompatibleStateError(
                f"Normalization {self.name!r} was given fixed `mean` and `variance`; adapt() "
                "has nothing to learn"
            )
        array = np.asarray(data, np.float64)
        if not self.built:
            self.build((None, *array.shape[1:]))
            for variable in self.weights:
                variable.value  # noqa: B018 - materialise now, as Layer._maybe_build does
        rank = array.ndim
        keep = {a % rank for a in self.axis}
        reduce_axes = tuple(a for a in range(rank) if a not in keep)
        mean = array.mean(axis=reduce_axes)
        variance = array.var(axis=reduce_axes)
        self.mean.assign(mean.reshape(self.mean.shape).astype(self.mean.dtype))
        self.variance.assign(variance.reshape(self.variance.shape).astype(self.variance.dtype))
        self.count.assign(np.asarray(array.size // max(mean.size, 1), np.int32))

    def get_config(self) -> dict[str, Any]:
        config = {**super().get_config(), "axis": list(self.axis)}
        fixed_mean, fixed_variance = self.input_mean, self.input_variance
        if fixed_mean is not None and fixed_variance is not None:  # given together (__init__)
            config["mean"] = fixed_mean.tolist()
            config["variance"] = fixed_variance.tolist()
        return config
