"""Reduction kernels: sum, mean, max over any set of axes, their gradients, and argmax.

Every reduction is brought to one layout, a contiguous 3-D array ``(outer, reduced, inner)``:
when the reduced axes are adjacent this is a free reshape; otherwise the kept axes are moved in
front of the reduced ones with one copy, giving ``(kept, reduced, 1)``. The kernels then sweep the
reduced axis with the inner axis innermost, so every inner loop reads memory in order.
Sums accumulate in float64 whatever the input dtype.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ipusim._jit import kernel
from ipusim.errors import ConfigurationError


class _Layout:
    """How an array of ``shape`` maps onto ``(outer, reduced, inner)`` for reduced ``axes``."""

    def __init__(self, shape: tuple[int, ...], axes: Sequence[int]) -> None:
        self.shape = tuple(shape)
        self.axes = tuple(sorted(axes))
        kept = tuple(ax for ax in range(len(shape)) if ax not in self.axes)
        adjacent = not self.axes or self.axes == tuple(range(self.axes[0], self.axes[-1] + 1))
        size = _prod(self.shape[ax] for ax in self.axes)
        if adjacent:
            first = self.axes[0] if self.axes else len(shape)
            self.perm = None
            self.dims = (_prod(shape[:first]), size, _prod(shape[first + len(self.axes) :]))
        else:
            self.perm = kept + self.axes
            self.dims = (_prod(shape[ax] for ax in kept), size, 1)
        self.kept_shape = tuple(shape[ax] for ax in kept)

    def to3d(self, x: np.ndarray) -> np.ndarray:
        """``x`` (of ``shape``) as a contiguous ``(outer, reduced, inner)`` array."""
        if self.perm is not None:
            x = np.transpose(x, self.perm)
        return np.asarray(x, order="C").reshape(self.dims)

    def from3d(self, x3: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to3d`: a ``(outer, reduced, inner)`` array back to ``shape``."""
        if self.perm is None:
            return x3.reshape(self.shape)
        moved = x3.reshape(tuple(self.shape[ax] for ax in self.perm))
        return np.asarray(np.transpose(moved, np.argsort(self.perm)), order="C")

    def out_shape(self, keepdims: bool) -> tuple[int, ...]:
        if keepdims:
            return tuple(1 if ax in self.axes else d for ax, d in enumerate(self.shape))
        return self.kept_shape


def _prod(values) -> int:
    result = 1
    for v in values:
        result *= int(v)
    return result


@kernel
def _sum3(x, scale, out):
    outer, red, inner = x.shape
    acc = np.zeros(inner, dtype=np.float64)
    for o in range(outer):
        acc[:] = 0.0
        for r in range(red):
            for i in range(inner):
                acc[i] += x[o, r, i]
        for i in range(inner):
            out[o, i] = acc[i] * scale


@kernel
def _sum3_inner1(x, scale, out):
    # Eight independent partial sums break the add-latency chain of one running sum (~3x faster).
    outer, red, _ = x.shape
    lanes = np.zeros(8, dtype=np.float64)
    red8 = red - red % 8
    for o in range(outer):
        lanes[:] = 0.0
        for r in range(0, red8, 8):
            for j in range(8):
                lanes[j] += x[o, r + j, 0]
        acc = 0.0
        for r in range(red8, red):
            acc += x[o, r, 0]
        for j in range(8):
            acc += lanes[j]
        out[o, 0] = acc * scale


@kernel
def _max3(x, out):
    outer, red, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            out[o, i] = -np.inf
        for r in range(red):
            for i in range(inner):
                v = x[o, r, i]
                if v > out[o, i] or v != v:  # NaN wins, as in NumPy
                    out[o, i] = v


@kernel
def _max_grad3(x, y, dy, out):
    # TensorFlow's rule: the gradient is shared equally by every element equal to the maximum.
    outer, red, inner = x.shape
    count = np.zeros(inner, dtype=np.float64)
    for o in range(outer):
        count[:] = 0.0
        for r in range(red):
            for i in range(inner):
                if x[o, r, i] == y[o, i]:
                    count[i] += 1.0
        for r in range(red):
            for i in range(inner):
                out[o, r, i] = dy[o, i] / count[i] if x[o, r, i] == y[o, i] else 0.0


@kernel
def _broadcast3(dy, scale, out):
    outer, red, inner = out.shape
    for o in range(outer):
        for r in range(red):
            for i in range(inner):
                out[o, r, i] = dy[o, i] * scale


@kernel
def _argmax_rows(x, out):
    rows, cols = x.shape
    for r in range(rows):
        best = 0
        for c in range(1, cols):
            if x[r, c] > x[r, best]:  # first maximum wins on ties, as tf.argmax
                best = c
        out[r] = best


def _reduce_sum3(x3: np.ndarray, scale: float) -> np.ndarray:
    outer, _, inner = x3.shape
    out = np.empty((outer, inner), dtype=x3.dtype)
    if inner == 1:
        _sum3_inner1(x3, scale, out)
    else:
        _sum3(x3, scale, out)
    return out


def reduce_sum(x: np.ndarray, axes: Sequence[int], keepdims: bool = False) -> np.ndarray:
    """Sum of ``x`` over ``axes`` (non-negative, distinct)."""
    layout = _Layout(x.shape, axes)
    return _reduce_sum3(layout.to3d(x), 1.0).reshape(layout.out_shape(keepdims))


def reduce_mean(x: np.ndarray, axes: Sequence[int], keepdims: bool = False) -> np.ndarray:
    """Mean of ``x`` over ``axes``; NaN where the reduced size is 0 (as TensorFlow)."""
    layout = _Layout(x.shape, axes)
    count = layout.dims[1]
    scale = 1.0 / count if count else np.nan
    return _reduce_sum3(layout.to3d(x), scale).reshape(layout.out_shape(keepdims))


def reduce_max(x: np.ndarray, axes: Sequence[int], keepdims: bool = False) -> np.ndarray:
    """Maximum of ``x`` over ``axes``; ``-inf`` where the reduced size is 0."""
    layout = _Layout(x.shape, axes)
    x3 = layout.to3d(x)
    out = np.empty((x3.shape[0], x3.shape[2]), dtype=x.dtype)
    _max3(x3, out)
    return out.reshape(layout.out_shape(keepdims))


def reduce_max_grad(
    dy: np.ndarray, x: np.ndarray, y: np.ndarray, axes: Sequence[int]
) -> np.ndarray:
    """Gradient of :func:`reduce_max`: ``dy`` shared equally by the maxima of each reduced slice.

    Args:
        dy: gradient of the reduced output (with or without the kept size-1 axes).
        x: the reduction's input.
        y: the reduction's output (same size as ``dy``).
        axes: the reduced axes of ``x``.
    """
    layout = _Layout(x.shape, axes)
    x3 = layout.to3d(x)
    pair = (x3.shape[0], x3.shape[2])
    out = np.empty_like(x3)
    _max_grad3(
        x3, np.asarray(y, order="C").reshape(pair), np.asarray(dy, order="C").reshape(pair), out
    )
    return layout.from3d(out)


def broadcast_reduced(
    dy: np.ndarray, shape: tuple[int, ...], axes: Sequence[int], scale: float = 1.0
) -> np.ndarray:
    """``dy * scale`` repeated over the reduced ``axes`` to ``shape`` (gradient of sum and mean)."""
    layout = _Layout(shape, axes)
    out = np.empty(layout.dims, dtype=dy.dtype)
    _broadcast3(np.asarray(dy, order="C").reshape(layout.dims[0], layout.dims[2]), scale, out)
    return layout.from3d(out)


def argmax(x: np.ndarray, axis: int, dtype: str = "int64") -> np.ndarray:
    """Index of the first maximum along ``axis`` (non-negative)."""
    moved = np.asarray(np.moveaxis(x, axis, -1), order="C")
    cols = moved.shape[-1]
    if cols == 0:
        raise ConfigurationError(
            f"argmax: axis {axis} of the input (shape {x.shape}) is empty, so it has no maximum"
        )
    out = np.empty(_prod(moved.shape[:-1]), dtype=dtype)
    _argmax_rows(moved.reshape(-1, cols), out)
    return out.reshape(moved.shape[:-1])
