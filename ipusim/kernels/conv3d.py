"""3-D convolution kernels (NDHWC activations, DHWIO filters): forward and both backward products.

A 3-D convolution is a 2-D one over the (height, width) planes whose input channels are the
``Kd`` depth taps times the channels: for output plane ``od``, tap ``i`` reads input plane
``od·sd − pad + i·dd`` (zeros outside the volume). The wrappers gather those planes into an
``(N·Do, H, W, Kd·C)`` tensor (filters viewed as ``(Kh, Kw, Kd·C, F)``) and run the 2-D kernels of
:mod:`ipusim.kernels.conv` on it: one im2col and one GEMM per pass, so a half-precision product
rounds its partial sums over every tap of the box as the AMP does.

Geometry: ``strides``, ``dilation`` and ``pads`` are ``(depth, height, width)`` triples;
``pads`` are the zero planes / rows / columns before the first one.
"""

from __future__ import annotations

import numpy as np

from ipusim.kernels import conv as kc

Triple = tuple[int, int, int]


def _plane_index(d: int, do: int, kd: int, sd: int, dd: int, pd: int) -> np.ndarray:
    """``(Do, Kd)`` input plane of every output plane and depth tap; ``d`` (one past the last
    plane, a zero plane the gather appends) where the tap reads padding."""
    index = np.arange(do)[:, None] * sd - pd + np.arange(kd)[None, :] * dd
    return np.where((index >= 0) & (index < d), index, d)


def _gather(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``(N·Do, H, W, Kd·C)`` planes of ``x`` (N, D, H, W, C) that every output plane reads."""
    n, _, h, w, c = x.shape
    do, kd = index.shape
    padded = np.concatenate([x, np.zeros((n, 1, h, w, c), x.dtype)], axis=1)
    planes = padded[:, index]  # (N, Do, Kd, H, W, C)
    return np.ascontiguousarray(planes.transpose(0, 1, 3, 4, 2, 5)).reshape(n * do, h, w, kd * c)


def _filters_2d(filters: np.ndarray) -> np.ndarray:
    """``(Kd, Kh, Kw, C, F)`` as ``(Kh, Kw, Kd·C, F)`` (depth taps next to the channels)."""
    kd, kh, kw, c, f = filters.shape
    return np.ascontiguousarray(filters.transpose(1, 2, 0, 3, 4)).reshape(kh, kw, kd * c, f)


def conv3d(
    x: np.ndarray,
    filters: np.ndarray,
    out_dhw: Triple,
    strides: Triple,
    dilation: Triple,
    pads: Triple,
    product: kc.Product | None = None,
) -> np.ndarray:
    """Convolution of ``x`` (N, D, H, W, C) with ``filters`` (Kd, Kh, Kw, C, F):
    ``(N, Do, Ho, Wo, F)``; ``product`` replaces the float32 GEMM (see :mod:`ipusim.kernels.conv`).
    """
    n, d = x.shape[:2]
    kd = filters.shape[0]
    do, ho, wo = out_dhw
    index = _plane_index(d, do, kd, strides[0], dilation[0], pads[0])
    y = kc.conv2d(
        _gather(x, index),
        _filters_2d(filters),
        (ho, wo),
        strides[1:],
        dilation[1:],
        pads[1:],
        product,
    )
    return y.reshape(n, do, ho, wo, filters.shape[-1])


def conv3d_backprop_input(
    dy: np.ndarray,
    filters: np.ndarray,
    input_dhwc: tuple[int, int, int, int],
    strides: Triple,
    dilation: Triple,
    pads: Triple,
    product: kc.Product | None = None,
) -> np.ndarray:
    """Gradient of :func:`conv3d` w.r.t. its input, ``(N, D, H, W, C)``: the 2-D input gradient
    of the gathered planes, scatter-added back to the planes they came from (float32 sums)."""
    n, do, ho, wo, f = dy.shape
    d, h, w, c = input_dhwc
    kd = filters.shape[0]
    index = _plane_index(d, do, kd, strides[0], dilation[0], pads[0])
    cols = kc.conv2d_backprop_input(
        np.ascontiguousarray(dy).reshape(n * do, ho, wo, f),
        _filters_2d(filters),
        (h, w, kd * c),
        strides[1:],
        dilation[1:],
        pads[1:],
        product,
    ).reshape(n, do, h, w, kd, c)
    dx = np.zeros((n, d + 1, h, w, c), dy.dtype)
    for i in range(kd):  # within one tap the planes read are distinct: += is a scatter-add
        dx[:, index[:, i]] += cols[:, :, :, :, i]
    return dx[:, :d]


def conv3d_backprop_filter(
    x: np.ndarray,
    dy: np.ndarray,
    kernel_dhw: Triple,
    strides: Triple,
    dilation: Triple,
    pads: Triple,
    product: kc.Product | None = None,
) -> np.ndarray:
    """Gradient of :func:`conv3d` w.r.t. its filters, ``(Kd, Kh, Kw, C, F)``."""
    n, d, _, _, c = x.shape
    _, do, ho, wo, f = dy.shape
    kd, kh, kw = kernel_dhw
    index = _plane_index(d, do, kd, strides[0], dilation[0], pads[0])
    dw = kc.conv2d_backprop_filter(
        _gather(x, index),
        np.ascontiguousarray(dy).reshape(n * do, ho, wo, f),
        (kh, kw),
        strides[1:],
        dilation[1:],
        pads[1:],
        product,
    )
    return np.ascontiguousarray(dw.reshape(kh, kw, kd, c, f).transpose(2, 0, 1, 3, 4))
