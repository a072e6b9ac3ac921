"""2-D convolution kernels (NHWC activations, HWIO filters): forward and both backward products.

Every product is an im2col / col2im data-movement step in Numba and one GEMM, which the thin
wrapper hands to NumPy's BLAS (see ``ipusim.kernels.dense``: one BLAS thread pool for every
product, and the fastest one on these machines). The column matrix has one row per output pixel and one column per
filter tap ``(kh, kw, cin)``, in that order, so a HWIO filter reshaped to ``(Kh*Kw*Cin, Cout)`` is
the right-hand GEMM operand as stored, and the GEMM result ``(N*Ho*Wo, Cout)`` is already NHWC.

The batch is processed in chunks so the column matrix never exceeds :data:`COLS_BUDGET_BYTES`;
the MNIST-sized convolutions fit in one chunk.

Every wrapper takes an optional ``product(a, b, out, accumulate)`` that replaces the float32
GEMM: half-precision convolutions pass :meth:`ipusim.kernels.amp.AmpProducts.product`, which
rounds partial sums as the AMP unit does (``out`` then holds partial sums, not final values).

Geometry arguments shared by the wrappers:
    strides: ``(sh, sw)`` in input pixels.
    dilation: ``(dh, dw)``; tap ``k`` reads input pixel ``o*s - pad + k*d``.
    pads: ``(pad_top, pad_left)``, zero padding before the first input row / column.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ipusim._jit import kernel

#: Upper bound on the im2col buffer (bytes); larger batches are processed in chunks.
COLS_BUDGET_BYTES = 64 * 1024 * 1024

#: ``product(a, b, out, accumulate)``: ``out = a @ b`` (``+=`` when accumulating).
Product = Callable[[np.ndarray, np.ndarray, np.ndarray, bool], None]


@kernel
def _move(xs, cs, count, add_back):
    # One run of ``count`` values: x -> column entries, or (``add_back``) column entries added
    # back into x. Plain range counters let Numba drop wrap-around checks and vectorise (×6
    # measured).
    if add_back:
        for t in range(count):
            xs[t] += cs[t]
    else:
        for t in range(count):
            cs[t] = xs[t]


@kernel
def _im2col(x3, n0, nb, kh, kw, sh, sw, dh, dw, pt, pl, ho, wo, cols, add_back=False):
    # x3: (N, H, W*C) view of an NHWC input; cols: rows (n, oh, ow) for images n0..n0+nb-1,
    # columns (i, j, c). Channel runs are contiguous in both arrays; when a kernel row lies fully
    # inside the image with dilation 1, the whole (j, c) run of Kw*C values is one contiguous copy.
    # Copies go through 1-D slice views. ``add_back``: the adjoint (col2im), which scatter-adds
    # every column entry back to the pixel of x3 (then dx, zeroed by the caller) it was read from;
    # entries that came from padding are dropped, where the forward writes zeros.
    h = x3.shape[1]
    c = cols.shape[1] // (kh * kw)
    w = x3.shape[2] // max(c, 1)
    kwc = kw * c
    for n in range(nb):
        for oh in range(ho):
            ih0 = oh * sh - pt
            for ow in range(wo):
                crow = cols[(n * ho + oh) * wo + ow]
                iw0 = ow * sw - pl
                inside_w = iw0 >= 0 and iw0 + (kw - 1) * dw < w
                for i in range(kh):
                    ih = ih0 + i * dh
                    ctap = crow[i * kwc : (i + 1) * kwc]
                    if ih < 0 or ih >= h:
                        if not add_back:
                            ctap[:] = 0
                        continue
                    xrow = x3[n0 + n, ih]
                    if inside_w and dw == 1:
                        _move(xrow[iw0 * c : iw0 * c + kwc], ctap, kwc, add_back)
                        continue
                    for j in range(kw):
                        iw = iw0 + j * dw
                        if iw >= 0 and iw < w:
                            _move(
                                xrow[iw * c : (iw + 1) * c], ctap[j * c : (j + 1) * c], c, add_back
                            )
                        elif not add_back:
                            ctap[j * c : (j + 1) * c] = 0


def _chunk(n: int, rows_per_image: int, cols_per_row: int, itemsize: int) -> int:
    """Images per im2col chunk so the column buffer stays within :data:`COLS_BUDGET_BYTES`."""
    per_image = max(rows_per_image * cols_per_row * itemsize, 1)
    return max(1, min(n, COLS_BUDGET_BYTES // per_image))


def _gemm(
    a: np.ndarray, b: np.ndarray, out: np.ndarray, accumulate: bool, product: Product | None
) -> None:
    """``out = a @ b`` (``+=`` when accumulating) by ``product``, or NumPy's float32 GEMM."""
    if product is not None:
        product(a, b, out, accumulate)
    elif accumulate:
        out += a @ b
    else:
        np.matmul(a, b, out=out)


def conv2d(
    x: np.ndarray,
    filters: np.ndarray,
    out_hw: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
    product: Product | None = None,
) -> np.ndarray:
    """Convolution of NHWC ``x`` with HWIO ``filters``; returns ``(N, Ho, Wo, Cout)``.

    Args:
        x: input, ``(N, H, W, Cin)``.
        filters: ``(Kh, Kw, Cin, Cout)``, same dtype as ``x``.
        out_hw: ``(Ho, Wo)``, from the op's shape inference.
        strides, dilation, pads: see the module docstring.
        product: replaces the float32 GEMM (see the module docstring).
    """
    x = np.ascontiguousarray(x)
    n, h, w, c = x.shape
    kh, kw, _, cout = filters.shape
    ho, wo = out_hw
    w2 = np.ascontiguousarray(filters).reshape(kh * kw * c, cout)
    out = np.empty((n, ho, wo, cout), dtype=x.dtype)
    if out.size == 0 or w2.size == 0:
        out[...] = 0
        return out
    chunk = _chunk(n, ho * wo, kh * kw * c, x.itemsize)
    x3, out2 = x.reshape(n, h, w * c), out.reshape(n * ho * wo, cout)
    cols = np.empty((chunk * ho * wo, w2.shape[0]), dtype=x.dtype)
    geometry = (kh, kw, strides[0], strides[1], dilation[0], dilation[1], pads[0], pads[1], ho, wo)
    for n0 in range(0, n, chunk):
        rows = min(chunk, n - n0) * ho * wo
        _im2col(x3, n0, min(chunk, n - n0), *geometry, cols)
        _gemm(cols[:rows], w2, out2[n0 * ho * wo : n0 * ho * wo + rows], False, product)
    return out


def conv2d_backprop_input(
    dy: np.ndarray,
    filters: np.ndarray,
    input_hwc: tuple[int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
    product: Product | None = None,
) -> np.ndarray:
    """Gradient of :func:`conv2d` w.r.t. its input: ``col2im(dy @ W2ᵀ)``, ``(N, H, W, Cin)``.

    Args:
        dy: ``(N, Ho, Wo, Cout)`` gradient of the convolution output.
        filters: ``(Kh, Kw, Cin, Cout)``.
        input_hwc: ``(H, W, Cin)`` of the forward input.
        strides, dilation, pads: as in the forward convolution.
        product: replaces the float32 GEMM (see the module docstring); the col2im scatter-add
            that follows is float32.
    """
    dy = np.ascontiguousarray(dy)
    n, ho, wo, cout = dy.shape
    h, w, c = input_hwc
    kh, kw = filters.shape[:2]
    w2 = np.ascontiguousarray(filters).reshape(kh * kw * c, cout)
    dx = np.empty((n, h, w, c), dtype=dy.dtype)
    if dy.size == 0 or dx.size == 0 or w2.size == 0:
        dx[...] = 0
        return dx
    chunk = _chunk(n, ho * wo, kh * kw * c, dy.itemsize)
    dy2, dx3 = dy.reshape(n * ho * wo, cout), dx.reshape(n, h, w * c)
    dx3[...] = 0
    cols = np.empty((chunk * ho * wo, w2.shape[0]), dtype=dy.dtype)
    geometry = (kh, kw, strides[0], strides[1], dilation[0], dilation[1], pads[0], pads[1], ho, wo)
    for n0 in range(0, n, chunk):
        rows = min(chunk, n - n0) * ho * wo
        _gemm(dy2[n0 * ho * wo : n0 * ho * wo + rows], w2.T, cols[:rows], False, product)
        _im2col(dx3, n0, min(chunk, n - n0), *geometry, cols, True)
    return dx


def conv2d_backprop_filter(
    x: np.ndarray,
    dy: np.ndarray,
    kernel_hw: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int],
    product: Product | None = None,
) -> np.ndarray:
    """Gradient of :func:`conv2d` w.r.t. its filters: ``im2col(x)ᵀ @ dy``, ``(Kh, Kw, Cin, Cout)``.

    Args:
        x: ``(N, H, W, Cin)`` forward input.
        dy: ``(N, Ho, Wo, Cout)`` gradient of the convolution output.
        kernel_hw: ``(Kh, Kw)``.
        strides, dilation, pads: as in the forward convolution.
        product: replaces the float32 GEMM (see the module docstring); batch chunks accumulate
            into the same partial sums.
    """
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    n, h, w, c = x.shape
    _, ho, wo, cout = dy.shape
    kh, kw = kernel_hw
    dw2 = np.empty((kh * kw * c, cout), dtype=x.dtype)
    if n * ho * wo == 0 or dw2.size == 0:
        dw2[...] = 0
        return dw2.reshape(kh, kw, c, cout)
    chunk = _chunk(n, ho * wo, kh * kw * c, x.itemsize)
    x3, dy2 = x.reshape(n, h, w * c), dy.reshape(n * ho * wo, cout)
    cols = np.empty((chunk * ho * wo, dw2.shape[0]), dtype=x.dtype)
    geometry = (kh, kw, strides[0], strides[1], dilation[0], dilation[1], pads[0], pads[1], ho, wo)
    for n0 in range(0, n, chunk):
        rows = min(chunk, n - n0) * ho * wo
        _im2col(x3, n0, min(chunk, n - n0), *geometry, cols)
        _gemm(cols[:rows].T, dy2[n0 * ho * wo : n0 * ho * wo + rows], dw2, n0 > 0, product)
    return dw2.reshape(kh, kw, c, cout)
