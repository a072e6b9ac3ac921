"""Projective image transforms with TensorFlow's sampling (``ImageProjectiveTransformV3``,
tensorflow/core/kernels/image/image_ops.h): each output pixel (x, y) reads the input at
``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x + c1 y + 1``, with the
coordinate folded back by the fill mode, then nearest or bilinear interpolation; taps outside the
image read ``fill_value``. Coordinates are float32, as TensorFlow computes them.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")


@kernel
def _clamp(v, length):
    hi = np.float32(length - 1)
    return np.float32(0.0) if v < 0 else (hi if v > hi else v)


@kernel
def _map(v, length, mode):
    # mode: 0 reflect, 1 wrap, 2 constant, 3 nearest (the order of FILL_MODES)
    if mode == 2:
        return v
    if mode == 3 or length <= 1:
        return _clamp(v, length) if length > 1 else np.float32(0.0)
    if mode == 0:
        sz2 = 2 * length
        if v < 0:
            v = np.float32(sz2 * int(-v / sz2)) + v
            v = v + sz2 if v < -length else -v - 1
        elif v > length - 1:
            v -= np.float32(sz2 * int(v / sz2))
            if v >= length:
                v = sz2 - v - 1
        return _clamp(v, length)
    sz = length - 1
    if v < 0:
        v += np.float32(length * (int(-v / sz) + 1))
    elif v > length - 1:
        v -= np.float32(length * int(v / sz))
    return _clamp(v, length)


@kernel
def _read(img, b, y, x, c, fill):
    if 0 <= y < img.shape[1] and 0 <= x < img.shape[2]:
        return np.float32(img[b, y, x, c])
    return fill


@kernel
def _round(v):  # std::round: halves away from zero
    return np.floor(v + 0.5) if v >= 0 else -np.floor(-v + 0.5)


@kernel
def _transform(img, transforms, bilinear, mode, fill, out):
    batch, height, width, channels = out.shape
    for b in range(batch):
        t = transforms[0] if transforms.shape[0] == 1 else transforms[b]
        for oy in range(height):
            for ox in range(width):
                fx, fy = np.float32(ox), np.float32(oy)
                k = t[6] * fx + t[7] * fy + np.float32(1.0)
                if k == 0:
                    out[b, oy, ox, :] = fill
                    continue
                x = _map((t[0] * fx + t[1] * fy + t[2]) / k, img.shape[2], mode)
                y = _map((t[3] * fx + t[4] * fy + t[5]) / k, img.shape[1], mode)
                # Constant mode keeps outside coordinates; taps outside read the fill value
                # (TensorFlow 2.21: a point just outside still rounds or blends into the image).
                if not bilinear:
                    ry, rx = int(_round(y)), int(_round(x))
                    for c in range(channels):
                        out[b, oy, ox, c] = _read(img, b, ry, rx, c, fill)
                    continue
                y0, x0 = np.floor(y), np.floor(x)
                y1, x1 = y0 + 1, x0 + 1
                iy0, ix0, iy1, ix1 = int(y0), int(x0), int(y1), int(x1)
                for c in range(channels):
                    top = (x1 - x) * _read(img, b, iy0, ix0, c, fill) + (x - x0) * _read(
                        img, b, iy0, ix1, c, fill
                    )
                    bottom = (x1 - x) * _read(img, b, iy1, ix0, c, fill) + (x - x0) * _read(
                        img, b, iy1, ix1, c, fill
                    )
                    out[b, oy, ox, c] = (y1 - y) * top + (y - y0) * bottom


def transform(
    images: np.ndarray,
    transforms: np.ndarray,
    interpolation: str,
    fill_mode: str,
    fill_value: float,
    output_shape: tuple[int, int] | None = None,
) -> np.ndarray:
    """``images`` (batch, H, W, C) warped by ``transforms`` (batch or 1, 8), float32 maths."""
    images = np.ascontiguousarray(images)
    height, width = output_shape or images.shape[1:3]
    out = np.empty((images.shape[0], height, width, images.shape[3]), dtype=images.dtype)
    _transform(
        images,
        np.ascontiguousarray(transforms, dtype=np.float32),
        interpolation == "bilinear",
        FILL_MODES.index(fill_mode),
        np.float32(fill_value),
        out,
    )
    return out


def invert(transforms: np.ndarray) -> np.ndarray:
    """The inverse maps, as TensorFlow's gradient builds them: each row as a 3x3 matrix with a
    final 1, inverted, divided by its last entry, flattened to 8 again."""
    t = np.asarray(transforms, dtype=np.float64)
    matrices = np.concatenate([t, np.ones((t.shape[0], 1))], axis=1).reshape(-1, 3, 3)
    inverse = np.linalg.inv(matrices)
    inverse = inverse / inverse[:, 2:3, 2:3]
    return inverse.reshape(-1, 9)[:, :8].astype(np.float32)
