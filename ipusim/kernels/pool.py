"""Pooling kernels on channels-last tensors: max, average and global average pooling and their
gradients, over 2-D images (NHWC) and 3-D volumes (NDHWC).

Loops run over output positions and window taps with the channel index innermost, so every access
is a contiguous channel run. Windows are clipped to the input: padding never contributes a value
(max pooling ignores it, average pooling divides by the number of real elements, as TensorFlow
does). A 2-D pool runs the volume kernels on a unit-depth view. The max-pooling gradients follow
TensorFlow's tie rules: in 2-D each ``dy`` goes to the first maximum of its window (row-major), in
3-D to every element equal to the window's maximum, as TensorFlow's ``MaxPool3DGrad`` and popnn's
``MaxPoolingGrad`` vertex do (``fwdActsIn == fwdActsOut``).

Geometry arguments shared by the wrappers:
    pool: the window size, ``(ph, pw)`` or ``(pd, ph, pw)``.
    strides: in elements, the same length.
    pads: padding before the first plane / row / column, the same length.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.reduce import _broadcast3, _sum3

#: A window argument (size, strides or padding): a pair in 2-D, a triple in 3-D.
Window = tuple[int, ...]


@kernel
def _window(o, size, k, s, p):
    start = o * s - p
    return max(start, 0), min(start + k, size)


@kernel
def _pool(x, pool, strides, pads, is_max, reciprocal, out):
    # Max (is_max) or average pooling. The 2-D wrappers average by multiplying by the reciprocal
    # of the count, the 3-D ones by dividing by it (the two round differently; each is kept).
    n_, d, h, w, c = x.shape
    for n in range(n_):
        for od in range(out.shape[1]):
            d0, d1 = _window(od, d, pool[0], strides[0], pads[0])
            for oh in range(out.shape[2]):
                h0, h1 = _window(oh, h, pool[1], strides[1], pads[1])
                for ow in range(out.shape[3]):
                    w0, w1 = _window(ow, w, pool[2], strides[2], pads[2])
                    o = out[n, od, oh, ow]
                    for ch in range(c):
                        o[ch] = -np.inf if is_max else 0
                    for i in range(d0, d1):
                        for j in range(h0, h1):
                            for k in range(w0, w1):
                                xr = x[n, i, j, k]
                                if is_max:
                                    for ch in range(c):
                                        o[ch] = max(o[ch], xr[ch])
                                else:
                                    for ch in range(c):
                                        o[ch] += xr[ch]
                    if is_max:
                        continue
                    count = max((d1 - d0) * (h1 - h0) * (w1 - w0), 1)
                    if reciprocal:
                        inv = 1.0 / count
                        for ch in range(c):
                            o[ch] *= inv
                    else:
                        for ch in range(c):
                            o[ch] /= count


@kernel
def _pool_grad(x, y, dy, pool, strides, pads, is_max, reciprocal, dx):
    # is_max: every element of a window equal to its maximum (x the forward input, y its output)
    # receives the window's dy. Otherwise each dy / count is spread over the window's real
    # elements (x and y unused; ``reciprocal``: as in _pool).
    n_, d, h, w, c = dx.shape
    dx[:] = 0
    for n in range(n_):
        for od in range(dy.shape[1]):
            d0, d1 = _window(od, d, pool[0], strides[0], pads[0])
            for oh in range(dy.shape[2]):
                h0, h1 = _window(oh, h, pool[1], strides[1], pads[1])
                for ow in range(dy.shape[3]):
                    w0, w1 = _window(ow, w, pool[2], strides[2], pads[2])
                    count = max((d1 - d0) * (h1 - h0) * (w1 - w0), 1)
                    inv = 1.0 / count
                    yr, gr = y[n, od, oh, ow], dy[n, od, oh, ow]
                    for i in range(d0, d1):
                        for j in range(h0, h1):
                            for k in range(w0, w1):
                                xr, dr = x[n, i, j, k], dx[n, i, j, k]
                                if is_max:
                                    for ch in range(c):
                                        if xr[ch] == yr[ch]:
                                            dr[ch] += gr[ch]
                                elif reciprocal:
                                    for ch in range(c):
                                        dr[ch] += gr[ch] * inv
                                else:
                                    for ch in range(c):
                                        dr[ch] += gr[ch] / count


@kernel
def _max_pool2d_grad(x3, dy, ph, pw, sh, sw, pt, pl, w, dx3):
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
            hs, he = _window(oh, h, ph, sh, pt)
            for ow in range(wo):
                ws, we = _window(ow, w, pw, sw, pl)
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


def _geometry(*windows: Window) -> tuple[np.ndarray, ...]:
    """The kernels' ``pool, strides, pads``: 2-D ones get a unit depth (1, 1, 0) in front."""
    return tuple(
        np.asarray((fill,) * (3 - len(v)) + tuple(v), dtype=np.int64)
        for v, fill in zip(windows, (1, 1, 0), strict=True)
    )


def _volume(x: np.ndarray) -> np.ndarray:
    """``x`` C-contiguous, with a unit depth axis when it is an NHWC image."""
    x = np.ascontiguousarray(x)
    return x.reshape(x.shape[0], 1, *x.shape[1:]) if x.ndim == 4 else x


def _forward(
    x: np.ndarray, out_size: Window, pool: Window, strides: Window, pads: Window, is_max: bool
) -> np.ndarray:
    """Run :func:`_pool` on ``x`` (NHWC or NDHWC) into a new ``(N, *out_size, C)``."""
    x = np.ascontiguousarray(x)
    out = np.empty((x.shape[0], *out_size, x.shape[-1]), dtype=x.dtype)
    _pool(_volume(x), *_geometry(pool, strides, pads), is_max, x.ndim == 4, _volume(out))
    return out


def max_pool(
    x: np.ndarray, out_size: Window, pool: Window, strides: Window, pads: Window
) -> np.ndarray:
    """Max pooling of ``x`` (NHWC or NDHWC); returns ``(N, *out_size, C)``."""
    return _forward(x, out_size, pool, strides, pads, True)


def avg_pool(
    x: np.ndarray, out_size: Window, pool: Window, strides: Window, pads: Window
) -> np.ndarray:
    """Average pooling of ``x`` (NHWC or NDHWC) over the real (unpadded) elements of each window."""
    return _forward(x, out_size, pool, strides, pads, False)


def avg_pool_grad(
    dy: np.ndarray, input_size: Window, pool: Window, strides: Window, pads: Window
) -> np.ndarray:
    """Gradient of :func:`avg_pool` w.r.t. its input of spatial size ``input_size``."""
    dy = np.ascontiguousarray(dy)
    dx = np.empty((dy.shape[0], *input_size, dy.shape[-1]), dtype=dy.dtype)
    dy5, dx5 = _volume(dy), _volume(dx)
    _pool_grad(dx5, dy5, dy5, *_geometry(pool, strides, pads), False, dy.ndim == 4, dx5)
    return dx


max_pool2d = max_pool3d = max_pool
avg_pool2d = avg_pool3d = avg_pool
avg_pool2d_grad = avg_pool3d_grad = avg_pool_grad


def max_pool2d_grad(
    x: np.ndarray, dy: np.ndarray, pool: Window, strides: Window, pads: Window
) -> np.ndarray:
    """Gradient of :func:`max_pool` of an NHWC ``x``: each ``dy`` goes to its window's first max."""
    x = np.ascontiguousarray(x)
    n, h, w, c = x.shape
    dx = np.empty_like(x)
    xr, dxr = x.reshape(n, h * w, c), dx.reshape(n, h * w, c)
    _max_pool2d_grad(xr, np.ascontiguousarray(dy), *pool, *strides, *pads, w, dxr)
    return dx


def max_pool3d_grad(
    x: np.ndarray, y: np.ndarray, dy: np.ndarray, pool: Window, strides: Window, pads: Window
) -> np.ndarray:
    """Gradient of :func:`max_pool` of an NDHWC ``x`` (``y`` its output): every tie of a window's
    maximum receives the window's ``dy``."""
    x = np.ascontiguousarray(x)
    dx = np.empty_like(x)
    y, dy = np.ascontiguousarray(y), np.ascontiguousarray(dy)
    _pool_grad(x, y, dy, *_geometry(pool, strides, pads), True, False, dx)
    return dx


def global_avg_pool2d(x: np.ndarray) -> np.ndarray:
    """Mean over H and W of NHWC ``x``; returns ``(N, C)``."""
    x = np.ascontiguousarray(x)
    n, h, w, c = x.shape
    out = np.empty((n, c), dtype=x.dtype)
    # Sums in float64 (reduce's kernel), so large images lose no precision in float32.
    _sum3(x.reshape(n, h * w, c), 1.0 / max(h * w, 1), out)
    return out


def global_avg_pool2d_grad(dy: np.ndarray, input_hw: Window) -> np.ndarray:
    """Gradient of :func:`global_avg_pool2d`: ``dy / (H*W)`` spread over every pixel."""
    dy = np.ascontiguousarray(dy)
    n, c = dy.shape
    h, w = input_hw
    dx = np.empty((n, h, w, c), dtype=dy.dtype)
    _broadcast3(dy, 1.0 / max(h * w, 1), dx.reshape(n, h * w, c))
    return dx
