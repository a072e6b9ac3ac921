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


def _weights(rank: int, axis: int, lerp: np.ndarray, dtype: np.dtype) -> np.ndarray:
    shape = [1] * rank
    shape[axis] = lerp.size
    return lerp.astype(dtype).reshape(shape)


def _axis(x: np.ndarray, axis: int, out: int, method: str) -> np.ndarray:
    lower, upper, lerp = taps(x.shape[axis], out, method)
    if method == "nearest":
        return np.take(x, lower, axis=axis)
    f = _weights(x.ndim, axis, lerp, x.dtype)
    return np.take(x, lower, axis=axis) * (1 - f) + np.take(x, upper, axis=axis) * f


def _axis_grad(dy: np.ndarray, axis: int, size: int, method: str) -> np.ndarray:
    lower, upper, lerp = taps(size, dy.shape[axis], method)
    moved = np.zeros((size, *np.moveaxis(dy, axis, 0).shape[1:]), dtype=dy.dtype)
    if method == "nearest":
        np.add.at(moved, lower, np.moveaxis(dy, axis, 0))
    else:
        f = _weights(dy.ndim, axis, lerp, dy.dtype)
        np.add.at(moved, lower, np.moveaxis(dy * (1 - f), axis, 0))
        np.add.at(moved, upper, np.moveaxis(dy * f, axis, 0))
    return np.ascontiguousarray(np.moveaxis(moved, 0, axis))


def resize(x: np.ndarray, size: tuple[int, int], method: str) -> np.ndarray:
    """``x`` (N, H, W, C) resized to (N, size[0], size[1], C): rows first, then columns."""
    return np.ascontiguousarray(_axis(_axis(x, 1, size[0], method), 2, size[1], method))


def resize_grad(dy: np.ndarray, input_hw: tuple[int, int], method: str) -> np.ndarray:
    """Gradient of :func:`resize` w.r.t. its input of spatial size ``input_hw``."""
    return _axis_grad(_axis_grad(dy, 2, input_hw[1], method), 1, input_hw[0], method)
