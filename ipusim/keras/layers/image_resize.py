"""Image resizing with TensorFlow's sampling (``tf.image.resize``: half-pixel centres, no
antialiasing) and Keras' ``smart_resize`` (crop to the target aspect ratio, then resize), built
on the ``image_resize`` op (:mod:`ipusim.graph.ops.image_resize`): each output pixel gathers its
own taps, so forward, gradient and cost are those of a gather.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import shape as s
from ipusim.graph.ops.image_resize import image_resize

METHODS = ("bilinear", "nearest")


def check_method(layer: str, interpolation: str) -> str:
    if interpolation not in METHODS:
        raise UnsupportedError(
            f"{layer}: interpolation {interpolation!r} is not simulated by ipusim; use one of "
            f"{METHODS}"
        )
    return interpolation


def resize(images: Any, height: int, width: int, method: str = "bilinear") -> Any:
    """``tf.image.resize(images, (height, width), method)`` for ``(batch, H, W, C)`` images."""
    if images.ndim != 4:
        raise ConfigurationError(
            f"resizing expects images of shape (batch, height, width, channels), received "
            f"{images.shape}"
        )
    if images.shape[1] is None or images.shape[2] is None:
        raise ConfigurationError(f"resizing needs the image size known, received {images.shape}")
    return image_resize(images, height, width, method)


def center_crop(images: Any, height: int, width: int) -> Any:
    """The central ``height`` x ``width`` window (offsets rounded down, as Keras)."""
    h, w = images.shape[1], images.shape[2]
    top, left = (h - height) // 2, (w - width) // 2
    return s.slice(images, [0, top, left, 0], [-1, height, width, -1])


def smart_resize(images: Any, height: int, width: int, method: str = "bilinear") -> Any:
    """Keras' ``smart_resize``: the largest centred crop of the target aspect ratio, resized."""
    h, w = images.shape[1], images.shape[2]
    crop_h = min(h, int(np.float32(w * height) / np.float32(width)))
    crop_w = min(w, int(np.float32(h * width) / np.float32(height)))
    top = int(np.float32(h - crop_h) / np.float32(2))
    left = int(np.float32(w - crop_w) / np.float32(2))
    cropped = s.slice(images, [0, top, left, 0], [-1, crop_h, crop_w, -1])
    return resize(cropped, height, width, method)
