"""Depthwise 2-D convolution kernels (NHWC activations, filters ``(Kh, Kw, C, M)``): forward and
both backward products, as ``tf.nn.depthwise_conv2d`` defines them.

Output channel ``c·M + m`` is input channel ``c`` correlated with filter ``[:, :, c, m]``; channels
never mix, so there is no GEMM to hand to BLAS: each kernel is a direct loop over output pixels
and taps whose innermost loop runs over the contiguous channel axis (Numba vectorises it).

Geometry arguments shared by the wrappers (as in :mod:`ipusim.kernels.conv`):
    strides: ``(sh, sw)`` in input pixels.
    dilation: ``(dh, dw)``; tap ``k`` reads input pixel ``o*s - pad + k*d``.
    pads: ``(pad_top, pad_left)``, zero padding before the first input row / column.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel


@kernel
def _depthwise(x, w, y, sh, sw, dh, dw, pt, pl, mode):
    # One loop over every (output pixel, tap) pair that reads a real input pixel, for the three
    # products (the callers zero the array written): mode 0 the forward, y += x ⊛ w; mode 1 its
    # adjoint w.r.t. the input, x += dy·w (y holds dy); mode 2 the filter gradient, w += x·dy
    # (w is the float64 accumulator, y holds dy).
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    ho, wo = y.shape[1], y.shape[2]
    for b in range(n):
        for oh in range(ho):
            for ow in range(wo):
                g = y[b, oh, ow]
                for i in range(kh):
                    ih = oh * sh - pt + i * dh
                    if ih < 0 or ih >= h:
                        continue
                    for j in range(kw):
                        iw = ow * sw - pl + j * dw
                        if iw < 0 or iw >= wd:
                            continue
                        xp = x[b, ih, iw]
                        wij = w[i, j]
                        if mode == 0:
                            for ch in range(c):
                                v = xp[ch]
                                for k in range(m):
                                    g[ch * m + k] += v * wij[ch, k]
                        elif mode == 1:
                            for ch in range(c):
                                acc = xp[ch]
                                for k in range(m):
                                    acc += g[ch * m + k] * wij[ch, k]
                                xp[ch] = acc
                        else:
                            for ch in range(c):
                                v = xp[ch]
                                for k in range(m):
                                    wij[ch, k] += v * g[ch * m + k]


def depthwise_conv2d(
    x: np.ndarray,
    filters: np.ndarray,
    out_hw: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
) -> np.ndarray:
    """Depthwise convolution of NHWC ``x``; returns ``(N, Ho, Wo, C*M)``.

    Args:
        x: input, ``(N, H, W, C)``.
        filters: ``(Kh, Kw, C, M)`` (M = depth multiplier), same dtype as ``x``.
        out_hw: ``(Ho, Wo)``, from the op's shape inference.
        strides, dilation, pads: see the module docstring.
    """
    x = np.ascontiguousarray(x)
    filters = np.ascontiguousarray(filters, dtype=x.dtype)
    n, _, _, c = x.shape
    m = filters.shape[3]
    out = np.zeros((n, out_hw[0], out_hw[1], c * m), dtype=x.dtype)
    if out.size and filters.size and x.size:
        _depthwise(x, filters, out, *strides, *dilation, *pads, 0)
    return out


def depthwise_conv2d_backprop_input(
    dy: np.ndarray,
    filters: np.ndarray,
    input_hwc: tuple[int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
) -> np.ndarray:
    """Gradient of :func:`depthwise_conv2d` w.r.t. its input, ``(N, H, W, C)``.

    Args:
        dy: ``(N, Ho, Wo, C*M)`` gradient of the output.
        filters: ``(Kh, Kw, C, M)``.
        input_hwc: ``(H, W, C)`` of the forward input.
        strides, dilation, pads: as in the forward convolution.
    """
    dy = np.ascontiguousarray(dy)
    filters = np.ascontiguousarray(filters, dtype=dy.dtype)
    dx = np.zeros((dy.shape[0], *input_hwc), dtype=dy.dtype)
    if dy.size and dx.size and filters.size:
        _depthwise(dx, filters, dy, *strides, *dilation, *pads, 1)
    return dx


def depthwise_conv2d_backprop_filter(
    x: np.ndarray,
    dy: np.ndarray,
    filter_shape: tuple[int, int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
) -> np.ndarray:
    """Gradient of :func:`depthwise_conv2d` w.r.t. its filters, ``(Kh, Kw, C, M)``.

    Sums over the batch and every output pixel are accumulated in float64, then cast to the
    input's dtype.

    Args:
        x: ``(N, H, W, C)`` forward input.
        dy: ``(N, Ho, Wo, C*M)`` gradient of the output.
        filter_shape: ``(Kh, Kw, C, M)``.
        strides, dilation, pads: as in the forward convolution.
    """
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy, dtype=x.dtype)
    acc = np.zeros(tuple(int(d) for d in filter_shape), dtype=np.float64)
    if x.size and dy.size and acc.size:
        _depthwise(x, acc, dy, *strides, *dilation, *pads, 2)
    return acc.astype(x.dtype)
