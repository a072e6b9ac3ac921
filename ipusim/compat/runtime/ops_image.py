"""``tf.image`` basics for NHWC (or HWC) float images: flips, transposes, crops and pads,
``resize`` (bilinear / nearest with TensorFlow 2's half-pixel centres, to any size), brightness / contrast, standardisation, grayscale and
dtype conversion, and the random flips / brightness of augmentation pipelines.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.compat.runtime import ops, ops_array, ops_random
from ipusim.compat.runtime.dispatch import rank_of
from ipusim.compat.runtime.ops_math import _op, _t
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import shape as gs
from ipusim.graph.ops.image_resize import image_resize
from ipusim.graph.spec import canonical_dtype


def _hw_axes(image: Any) -> tuple[int, int]:
    rank = rank_of(image)
    if rank not in (3, 4):
        raise ConfigurationError(f"tf.image: expected an HWC or NHWC image, received rank {rank}")
    return (rank - 3, rank - 2)


def flip_left_right(image: Any) -> Any:
    """``tf.image.flip_left_right``: reverse the width axis."""
    return ops_array.reverse(image, [_hw_axes(image)[1]])


def flip_up_down(image: Any) -> Any:
    """``tf.image.flip_up_down``: reverse the height axis."""
    return ops_array.reverse(image, [_hw_axes(image)[0]])


def transpose(image: Any, name: str | None = None) -> Any:
    """``tf.image.transpose``: swap height and width."""
    h, w = _hw_axes(image)
    perm = list(range(rank_of(image)))
    perm[h], perm[w] = w, h
    return ops.transpose(image, perm)


def rot90(image: Any, k: int = 1, name: str | None = None) -> Any:
    """``tf.image.rot90``: rotate counter-clockwise by ``k`` quarter turns."""
    for _ in range(int(k) % 4):
        image = flip_up_down(transpose(image))
    return image


def _random_flip(image: Any, seed: Any, flip: Any) -> Any:
    """Each image of a batch flipped with probability 1/2 (a select on a per-image draw)."""
    batched = rank_of(image) == 4
    count = int(image.shape[0]) if batched else 1
    draw = ops_random.uniform([count], seed=seed)
    keep = ops.less(draw, np.float32(0.5))
    mask = ops.reshape(keep, [count, 1, 1, 1] if batched else [1, 1, 1])
    return ops_array.where(ops_array.broadcast_to(mask, image.shape), image, flip(image))


def random_flip_left_right(image: Any, seed: Any = None) -> Any:
    """``tf.image.random_flip_left_right``."""
    return _random_flip(_t(image), seed, flip_left_right)


def random_flip_up_down(image: Any, seed: Any = None) -> Any:
    """``tf.image.random_flip_up_down``."""
    return _random_flip(_t(image), seed, flip_up_down)


def crop_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                         target_width: int) -> Any:  # fmt: skip
    """``tf.image.crop_to_bounding_box``."""
    h, w = _hw_axes(image)
    begin = [0] * rank_of(image)
    size = [-1] * rank_of(image)
    begin[h], begin[w] = int(offset_height), int(offset_width)
    size[h], size[w] = int(target_height), int(target_width)
    return ops_array.slice(image, begin, size)


def pad_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                        target_width: int) -> Any:  # fmt: skip
    """``tf.image.pad_to_bounding_box``: zeros around ``image``."""
    h, w = _hw_axes(image)
    pads = [[0, 0] for _ in range(rank_of(image))]
    pads[h] = [int(offset_height), int(target_height) - int(offset_height) - image.shape[h]]
    pads[w] = [int(offset_width), int(target_width) - int(offset_width) - image.shape[w]]
    if min(pads[h] + pads[w]) < 0:
        raise ConfigurationError(
            "tf.image.pad_to_bounding_box: the target is smaller than the image"
        )
    return ops_array.pad(image, pads)


def central_crop(image: Any, central_fraction: float) -> Any:
    """``tf.image.central_crop``: the centred ``central_fraction`` of height and width."""
    if not 0.0 < central_fraction <= 1.0:
        raise ConfigurationError(f"central_fraction must be in (0, 1], received {central_fraction}")
    h, w = _hw_axes(image)
    rows, cols = image.shape[h], image.shape[w]
    top = int((rows - rows * central_fraction) / 2)
    left = int((cols - cols * central_fraction) / 2)
    return crop_to_bounding_box(image, top, left, rows - 2 * top, cols - 2 * left)


def resize_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> Any:
    """``tf.image.resize_with_crop_or_pad``: centre crop and / or zero pad to the target."""
    h, w = _hw_axes(image)
    rows, cols = image.shape[h], image.shape[w]
    crop_top, crop_left = max(rows - target_height, 0) // 2, max(cols - target_width, 0) // 2
    cropped = crop_to_bounding_box(image, crop_top, crop_left, min(rows, target_height),
                                   min(cols, target_width))  # fmt: skip
    pad_top, pad_left = max(target_height - rows, 0) // 2, max(target_width - cols, 0) // 2
    return pad_to_bounding_box(cropped, pad_top, pad_left, target_height, target_width)


def resize(images: Any, size: Any, method: str = "bilinear", preserve_aspect_ratio: bool = False,
           antialias: bool = False, name: str | None = None) -> Any:  # fmt: skip
    """``tf.image.resize`` to ``size`` = (height, width), ``"bilinear"`` or ``"nearest"`` (the
    ``image_resize`` graph op: TensorFlow 2's half-pixel centres)."""
    method = str(getattr(method, "value", method)).lower()
    if method not in ("bilinear", "nearest") or preserve_aspect_ratio or antialias:
        raise UnsupportedError(
            "tf.image.resize: only method 'bilinear' or 'nearest', without preserve_aspect_ratio "
            "or antialias, is simulated"
        )
    height, width = (int(s) for s in size)

    def compose(x: Any) -> Any:
        x = x if x.dtype in ("float16", "float32", "float64") else gm.cast(x, "float32")
        batched = x if x.ndim == 4 else gs.expand_dims(x, 0)
        out = image_resize(batched, height, width, method)
        return out if x.ndim == 4 else gs.squeeze(out, axis=0)

    return _op(compose, _t(images))


def adjust_brightness(image: Any, delta: float) -> Any:
    """``tf.image.adjust_brightness``: add ``delta``."""
    return ops.add(_t(image), float(delta))


def adjust_contrast(images: Any, contrast_factor: float) -> Any:
    """``tf.image.adjust_contrast``: ``(x - mean) * factor + mean``, the mean per image and
    channel over height and width."""

    def compose(x: Any) -> Any:
        mean = gr.reduce_mean(x, axis=_hw_axes(x), keepdims=True)
        return gm.add(gm.multiply(gm.subtract(x, mean), float(contrast_factor)), mean)

    return _op(compose, _t(images))


def random_brightness(image: Any, max_delta: float, seed: Any = None) -> Any:
    """``tf.image.random_brightness``: add one uniform delta in ``[-max_delta, max_delta)``."""
    delta = ops_random.uniform([], -float(max_delta), float(max_delta), seed=seed)
    return ops.add(_t(image), delta)


def per_image_standardization(image: Any) -> Any:
    """``tf.image.per_image_standardization``: ``(x - mean) / max(std, 1 / sqrt(N))`` over
    each image's height, width and channels."""

    def compose(x: Any) -> Any:
        x = x if x.dtype in ("float16", "float32", "float64") else gm.cast(x, "float32")
        axes = tuple(range(x.ndim - 3, x.ndim))
        count = float(np.prod([x.shape[a] for a in axes]))
        mean = gr.reduce_mean(x, axis=axes, keepdims=True)
        std = gm.sqrt(gr.reduce_mean(gm.square(gm.subtract(x, mean)), axis=axes, keepdims=True))
        return gm.divide(gm.subtract(x, mean), gm.maximum(std, 1.0 / np.sqrt(count)))

    return _op(compose, _t(image))


def rgb_to_grayscale(images: Any, name: str | None = None) -> Any:
    """``tf.image.rgb_to_grayscale``: ITU-R 601 luma weights, keeping a channel axis."""
    weights = np.array([0.2989, 0.5870, 0.1140], np.float32)

    def compose(x: Any) -> Any:
        return gr.reduce_sum(gm.multiply(x, weights.astype(x.dtype)), axis=-1, keepdims=True)

    return _op(compose, _t(images))


def grayscale_to_rgb(images: Any, name: str | None = None) -> Any:
    """``tf.image.grayscale_to_rgb``: the channel repeated three times."""
    return ops_array.tile(images, [1] * (rank_of(images) - 1) + [3])


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False, name: Any = None) -> Any:
    """``tf.image.convert_image_dtype`` between uint8 (0..255) and floats (0..1)."""
    target = canonical_dtype(dtype)
    source = str(getattr(image, "dtype", np.asarray(image).dtype))
    if source == target:
        return image
    if source == "uint8" and target.startswith("float"):
        return _op(lambda x: gm.multiply(gm.cast(x, target), 1.0 / 255.0), _t(image))
    if source.startswith("float") and target == "uint8":
        # As TensorFlow: scale by 255.5 and truncate, so [0, 1] maps onto 0..255 evenly.
        def compose(x: Any) -> Any:
            return gm.cast(gm.clip(gm.multiply(x, 255.5), 0.0, 255.0), "uint8")

        return _op(compose, _t(image))
    if source.startswith("float") and target.startswith("float"):
        return ops.cast(image, target)
    raise UnsupportedError(f"tf.image.convert_image_dtype: {source} -> {target} is not simulated")


class ResizeMethod:
    """``tf.image.ResizeMethod`` names."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"


__all__ = [
    "ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
    "convert_image_dtype", "crop_to_bounding_box", "flip_left_right", "flip_up_down",
    "grayscale_to_rgb", "pad_to_bounding_box", "per_image_standardization",
    "random_brightness", "random_flip_left_right", "random_flip_up_down", "resize",
    "resize_with_crop_or_pad", "rgb_to_grayscale", "rot90", "transpose",
]  # fmt: skip
