"""Merge layers: combine a list of tensors of compatible shapes."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape
from ipusim.keras.engine.layer import Layer


class _Merge(Layer):
    _min_inputs = 2

    def build(self, input_shape: Any) -> None:
        if not isinstance(input_shape, list) or len(input_shape) < self._min_inputs:
            raise ConfigurationError(
                f"{type(self).__name__} {self.name!r} must be called on a list of at "
                f"least {self._min_inputs} tensors, received {input_shape}"
            )
        self.built = True

    def call(self, inputs: list[Any]) -> Any:
        result = inputs[0]
        for x in inputs[1:]:
            result = self._combine(result, x)
        return result

    def _combine(self, a: Any, b: Any) -> Any:
        raise NotImplementedError


class Add(_Merge):
    """Elementwise sum of a list of tensors."""

    def _combine(self, a: Any, b: Any) -> Any:
        return m.add(a, b)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def build(self, input_shape: Any) -> None:
        if not isinstance(input_shape, list) or len(input_shape) != 2:
            raise ConfigurationError(
                f"Subtract {self.name!r} must be called on a list of exactly 2 "
                f"tensors, received {input_shape}"
            )
        self.built = True

    def _combine(self, a: Any, b: Any) -> Any:
        return m.subtract(a, b)


class Multiply(_Merge):
    """Elementwise product of a list of tensors."""

    def _combine(self, a: Any, b: Any) -> Any:
        return m.multiply(a, b)


class Maximum(_Merge):
    def _combine(self, a: Any, b: Any) -> Any:
        return m.maximum(a, b)


class Minimum(_Merge):
    def _combine(self, a: Any, b: Any) -> Any:
        return m.minimum(a, b)


class Average(_Merge):
    """Elementwise mean of a list of tensors."""

    def call(self, inputs: list[Any]) -> Any:
        return m.multiply(super().call(inputs), 1.0 / len(inputs))

    def _combine(self, a: Any, b: Any) -> Any:
        return m.add(a, b)


class Concatenate(_Merge):
    """Concatenation along ``axis`` (default the last)."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs: list[Any]) -> Any:
        return shape.concat(list(inputs), axis=self.axis)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "axis": self.axis}
