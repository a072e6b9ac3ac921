"""Pooling kernels on NHWC tensors: max, average and global average pooling and their gradients.

Loops run over output pixels and window taps with the channel index innermost, so every access is a
contiguous channel run. Windows are clipped to the image: padding never contributes a value (max
pooling ignores it, average pooling divides by the number of real pixels, as TensorFlow does).

Geometry arguments shared by the wrappers:
    pool: ``(ph, pw)`` window size in pixels.
    strides: ``(sh, sw)`` in pixels.
    pads: ``(pad_top, pad_left)``, padding before the first row / column.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel


@kernel
def _max_pool(x, ph, pw, sh, sw, pt, pl, out):
    n_, h, w, c = x.shape
    ho, wo = out.shape[1], out.shape[2]
    for n in range(n_):
        for oh in range(ho):
            h0 = oh * sh - pt
            hs, he = max(h0, 0), min(h0 + ph, h)
            for ow in range(wo):
                w0 = ow * sw - pl
                ws, we = max(w0, 0), min(w0 + pw, w)
                o = out[n, oh, ow]
                for ch in range(c):
                    o[ch] = -np.inf
                for ih in range(hs, he):
                    for iw in range(ws, we):
                        xr = x[n, ih, iw]
                        for ch in range(c):
                            o[ch] = max(o[ch], xr[ch])


@kernel
def _max_pool_grad(x3, dy, ph, pw, sh, sw, pt, pl, w, dx3):
    # x3, dx3: (N, H*W, C). Route each dy to the first maximum of its window in row-major
    # (kh, kw) order, as TensorFlow does: a later element only takes over when strictly greater.
    n_, hw, c = x3.shape
    h = hw // max(w, 1)
    ho, wo = dy.shape[1], dy.shape[2]
    dx3[:] = 0
    best = np.empty(c, dtype=x3.dtype)
    arg = np.empty(c, dtype=np.int64)
    for n in range(n_):
        xn = x3[n]
        dxn = dx3[n]
        for oh in range(ho):
            h0 = oh * sh - pt
            hs, he = max(h0, 0), min(h0 + ph, h)
            for ow in range(wo):
                w0 = ow * sw - pl
                ws, we = max(w0, 0), min(w0 + pw, w)
                if hs >= he or ws >= we:
                    continue
                first = hs * w + ws
                xr = xn[first]
                for ch in range(c):
                    best[ch] = xr[ch]
                    arg[ch] = first
                for ih in range(hs, he):
                    for iw in range(ws, we):
                        pos = ih * w + iw
                        xr = xn[pos]
                        for ch in range(c):
                            v = xr[ch]
                            if v > best[ch]:
                                best[ch] = v
                                arg[ch] = pos
                g = dy[n, oh, ow]
                for ch in range(c):
                    dxn[arg[ch], ch] += g[ch]


@kernel
def _avg_pool(x, ph, pw, sh, sw, pt, pl, out):
    n_, h, w, c = x.shape
    ho, wo = out.shape[1], out.shape[2]
    for n in range(n_):
        for oh in range(ho):
            h0 = oh * sh - pt
            hs, he = max(h0, 0), min(h0 + ph, h)
            for ow in range(wo):
                w0 = ow * sw - pl
                ws, we = max(w0, 0), min(w0 + pw, w)
                o = out[n, oh, ow]
                for ch in range(c):
                    o[ch] = 0
                for ih in range(hs, he):
                    for iw in range(ws, we):
                        xr = x[n, ih, iw]
                        for ch in range(c):
                            o[ch] += xr[ch]
                inv = 1.0 / max((he - hs) * (we - ws), 1)
                for ch in range(c):
                    o[ch] *= inv


@kernel
def _avg_pool_grad(dy, ph, pw, sh, sw, pt, pl, dx):
    n_, h, w, c = dx.shape
    ho, wo = dy.shape[1], dy.shape[2]
    dx[:] = 0
    for n in range(n_):
        for oh in range(ho):
            h0 = oh * sh - pt
            hs, he = max(h0, 0), min(h0 + ph, h)
            for ow in range(wo):
                w0 = ow * sw - pl
                ws, we = max(w0, 0), min(w0 + pw, w)
                inv = 1.0 / max((he - hs) * (we - ws), 1)
                g = dy[n, oh, ow]
                for ih in range(hs, he):
                    for iw in range(ws, we):
                        d = dx[n, ih, iw]
                        for ch in range(c):
                            d[ch] += g[ch] * inv


@kernel
def _global_avg_pool(x3, out):
    # x3: (N, H*W, C); sums in float64 so large images lose no precision in float32.
    n_, hw, c = x3.shape
    acc = np.empty(c, dtype=np.float64)
    inv = 1.0 / max(hw, 1)
    for n in range(n_):
        for ch in range(c):
            acc[ch] = 0.0
        for p in range(hw):
            for ch in range(c):
                acc[ch] += x3[n, p, ch]
        for ch in range(c):
            out[n, ch] = acc[ch] * inv


@kernel
def _global_avg_pool_grad(dy, dx3):
    n_, hw, c = dx3.shape
    inv = 1.0 / max(hw, 1)
    for n in range(n_):
        for p in range(hw):
            for ch in range(c):
                dx3[n, p, ch] = dy[n, ch] * inv


def max_pool2d(
    x: np.ndarray,
    out_hw: tuple[int, int],
    pool: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int],
) -> np.ndarray:
    """Max pooling of NHWC ``x``; returns ``(N, Ho, Wo, C)``."""
    x = np.ascontiguousarray(x)
    out = np.empty((x.shape[0], out_hw[0], out_hw[1], x.shape[3]), dtype=x.dtype)
    _max_pool(x, *pool, *strides, *pads, out)
    return out


def max_pool2d_grad(
    x: np.ndarray,
    dy: np.ndarray,
    pool: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int],
) -> np.ndarray:
    """Gradient of :func:`max_pool2d` w.r.t. ``x``: each ``dy`` goes to its window's first max."""
    x = np.ascontiguousarray(x)
    n, h, w, c = x.shape
    dx = np.empty_like(x)
    xr, dxr = x.reshape(n, h * w, c), dx.reshape(n, h * w, c)
    _max_pool_grad(xr, np.ascontiguousarray(dy), *pool, *strides, *pads, w, dxr)
    return dx


def avg_pool2d(
    x: np.ndarray,
    out_hw: tuple[int, int],
    pool: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int],
) -> np.ndarray:
    """Average pooling of NHWC ``x`` over the real (unpadded) pixels of each window."""
    x = np.ascontiguousarray(x)
    out = np.empty((x.shape[0], out_hw[0], out_hw[1], x.shape[3]), dtype=x.dtype)
    _avg_pool(x, *pool, *strides, *pads, out)
    return out


def avg_pool2d_grad(
    dy: np.ndarray,
    input_hw: tuple[int, int],
    pool: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int],
) -> np.ndarray:
    """Gradient of :func:`avg_pool2d` w.r.t. its input of spatial size ``input_hw``."""
    dy = np.ascontiguousarray(dy)
    dx = np.empty((dy.shape[0], input_hw[0], input_hw[1], dy.shape[3]), dtype=dy.dtype)
    _avg_pool_grad(dy, *pool, *strides, *pads, dx)
    return dx


def global_avg_pool2d(x: np.ndarray) -> np.ndarray:
    """Mean over H and W of NHWC ``x``; returns ``(N, C)``."""
    x = np.ascontiguousarray(x)
    n, h, w, c = x.shape
    out = np.empty((n, c), dtype=x.dtype)
    _global_avg_pool(x.reshape(n, h * w, c), out)
    return out


def global_avg_pool2d_grad(dy: np.ndarray, input_hw: tuple[int, int]) -> np.ndarray:
    """Gradient of :func:`global_avg_pool2d`: ``dy / (H*W)`` spread over every pixel."""
    dy = np.ascontiguousarray(dy)
    n, c = dy.shape
    h, w = input_hw
    dx = np.empty((n, h, w, c), dtype=dy.dtype)
    _global_avg_pool_grad(dy, dx.reshape(n, h * w, c))
    return dx
