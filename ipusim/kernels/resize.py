"""Up-sampling by integer factors as ``tf.image.resize`` does it (TensorFlow 2's half-pixel
centres), bilinear or nearest, and its gradient, on NHWC tensors.

Bilinear: along each axis, output ``o`` reads source position ``(o + 0.5) / scale − 0.5``: the
two pixels around it (clamped to the image) weighted by the distance, rows first, then columns
(separable, as TensorFlow's kernel); the gradient scatters back through the same taps. An output
reads only its own two source pixels per axis, so a non-finite pixel stays in the outputs that
read it. Nearest: output ``o`` reads source ``o // scale``, a copy.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ipusim.kernels.image_resize import lerp_axis, lerp_axis_grad


@lru_cache(maxsize=256)
def bilinear_taps(size: int, scale: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lower, upper, weight of upper)`` source pixel per output pixel along one axis of
    ``size`` pixels resized by ``scale`` (read-only arrays of ``size·scale``)."""
    source = (np.arange(size * scale) + 0.5) / scale - 0.5
    floor = np.floor(source)
    lower = np.clip(floor, 0, size - 1).astype(np.int64)
    upper = np.clip(np.ceil(source), 0, size - 1).astype(np.int64)
    lerp = source - floor
    for array in (lower, upper, lerp):
        array.flags.writeable = False
    return lower, upper, lerp


def resize(x: np.ndarray, scale: tuple[int, int], method: str = "bilinear") -> np.ndarray:
    """``x`` (N, H, W, C) resized to ``(N, H·sh, W·sw, C)``."""
    if method == "nearest":
        return np.repeat(np.repeat(x, scale[0], axis=1), scale[1], axis=2)
    y = lerp_axis(x, 1, bilinear_taps(x.shape[1], scale[0])) if scale[0] > 1 else x
    return lerp_axis(y, 2, bilinear_taps(y.shape[2], scale[1])) if scale[1] > 1 else y


def resize_grad(
    dy: np.ndarray, input_hw: tuple[int, int], scale: tuple[int, int], method: str = "bilinear"
) -> np.ndarray:
    """Gradient of :func:`resize` w.r.t. its input of spatial size ``input_hw``."""
    n, ho, wo, c = dy.shape
    h, w = input_hw
    if method == "nearest":  # each pixel's gradient: the sum over its repeats
        return dy.reshape(n, h, scale[0], w, scale[1], c).sum(axis=(2, 4), dtype=dy.dtype)
    g = lerp_axis_grad(dy, 2, w, bilinear_taps(w, scale[1])) if scale[1] > 1 else dy
    return lerp_axis_grad(g, 1, h, bilinear_taps(h, scale[0])) if scale[0] > 1 else g
