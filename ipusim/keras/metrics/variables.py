"""State variables of user-written metrics (``Metric.add_weight``), kept on the host.

A :class:`MetricVariable` holds a NumPy array and has the methods Keras metrics call on their
``tf.Variable`` state (``assign``, ``assign_add``, ``assign_sub``, ``numpy``, ``read_value``);
it converts to an array (``np.asarray``) or a float, and arithmetic with it gives arrays, so a
metric written with NumPy operations runs unchanged.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np


def _arithmetic(op: Callable[[Any, Any], Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The methods ``x op other`` and ``other op x`` of a MetricVariable ``x``, on its array."""

    def forward(self: MetricVariable, other: Any) -> Any:
        return op(self._value, np.asarray(other))

    def reflected(self: MetricVariable, other: Any) -> Any:
        return op(np.asarray(other), self._value)

    return forward, reflected


class MetricVariable:
    """A named host array with Keras' variable update methods.

    Args:
        name: the variable's name (``"<metric>/<weight>:0"``).
        value: the initial value (copied, in its dtype).
    """

    def __init__(self, name: str, value: np.ndarray) -> None:
        self.name = name
        self._value = np.array(value)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def dtype(self) -> str:
        return self._value.dtype.name

    def numpy(self) -> np.ndarray:
        return self._value.copy()

    read_value = value = numpy

    def assign(self, value: Any) -> MetricVariable:
        """Set the value (broadcast to the variable's shape, cast to its dtype)."""
        self._value = np.broadcast_to(np.asarray(value, dtype=self._value.dtype), self.shape).copy()
        return self

    def assign_add(self, delta: Any) -> MetricVariable:
        return self.assign(self._value + np.asarray(delta, dtype=self._value.dtype))

    def assign_sub(self, delta: Any) -> MetricVariable:
        return self.assign(self._value - np.asarray(delta, dtype=self._value.dtype))

    def reset(self) -> None:
        """Back to zeros, as Keras' ``Metric.reset_state`` sets every variable."""
        self._value = np.zeros_like(self._value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._value.astype(dtype) if dtype is not None else self._value.copy()

    def __float__(self) -> float:
        return float(self._value)

    def __repr__(self) -> str:
        return f"<MetricVariable {self.name!r} shape={self.shape} value={self._value!r}>"

    # Arithmetic gives plain arrays (as a tf.Variable in an expression gives a tensor).
    __add__, __radd__ = _arithmetic(operator.add)
    __sub__, __rsub__ = _arithmetic(operator.sub)
    __mul__, __rmul__ = _arithmetic(operator.mul)
    __truediv__, __rtruediv__ = _arithmetic(operator.truediv)

    def __neg__(self) -> Any:
        return -self._value
