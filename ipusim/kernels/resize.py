"""Up-sampling by integer factors as ``tf.image.resize`` does it (TensorFlow 2's half-pixel
centres), bilinear or nearest, and its gradient, on NHWC tensors.

Bilinear: each axis is resized by its ``(size·scale, size)`` interpolation matrix (at most two
non-zero weights per row): the forward pass multiplies the rows, then the columns; the gradient
multiplies by the transposed matrices in the opposite order. Nearest: output ``o`` reads source
``o // scale``, a copy.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=256)
def bilinear_matrix(size: int, scale: int) -> np.ndarray:
    """``(size·scale, size)`` weights along one axis: output ``o`` reads source position
    ``(o + 0.5) / scale − 0.5``, clamped to the edge pixels (read-only float64 array)."""
    out = size * scale
    weights = np.zeros((out, size), np.float64)
    for o in range(out):
        source = (o + 0.5) / scale - 0.5
        floor = math.floor(source)
        lerp = source - floor
        lower, upper = max(floor, 0), min(math.ceil(source), size - 1)
        weights[o, lower] += 1.0 - lerp
        weights[o, upper] += lerp
    weights.flags.writeable = False
    return weights


def resize(x: np.ndarray, scale: tuple[int, int], method: str = "bilinear") -> np.ndarray:
    """``x`` (N, H, W, C) resized to ``(N, H·sh, W·sw, C)``."""
    if method == "nearest":  # copies: a non-finite pixel stays in its own outputs
        return np.repeat(np.repeat(x, scale[0], axis=1), scale[1], axis=2)
    n, h, w, c = x.shape
    rows = bilinear_matrix(h, scale[0]).astype(x.dtype)
    cols = bilinear_matrix(w, scale[1]).astype(x.dtype)
    t = np.matmul(rows, np.ascontiguousarray(x).reshape(n, h, w * c))  # (N, Ho, W·C)
    y = np.matmul(cols, t.reshape(n * h * scale[0], w, c))  # (N·Ho, Wo, C)
    return y.reshape(n, h * scale[0], w * scale[1], c)


def resize_grad(
    dy: np.ndarray, input_hw: tuple[int, int], scale: tuple[int, int], method: str = "bilinear"
) -> np.ndarray:
    """Gradient of :func:`resize` w.r.t. its input of spatial size ``input_hw``."""
    n, ho, wo, c = dy.shape
    h, w = input_hw
    if method == "nearest":  # each pixel's gradient: the sum over its repeats
        return dy.reshape(n, h, scale[0], w, scale[1], c).sum(axis=(2, 4), dtype=dy.dtype)
    rows = bilinear_matrix(h, scale[0]).astype(dy.dtype)
    cols = bilinear_matrix(w, scale[1]).astype(dy.dtype)
    t = np.matmul(cols.T, np.ascontiguousarray(dy).reshape(n * ho, wo, c))  # (N·Ho, W, C)
    dx = np.matmul(rows.T, t.reshape(n, ho, w * c))  # (N, H, W·C)
    return dx.reshape(n, h, w, c)
