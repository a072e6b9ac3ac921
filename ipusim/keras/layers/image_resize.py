"""Image resizing as graph ops, with TensorFlow's sampling (``tf.image.resize``: half-pixel
centres, no antialiasing) and Keras' ``smart_resize`` (crop to the target aspect ratio, then
resize).

A resize is separable: along each spatial axis the output is a fixed matrix times the input, the
matrix holding TensorFlow's bilinear weights (two taps per output row) or nearest-neighbour picks
(one 1). So a resize is two ``matmul`` ops with constant matrices around transposes: forward,
gradient and cost come from those ops (the cost counts the dense products, an upper bound on the
IPU's four-tap gather).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import nn
from ipusim.graph.ops import shape as s

METHODS = ("bilinear", "nearest")


def interpolation_matrix(in_size: int, out_size: int, method: str) -> np.ndarray:
    """``(out_size, in_size)`` weights so that ``out = W @ in`` along one axis.

    Bilinear (tensorflow/core/kernels/image/resize_bilinear_op.cc, half-pixel centres): source
    ``(i + 0.5) * in/out - 0.5``, taps ``max(floor, 0)`` and ``min(ceil, in - 1)``. Nearest
    (resize_nearest_neighbor_op.cc, half-pixel): ``min(floor((i + 0.5) * in/out), in - 1)``.
    """
    scale = in_size / out_size
    weights = np.zeros((out_size, in_size), dtype=np.float64)
    for i in range(out_size):
        if method == "nearest":
            weights[i, min(int(math.floor((i + 0.5) * scale)), in_size - 1)] = 1.0
            continue
        source = (i + 0.5) * scale - 0.5
        floor = math.floor(source)
        lerp = source - floor
        weights[i, max(floor, 0)] += 1.0 - lerp
        weights[i, min(math.ceil(source), in_size - 1)] += lerp
    return weights


def check_method(layer: str, interpolation: str) -> str:
    if interpolation not in METHODS:
        raise UnsupportedError(
            f"{layer}: interpolation {interpolation!r} is not simulated by ipusim; use one of "
            f"{METHODS}"
        )
    return interpolation


def _along(x: Any, axis_size: int, out_size: int, method: str) -> Any:
    """Resize the last axis of ``x`` (any leading axes) from ``axis_size`` to ``out_size``."""
    matrix = interpolation_matrix(axis_size, out_size, method).T.astype(x.dtype)
    lead = [-1 if d is None else d for d in x.shape[:-1]]
    if lead.count(-1) > 1:
        raise ConfigurationError(f"resizing needs image sizes known, received shape {x.shape}")
    flat = s.reshape(x, (-1, axis_size))
    return s.reshape(nn.matmul(flat, matrix), (*lead, out_size))


def resize(images: Any, height: int, width: int, method: str = "bilinear") -> Any:
    """``tf.image.resize(images, (height, width), method)`` for ``(batch, H, W, C)`` images."""
    if images.ndim != 4:
        raise ConfigurationError(
            f"resizing expects images of shape (batch, height, width, channels), received "
            f"{images.shape}"
        )
    h, w = images.shape[1], images.shape[2]
    if h is None or w is None:
        raise ConfigurationError(f"resizing needs the image size known, received {images.shape}")
    if (h, w) == (height, width) and method == "nearest":
        return images
    x = s.transpose(images, (0, 2, 3, 1))  # (B, W, C, H)
    x = _along(x, h, height, method)  # (B, W, C, h)
    x = s.transpose(x, (0, 3, 2, 1))  # (B, h, C, W)
    x = _along(x, w, width, method)  # (B, h, C, w)
    return s.transpose(x, (0, 1, 3, 2))


def center_crop(images: Any, height: int, width: int) -> Any:
    """The central ``height`` x ``width`` window (offsets rounded down, as Keras)."""
    h, w = images.shape[1], images.shape[2]
    top, left = (h - height) // 2, (w - width) // 2
    size = [-1, height, width, -1]
    return s.slice(images, [0, top, left, 0], size)


def smart_resize(images: Any, height: int, width: int, method: str = "bilinear") -> Any:
    """Keras' ``smart_resize``: the largest centred crop of the target aspect ratio, resized."""
    h, w = images.shape[1], images.shape[2]
    crop_h = min(h, int(np.float32(w * height) / np.float32(width)))
    crop_w = min(w, int(np.float32(h * width) / np.float32(height)))
    top = int(np.float32(h - crop_h) / np.float32(2))
    left = int(np.float32(w - crop_w) / np.float32(2))
    cropped = s.slice(images, [0, top, left, 0], [-1, crop_h, crop_w, -1])
    return resize(cropped, height, width, method)
