"""Merge layers: combine a list of tensors of compatible shapes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape
from ipusim.keras.engine.layer import Layer


class _Merge(Layer):
    _min_inputs = 2
    _exact = False  # exactly _min_inputs inputs, not at least
    _combine: Callable[[Any, Any], Any]  # the graph op folding the inputs, left to right

    def build(self, input_shape: Any) -> None:
        n = len(input_shape) if isinstance(input_shape, list) else -1
        if n < self._min_inputs or (self._exact and n != self._min_inputs):
            raise ConfigurationError(
                f"{type(self).__name__} {self.name!r} must be called on a list of "
                f"{'exactly' if self._exact else 'at least'} {self._min_inputs} tensors, "
                f"received {input_shape}"
            )
        self.built = True

    def call(self, inputs: list[Any]) -> Any:
        return functools.reduce(self._combine, inputs)


class Add(_Merge):
    """Elementwise sum of a list of tensors."""

    _combine = staticmethod(m.add)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    _exact = True
    _combine = staticmethod(m.subtract)


class Multiply(_Merge):
    """Elementwise product of a list of tensors."""

    _combine = staticmethod(m.multiply)


class Maximum(_Merge):
    _combine = staticmethod(m.maximum)


class Minimum(_Merge):
    _combine = staticmethod(m.minimum)


class Average(_Merge):
    """Elementwise mean of a list of tensors."""

    def call(self, inputs: list[Any]) -> Any:
        return m.multiply(super().call(inputs), 1.0 / len(inputs))

    _combine = staticmethod(m.add)


class Concatenate(_Merge):
    """Concatenation along ``axis`` (default the last)."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs: list[Any]) -> Any:
        return shape.concat(list(inputs), axis=self.axis)

    _config_names = "axis"
