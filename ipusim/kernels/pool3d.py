"""3-D pooling kernels on NDHWC volumes: max and average pooling and their gradients.

Windows are clipped to the volume (padding never contributes: max pooling ignores it, average
pooling divides by the number of real voxels, as TensorFlow does). The max-pooling gradient
sends each ``dy`` to every voxel of its window equal to the window's maximum, as TensorFlow's
``MaxPool3DGrad`` and popnn's ``MaxPoolingGrad`` vertex do (``fwdActsIn == fwdActsOut``).

Geometry arguments: ``pool``, ``strides`` and ``pads`` (padding before the first plane, row and
column) are ``(depth, height, width)`` triples.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel

Triple = tuple[int, int, int]


@kernel
def _window(o, size, k, s, p):
    start = o * s - p
    return max(start, 0), min(start + k, size)


@kernel
def _max_pool3d(x, pool, strides, pads, out):
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
                        o[ch] = -np.inf
                    for i in range(d0, d1):
                        for j in range(h0, h1):
                            for k in range(w0, w1):
                                xr = x[n, i, j, k]
                                for ch in range(c):
                                    o[ch] = max(o[ch], xr[ch])


@kernel
def _max_pool3d_grad(x, y, dy, pool, strides, pads, dx):
    n_, d, h, w, c = x.shape
    dx[:] = 0
    for n in range(n_):
        for od in range(dy.shape[1]):
            d0, d1 = _window(od, d, pool[0], strides[0], pads[0])
            for oh in range(dy.shape[2]):
                h0, h1 = _window(oh, h, pool[1], strides[1], pads[1])
                for ow in range(dy.shape[3]):
                    w0, w1 = _window(ow, w, pool[2], strides[2], pads[2])
                    yr, gr = y[n, od, oh, ow], dy[n, od, oh, ow]
                    for i in range(d0, d1):
                        for j in range(h0, h1):
                            for k in range(w0, w1):
                                xr, dr = x[n, i, j, k], dx[n, i, j, k]
                                for ch in range(c):
                                    if xr[ch] == yr[ch]:
                                        dr[ch] += gr[ch]


@kernel
def _avg_pool3d(x, pool, strides, pads, out):
    n_, d, h, w, c = x.shape
    for n in range(n_):
        for od in range(out.shape[1]):
            d0, d1 = _window(od, d, pool[0], strides[0], pads[0])
            for oh in range(out.shape[2]):
                h0, h1 = _window(oh, h, pool[1], strides[1], pads[1])
                for ow in range(out.shape[3]):
                    w0, w1 = _window(ow, w, pool[2], strides[2], pads[2])
                    count = (d1 - d0) * (h1 - h0) * (w1 - w0)
                    o = out[n, od, oh, ow]
                    for ch in range(c):
                        o[ch] = 0
                    for i in range(d0, d1):
                        for j in range(h0, h1):
                            for k in range(w0, w1):
                                xr = x[n, i, j, k]
                                for ch in range(c):
                                    o[ch] += xr[ch]
                    for ch in range(c):
                        o[ch] /= max(count, 1)


@kernel
def _avg_pool3d_grad(dy, pool, strides, pads, dx):
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
                    gr = dy[n, od, oh, ow]
                    for i in range(d0, d1):
                        for j in range(h0, h1):
                            for k in range(w0, w1):
                                dr = dx[n, i, j, k]
                                for ch in range(c):
                                    dr[ch] += gr[ch] / count


def _triples(*values: Triple) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(v, dtype=np.int64) for v in values)


def _pool(
    pool_kernel, x: np.ndarray, out_dhw: Triple, pool: Triple, strides: Triple, pads: Triple
) -> np.ndarray:
    """Run a forward pooling kernel on ``x`` (N, D, H, W, C) into a new ``(N, Do, Ho, Wo, C)``."""
    x = np.ascontiguousarray(x)
    out = np.empty((x.shape[0], *out_dhw, x.shape[4]), dtype=x.dtype)
    pool_kernel(x, *_triples(pool, strides, pads), out)
    return out


def max_pool3d(
    x: np.ndarray, out_dhw: Triple, pool: Triple, strides: Triple, pads: Triple
) -> np.ndarray:
    """Max pooling of ``x`` (N, D, H, W, C); returns ``(N, Do, Ho, Wo, C)``."""
    return _pool(_max_pool3d, x, out_dhw, pool, strides, pads)


def max_pool3d_grad(
    x: np.ndarray, y: np.ndarray, dy: np.ndarray, pool: Triple, strides: Triple, pads: Triple
) -> np.ndarray:
    """Gradient of :func:`max_pool3d` w.r.t. ``x`` (``y`` its output): every tie of a window's
    maximum receives the window's ``dy``."""
    x = np.ascontiguousarray(x)
    dx = np.empty_like(x)
    _max_pool3d_grad(
        x, np.ascontiguousarray(y), np.ascontiguousarray(dy), *_triples(pool, strides, pads), dx
    )
    return dx


def avg_pool3d(
    x: np.ndarray, out_dhw: Triple, pool: Triple, strides: Triple, pads: Triple
) -> np.ndarray:
    """Average pooling of ``x`` (N, D, H, W, C) over the real voxels of each window."""
    return _pool(_avg_pool3d, x, out_dhw, pool, strides, pads)


def avg_pool3d_grad(
    dy: np.ndarray, input_dhw: Triple, pool: Triple, strides: Triple, pads: Triple
) -> np.ndarray:
    """Gradient of :func:`avg_pool3d` w.r.t. its input of spatial size ``input_dhw``."""
    dy = np.ascontiguousarray(dy)
    dx = np.empty((dy.shape[0], *input_dhw, dy.shape[4]), dtype=dy.dtype)
    _avg_pool3d_grad(dy, *_triples(pool, strides, pads), dx)
    return dx
