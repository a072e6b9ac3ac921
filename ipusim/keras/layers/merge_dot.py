"""The Dot merge layer: the dot product of two samples along given axes (``backend.batch_dot``)."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as s
from ipusim.graph.ops.linalg import batch_matmul
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.core_extra import l2_normalize


def _axes_pair(axes: Any) -> tuple[int, int]:
    if isinstance(axes, int):
        return axes, axes
    if isinstance(axes, list | tuple) and len(axes) == 2:
        return int(axes[0]), int(axes[1])
    raise ConfigurationError(f"Dot: `axes` must be an int or a list of two ints, received {axes!r}")


def _as_rank3(x: Any, axis: int) -> tuple[Any, bool]:
    """A rank-2 ``(batch, k)`` operand as ``(batch, 1, k)`` (contraction on axis 2)."""
    return (s.expand_dims(x, 1), True) if x.ndim == 2 else (x, False)


def batch_dot(x: Any, y: Any, axes: tuple[int, int]) -> Any:
    """``backend.batch_dot`` for operands of rank 2 or 3 (positive axes, batch axis excluded)."""
    if x.ndim == 2 and y.ndim == 2:
        return m.reduce_sum(m.multiply(x, y), axis=1, keepdims=True)
    ax, ay = axes
    x3, x_expanded = _as_rank3(x, ax)
    y3, y_expanded = _as_rank3(y, ay)
    ax = 2 if x_expanded else ax
    ay = 2 if y_expanded else ay
    # x3 @ y3 contracts x3's axis 2 with y3's axis 1; transpose to bring the axes there.
    out = batch_matmul(x3, y3, transpose_a=ax == 1, transpose_b=ay == 2)
    squeeze = [i for i, e in ((1, x_expanded), (2, y_expanded)) if e]
    return s.squeeze(out, squeeze) if squeeze else out


class Dot(Layer):
    """Dot product of two inputs along ``axes`` (int or pair); ``normalize`` l2-normalises both
    along those axes first (cosine proximity). Inputs of rank 2 or 3 (the batch axis included)."""

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _axes_pair(axes)
        self.axes = list(axes) if isinstance(axes, list | tuple) else int(axes)
        self.normalize = bool(normalize)

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, list | tuple) or len(inputs) != 2:
            raise ConfigurationError("Dot expects a list of exactly two inputs")
        x, y = inputs
        if not 2 <= x.ndim <= 3 or not 2 <= y.ndim <= 3:
            raise UnsupportedError(
                f"Dot: ipusim supports inputs of rank 2 or 3, received shapes {x.shape} and "
                f"{y.shape}; reshape the inputs first"
            )
        ax, ay = (a % t.ndim for a, t in zip(_axes_pair(self.axes), (x, y), strict=True))
        if ax == 0 or ay == 0:
            raise ConfigurationError(f"Dot: `axes` {self.axes} cannot include the batch axis")
        if x.shape[ax] != y.shape[ay]:
            raise ConfigurationError(
                f"Dot: dimension incompatibility: {x.shape[ax]} (axis {ax} of {x.shape}) != "
                f"{y.shape[ay]} (axis {ay} of {y.shape})"
            )
        if self.normalize:
            x, y = l2_normalize(x, ax), l2_normalize(y, ay)
        return batch_dot(x, y, (ax, ay))

    _config_names = "axes normalize"
