"""``tf.image.resize`` to any size (half-pixel centres, no antialiasing), bilinear or nearest,
on NHWC tensors, and its gradient. (:mod:`ipusim.kernels.resize` is the integer up-sampling of
UpSampling2D; this one is Keras' Resizing, which shrinks and grows by any ratio.)

Sampling as TensorFlow's kernels (tensorflow/core/kernels/image/resize_bilinear_op.cc and
resize_nearest_neighbor_op.cc with half_pixel_centers): bilinear output ``o`` of an axis of
``n -> m`` pixels reads source ``(o + 0.5) n / m - 0.5`` from its two neighbours
``max(floor, 0)`` and ``min(ceil, n - 1)``; nearest reads ``min(floor((o + 0.5) n / m), n - 1)``.
Each output reads only its own taps, so a non-finite pixel reaches only the outputs that read it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=256)
def taps(size: int, out: int, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lower, upper, weight of upper)`` per output pixel of one axis (read-only arrays)."""
    scale = size / out
    if method == "nearest":
        index = np.minimum(np.floor((np.arange(out) + 0.5) * scale), size - 1).astype(np.int64)
        lower, upper, lerp = index, index.copy(), np.zeros(out)
    else:
        source = (np.arange(out) + 0.5) * scale - 0.5
        floor = np.floor(source)
        lower = np.maximum(floor, 0).astype(np.int64)
        upper = np.minimum(np.ceil(source), size - 1).astype(np.int64)
        lerp = source - floor
    for array in (lower, upper, lerp):
        array.flags.writeable = False
    return lower, upper, lerp


def lerp_axis(
    x: np.ndarray, axis: int, taps: tuple[np.ndarray, ...], nearest: bool = False
) -> np.ndarray:
    """``x`` interpolated along ``axis`` between the pixels ``lower`` and ``upper`` of ``taps``
    (``(lower, upper, weight of upper)`` per output pixel, as :func:`taps` gives them); a copy of
    ``lower`` when ``nearest``."""
    lower, upper, lerp = taps
    if nearest:
        return np.take(x, lower, axis=axis)
    f = _along(x.ndim, axis, lerp, x.dtype)
    return np.take(x, lower, axis=axis) * (1 - f) + np.take(x, upper, axis=axis) * f


def lerp_axis_grad(
    dy: np.ndarray, axis: int, size: int, taps: tuple[np.ndarray, ...], nearest: bool = False
) -> np.ndarray:
    """Gradient of :func:`lerp_axis` w.r.t. its input, which has ``size`` pixels along ``axis``
    (C-contiguous)."""
    lower, upper, lerp = taps
    moved = np.moveaxis(
        np.zeros((*dy.shape[:axis], size, *dy.shape[axis + 1 :]), dy.dtype), axis, 0
    )
    if nearest:
        np.add.at(moved, lower, np.moveaxis(dy, axis, 0))
    else:
        f = _along(dy.ndim, axis, lerp, dy.dtype)
        np.add.at(moved, lower, np.moveaxis(dy * (1 - f), axis, 0))
        np.add.at(moved, upper, np.moveaxis(dy * f, axis, 0))
    return np.moveaxis(moved, 0, axis)


def _along(rank: int, axis: int, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` shaped to broadcast along ``axis`` of a rank-``rank`` array."""
    shape = [1] * rank
    shape[axis] = values.size
    return values.astype(dtype).reshape(shape)


def resize(x: np.ndarray, size: tuple[int, int], method: str) -> np.ndarray:
    """``x`` (N, H, W, C) resized to (N, size[0], size[1], C): rows first, then columns."""
    nearest = method == "nearest"
    y = lerp_axis(x, 1, taps(x.shape[1], size[0], method), nearest)
    return np.ascontiguousarray(lerp_axis(y, 2, taps(x.shape[2], size[1], method), nearest))


def resize_grad(dy: np.ndarray, input_hw: tuple[int, int], method: str) -> np.ndarray:
    """Gradient of :func:`resize` w.r.t. its input of spatial size ``input_hw``."""
    (h, w), nearest = input_hw, method == "nearest"
    g = lerp_axis_grad(dy, 2, w, taps(w, dy.shape[2], method), nearest)
    return lerp_axis_grad(g, 1, h, taps(h, dy.shape[1], method), nearest)
