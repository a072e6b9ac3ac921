"""The ``Summary.Value`` s of TensorFlow 2's summaries: scalar, histogram, text, image.

Each function returns a serialised ``Summary.Value`` (:mod:`ipusim._events`) holding what
TensorBoard's own summary ops write (tensorboard/plugins/*/summary_v2.py): the plugin name
(``scalars``, ``histograms``, ``text``, ``images``), the tensor with its dtype and shape, the
description. Used by ``tf.summary`` (:mod:`ipusim.compat.tf.summary`) and the Keras
``TensorBoard`` callback.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from ipusim._events import string_tensor_proto, summary_metadata, summary_value, tensor_proto
from ipusim.errors import InputDataError

__all__ = [
    "DEFAULT_BUCKET_COUNT",
    "encode_png",
    "histogram_buckets",
    "histogram_value",
    "image_value",
    "scalar_value",
    "text_value",
]

#: TensorBoard's default number of histogram buckets (plugins/histogram/summary_v2.py).
DEFAULT_BUCKET_COUNT = 30


def scalar_value(tag: str, data: Any, description: str | None = None) -> bytes:
    """A scalar: a float32 tensor of shape [] for the ``scalars`` plugin."""
    array = np.asarray(data, dtype=np.float32)
    if array.size != 1:
        raise InputDataError(
            f"tf.summary.scalar({tag!r}): expected a scalar, received shape {list(array.shape)}"
        )
    meta = summary_metadata("scalars", description=description or "")
    return summary_value(tag, tensor_proto(array.reshape(())), meta)


def histogram_buckets(data: Any, bucket_count: int | None = None) -> np.ndarray:
    """TensorBoard's histogram of ``data``: a float64 [k, 3] array of (left, right, count).

    As tensorboard/plugins/histogram/summary_v2.py ``_buckets``: k equal-width buckets from
    the minimum to the maximum (the last right edge is the maximum), a value in bucket
    floor((x - min) / width) clamped to k - 1; a single distinct value puts every count in the
    last bucket with both edges at the value; empty data gives k rows of zeros.
    """
    k = DEFAULT_BUCKET_COUNT if bucket_count is None else max(0, int(bucket_count))
    values = np.asarray(data, dtype=np.float64).reshape(-1)
    if values.size == 0 or k == 0:
        return np.zeros((k, 3), dtype=np.float64)
    low, high = values.min(), values.max()
    width = high - low
    if width == 0:
        counts = np.zeros(k, dtype=np.float64)
        counts[-1] = values.size
        edges = np.full(k, high)
        return np.stack([edges, edges, counts], axis=1)
    index = np.minimum(np.floor((values - low) / (width / k)).astype(np.int32), k - 1)
    counts = np.bincount(index, minlength=k).astype(np.float64)
    edges = np.linspace(low, high, k + 1)
    edges[-1] = high
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def histogram_value(
    tag: str, data: Any, buckets: int | None = None, description: str | None = None
) -> bytes:
    """A histogram for the ``histograms`` plugin (see :func:`histogram_buckets`)."""
    meta = summary_metadata("histograms", description=description or "")
    return summary_value(tag, tensor_proto(histogram_buckets(data, buckets)), meta)


def text_value(tag: str, data: Any, description: str | None = None) -> bytes:
    """A text summary (a scalar string) for the ``text`` plugin."""
    if isinstance(data, np.ndarray) and data.shape == ():
        data = data.item()
    if isinstance(data, str):
        raw = data.encode()
    elif isinstance(data, bytes):
        raw = data
    else:
        raise InputDataError(
            f"tf.summary.text({tag!r}): ipusim writes a single string; received "
            f"{type(data).__name__}"
        )
    meta = summary_metadata("text", description=description or "")
    return summary_value(tag, string_tensor_proto(raw), meta)


def _to_uint8(tag: str, images: np.ndarray) -> np.ndarray:
    """``tf.image.convert_image_dtype(images, tf.uint8, saturate=True)`` for uint8 and floats
    (floats in [0, 1]: times 255.5, clamped, truncated, as TensorFlow's conversion)."""
    if images.dtype == np.uint8:
        return images
    if images.dtype.kind == "f":
        scaled = images.astype(np.float32) * np.float32(255.5)
        return scaled.clip(0, 255).astype(np.uint8)
    raise InputDataError(
        f"tf.summary.image({tag!r}): ipusim writes uint8 or floating-point images; received "
        f"{images.dtype}. Convert the images first (floats in [0, 1])"
    )


def image_value(tag: str, data: Any, max_outputs: int = 3, description: str | None = None) -> bytes:
    """Images [k, h, w, c] (c = 1, 2, 3 or 4) for the ``images`` plugin: width, height, then
    up to ``max_outputs`` PNGs, as TensorBoard's image summary."""
    images = np.asarray(data)
    if images.ndim != 4 or images.shape[-1] not in (1, 2, 3, 4):
        raise InputDataError(
            f"tf.summary.image({tag!r}): expected images of shape [k, height, width, channels] "
            f"with 1-4 channels, received shape {list(images.shape)}"
        )
    pixels = _to_uint8(tag, images)
    _, height, width, _ = pixels.shape
    strings = [str(width).encode(), str(height).encode()]
    strings += [encode_png(image) for image in pixels[: max(0, int(max_outputs))]]
    meta = summary_metadata("images", description=description or "")
    return summary_value(tag, tensor_proto(strings), meta)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(image: np.ndarray) -> bytes:
    """A PNG of an [h, w, c] uint8 image (8-bit grey, grey+alpha, RGB or RGBA; no filtering)."""
    height, width, channels = image.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    rows = np.ascontiguousarray(image, dtype=np.uint8).reshape(height, width * channels)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)  # filter type 0 per scanline
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 6))
        + _chunk(b"IEND", b"")
    )
