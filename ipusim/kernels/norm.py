"""Normalisation kernels: batch normalisation (statistics, apply, backward) and layer normalisation.

Batch norm works on a 3-D view ``(outer, C, inner)`` of the input, where ``C`` is the normalised
(channel) axis; channels-last inputs (``inner == 1``, the common case) go to 2-D ``*_last``
kernels whose innermost loop runs over channels, which vectorises. Layer norm works on a 2-D view
``(rows, cols)`` whose ``cols`` are the normalised trailing axes. Every loop walks memory in
order; sums are accumulated in float64. The two-pass statistics (TensorFlow's CPU kernel,
``tf.nn.moments``) lose nothing to cancellation; the one-pass ones (PopLibs' default, the IPU's)
round the mean and the mean of squares to float32 first and lose what the IPU loses.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ipusim._jit import kernel


@kernel
def _bn_sums_last(x2, s, p):
    # Per-channel sum and sum of squares over the rows (one pass, float64).
    rows, c = x2.shape
    for r in range(rows):
        xr = x2[r]
        for ch in range(c):
            v = np.float64(xr[ch])
            s[ch] += v
            p[ch] += v * v


@kernel
def _bn_grad(dy3, x3, gamma, mean, var, eps, training, dx3, dgamma, dbeta):
    # dbeta = Σ dy, dgamma = Σ dy·x̂. With batch statistics (training) the mean and variance depend
    # on x:  dx = γ·r/M · (M·dy − Σdy − x̂·Σ(dy·x̂)); with fixed statistics dx = γ·r·dy.
    outer, c, inner = x3.shape
    count = max(outer * inner, 1)
    rstd = np.empty(c, dtype=np.float64)
    sdy = np.zeros(c, dtype=np.float64)
    sdyx = np.zeros(c, dtype=np.float64)
    for ch in range(c):
        rstd[ch] = 1.0 / np.sqrt(np.float64(var[ch]) + eps)
    for o in range(outer):
        for ch in range(c):
            m, r = np.float64(mean[ch]), rstd[ch]
            for i in range(inner):
                g = np.float64(dy3[o, ch, i])
                sdy[ch] += g
                sdyx[ch] += g * (x3[o, ch, i] - m) * r
    for ch in range(c):
        dgamma[ch] = sdyx[ch]
        dbeta[ch] = sdy[ch]
    for o in range(outer):
        for ch in range(c):
            m, r = np.float64(mean[ch]), rstd[ch]
            k = gamma[ch] * r
            if training:
                a, b = sdy[ch] / count, sdyx[ch] / count
                for i in range(inner):
                    xhat = (x3[o, ch, i] - m) * r
                    dx3[o, ch, i] = k * (dy3[o, ch, i] - a - xhat * b)
            else:
                for i in range(inner):
                    dx3[o, ch, i] = k * dy3[o, ch, i]


@kernel
def _bn_stats_last(x2, mean, var):
    # Per-channel mean and biased variance over the rows (two passes), with the channel loop
    # innermost, so the loop is elementwise over channels and vectorises.
    rows, c = x2.shape
    count = max(rows, 1)
    s = np.zeros(c, dtype=np.float64)
    for r in range(rows):
        xr = x2[r]
        for ch in range(c):
            s[ch] += xr[ch]
    for ch in range(c):
        s[ch] /= count
    q = np.zeros(c, dtype=np.float64)
    for r in range(rows):
        xr = x2[r]
        for ch in range(c):
            d = xr[ch] - s[ch]
            q[ch] += d * d
    for ch in range(c):
        mean[ch] = s[ch]
        var[ch] = q[ch] / count


@kernel
def _bn_apply_last(x2, mean, var, gamma, beta, eps, y2):
    # y = (x - mean) * gamma / sqrt(var + eps) + beta, folded into one scale and shift per channel.
    rows, c = x2.shape
    scale = np.empty(c, dtype=np.float64)
    shift = np.empty(c, dtype=np.float64)
    for ch in range(c):
        scale[ch] = gamma[ch] / np.sqrt(np.float64(var[ch]) + eps)
        shift[ch] = beta[ch] - mean[ch] * scale[ch]
    for r in range(rows):
        xr = x2[r]
        yr = y2[r]
        for ch in range(c):
            yr[ch] = xr[ch] * scale[ch] + shift[ch]


@kernel
def _bn_grad_last(dy2, x2, gamma, mean, var, eps, training, dx2, dgamma, dbeta):
    # The channels-last form of _bn_grad (same formulas).
    rows, c = x2.shape
    count = max(rows, 1)
    m = np.empty(c, dtype=np.float64)
    rstd = np.empty(c, dtype=np.float64)
    for ch in range(c):
        m[ch] = mean[ch]
        rstd[ch] = 1.0 / np.sqrt(np.float64(var[ch]) + eps)
    sdy = np.zeros(c, dtype=np.float64)
    sdyx = np.zeros(c, dtype=np.float64)
    for r in range(rows):
        xr = x2[r]
        gr = dy2[r]
        for ch in range(c):
            g = np.float64(gr[ch])
            sdy[ch] += g
            sdyx[ch] += g * (xr[ch] - m[ch]) * rstd[ch]
    k = np.empty(c, dtype=np.float64)
    a = np.empty(c, dtype=np.float64)
    b = np.empty(c, dtype=np.float64)
    for ch in range(c):
        dgamma[ch] = sdyx[ch]
        dbeta[ch] = sdy[ch]
        k[ch] = gamma[ch] * rstd[ch]
        a[ch] = sdy[ch] / count if training else 0.0
        b[ch] = sdyx[ch] / count * rstd[ch] if training else 0.0
    for r in range(rows):
        xr = x2[r]
        gr = dy2[r]
        dr = dx2[r]
        for ch in range(c):
            dr[ch] = k[ch] * (gr[ch] - a[ch] - (xr[ch] - m[ch]) * b[ch])


@kernel
def _ln_row_stats(row, inv_n, one_pass):
    # (mean, biased variance) of one row: two passes in float64, or PopLibs' one pass (the mean
    # and the power rounded to float32, power − mean² in float32, clamped at 0).
    s = 0.0
    if one_pass:
        p = 0.0
        for j in range(row.shape[0]):
            v = np.float64(row[j])
            s += v
            p += v * v
        m32 = np.float32(s * inv_n)
        var32 = np.float32(p * inv_n) - m32 * m32
        if var32 < 0:
            var32 = np.float32(0.0)
        return np.float64(m32), np.float64(var32)
    for j in range(row.shape[0]):
        s += row[j]
    m = s * inv_n
    q = 0.0
    for j in range(row.shape[0]):
        d = row[j] - m
        q += d * d
    return m, q * inv_n


@kernel
def _ln_fwd(x2, gamma, beta, eps, one_pass, y2):
    rows, cols = x2.shape
    inv_n = 1.0 / max(cols, 1)
    for r in range(rows):
        m, var = _ln_row_stats(x2[r], inv_n, one_pass)
        rstd = 1.0 / np.sqrt(var + eps)
        for j in range(cols):
            y2[r, j] = (x2[r, j] - m) * rstd * gamma[j] + beta[j]


@kernel
def _ln_grad(dy2, x2, gamma, eps, one_pass, dx2, dgamma, dbeta):
    # Per row, with g = dy·γ and x̂ the normalised row:  dx = r · (g − mean(g) − x̂·mean(g·x̂)).
    rows, cols = x2.shape
    inv_n = 1.0 / max(cols, 1)
    dg = np.zeros(cols, dtype=np.float64)
    db = np.zeros(cols, dtype=np.float64)
    for r in range(rows):
        m, var = _ln_row_stats(x2[r], inv_n, one_pass)
        rstd = 1.0 / np.sqrt(var + eps)
        sg = 0.0
        sgx = 0.0
        for j in range(cols):
            xhat = (x2[r, j] - m) * rstd
            g = np.float64(dy2[r, j])
            dg[j] += g * xhat
            db[j] += g
            g *= gamma[j]
            sg += g
            sgx += g * xhat
        sg *= inv_n
        sgx *= inv_n
        for j in range(cols):
            xhat = (x2[r, j] - m) * rstd
            dx2[r, j] = rstd * (dy2[r, j] * gamma[j] - sg - xhat * sgx)
    for j in range(cols):
        dgamma[j] = dg[j]
        dbeta[j] = db[j]


def _view3(x: np.ndarray, axis: int) -> np.ndarray:
    """``x`` as ``(outer, C, inner)`` around ``axis`` (a view of a contiguous array)."""
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1 :], dtype=np.int64))
    return np.ascontiguousarray(x).reshape(outer, x.shape[axis], inner)


def _rows(x3: np.ndarray) -> np.ndarray:
    """The ``(outer, C, inner)`` view ``x3`` as ``(outer·inner, C)`` rows, channels last (a view
    when ``inner == 1``, else a copy); each channel keeps its elements in their order, so sums
    over the rows add them in the order the 3-D loops would."""
    outer, c, inner = x3.shape
    return np.ascontiguousarray(x3.transpose(0, 2, 1)).reshape(outer * inner, c)


def batch_norm_stats(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and biased variance of ``x`` over every axis but ``axis`` (non-negative),
    in two passes (the mean, then the mean of the squared deviations), as TensorFlow's CPU kernel
    computes them."""
    c = x.shape[axis]
    mean = np.empty(c, dtype=x.dtype)
    var = np.empty(c, dtype=x.dtype)
    _bn_stats_last(_rows(_view3(x, axis)), mean, var)
    return mean, var


def batch_norm_sums(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-channel ``(Σx, Σx², count)`` of ``x`` over every axis but ``axis`` (non-negative); the
    sums are float64 arrays (accumulated in float64: no order of float partials loses more)."""
    c = x.shape[axis]
    s = np.zeros(c, dtype=np.float64)
    p = np.zeros(c, dtype=np.float64)
    rows = _rows(_view3(x, axis))
    _bn_sums_last(rows, s, p)
    return s, p, rows.shape[0]


def ipu_batch_norm_stats(
    x: np.ndarray,
    axis: int,
    *,
    stable: bool,
    to_half: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and biased variance of ``x`` as the IPU computes them.

    This is PopLibs' ``normStatistics`` (S: poplibs ``lib/poplin/Norms.cpp`` and the
    ``InverseStdDeviation`` codelet; graphcore/tensorflow ``popnn/norm.cc`` asks for float
    partials). The mean ``Σx / N`` is stored in the activations' type. Then:

    * ``stable=False`` (``norms.use_stable_statistics = False``, IPU TensorFlow's default): one
      pass. The power ``Σx² / N`` is stored in float (the partials type) and the variance is
      ``power − mean·mean`` in float32 arithmetic, clamped at 0 when rounding makes it negative.
      Rounding the mean and the power costs up to about ``4·2⁻²⁴·mean²``: all of the variance
      once a channel's mean is about 2,000 times its spread (about 45 times when the mean is
      half precision).
    * ``stable=True``: two passes. The deviations ``x − mean`` are stored in the activations'
      type, and the variance is the mean of their squares.

    Sums are accumulated in float64, which no order of float partials improves on.

    Args:
        x: activations, float32 (or float64, then computed in float64 throughout).
        axis: the channel axis (non-negative).
        stable: two passes instead of one.
        to_half: for half-precision activations, rounds a float32 array to the binary16 grid
            (where PopLibs stores a half result: the mean and the deviations); None for float32.
    """
    if stable and to_half is None:
        return batch_norm_stats(x, axis)
    s, p, count = batch_norm_sums(x, axis)
    count = max(count, 1)
    mean = (s / count).astype(x.dtype)
    if to_half is not None:
        mean = to_half(mean)
    if stable:
        shape = [1] * x.ndim
        shape[axis] = -1
        deviations = to_half(x - mean.reshape(shape)).astype(np.float64)
        others = tuple(a for a in range(x.ndim) if a != axis)
        var = (np.square(deviations).sum(axis=others) / count).astype(x.dtype)
        return mean, var
    power = (p / count).astype(x.dtype)
    var = power - mean * mean
    np.maximum(var, 0, out=var)
    return mean, var


def batch_norm_apply(
    x: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    epsilon: float,
    axis: int,
) -> np.ndarray:
    """``(x − mean) · γ / √(var + ε) + β`` with per-channel vectors along ``axis``."""
    x3 = _view3(x, axis)
    outer, c, inner = x3.shape
    y2 = np.empty((outer * inner, c), dtype=x.dtype)
    _bn_apply_last(_rows(x3), mean, var, gamma, beta, float(epsilon), y2)
    return np.ascontiguousarray(y2.reshape(outer, inner, c).transpose(0, 2, 1)).reshape(x.shape)


def batch_norm_grad(
    dy: np.ndarray,
    x: np.ndarray,
    gamma: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    epsilon: float,
    axis: int,
    training: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dx, dgamma, dbeta)`` of batch norm; ``training`` means mean/var are batch statistics."""
    dx = np.empty(x.shape, dtype=x.dtype)
    c = x.shape[axis]
    dgamma = np.empty(c, dtype=x.dtype)
    dbeta = np.empty(c, dtype=x.dtype)
    dy3, x3, dx3 = _view3(dy, axis), _view3(x, axis), _view3(dx, axis)
    args = (gamma, mean, var, float(epsilon), bool(training))
    if x3.shape[2] == 1:
        rows = x3.shape[0]
        _bn_grad_last(
            dy3.reshape(rows, c), x3.reshape(rows, c), *args, dx3.reshape(rows, c), dgamma, dbeta
        )
    else:
        _bn_grad(dy3, x3, *args, dx3, dgamma, dbeta)
    return dx, dgamma, dbeta


def layer_norm(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    epsilon: float,
    first_axis: int,
    one_pass: bool = False,
) -> np.ndarray:
    """Layer norm over the axes ``first_axis:`` of ``x``; ``gamma``, ``beta`` have their shape.

    ``one_pass``: each row's variance as PopLibs' one-pass ``normStatistics`` computes it (the
    mean of squares less the squared mean, in float32, clamped at 0; see
    :func:`ipu_batch_norm_stats`), for float32 ``x``; default: two passes in float64.
    """
    x = np.ascontiguousarray(x)
    cols = int(np.prod(x.shape[first_axis:], dtype=np.int64))
    x2 = x.reshape(-1, cols) if cols else x.reshape(x.size, 0)
    y = np.empty(x.shape, dtype=x.dtype)
    _ln_fwd(
        x2, gamma.reshape(-1), beta.reshape(-1), float(epsilon), bool(one_pass), y.reshape(x2.shape)
    )
    return y


def layer_norm_grad(
    dy: np.ndarray,
    x: np.ndarray,
    gamma: np.ndarray,
    epsilon: float,
    first_axis: int,
    one_pass: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dx, dgamma, dbeta)`` of :func:`layer_norm` (the same ``one_pass`` statistics)."""
    x = np.ascontiguousarray(x)
    cols = int(np.prod(x.shape[first_axis:], dtype=np.int64))
    x2 = x.reshape(-1, cols) if cols else x.reshape(x.size, 0)
    dx = np.empty(x.shape, dtype=x.dtype)
    dgamma = np.empty(gamma.shape, dtype=x.dtype)
    dbeta = np.empty(gamma.shape, dtype=x.dtype)
    _ln_grad(
        np.ascontiguousarray(dy).reshape(x2.shape),
        x2,
        gamma.reshape(-1),
        float(epsilon),
        bool(one_pass),
        dx.reshape(x2.shape),
        dgamma.reshape(-1),
        dbeta.reshape(-1),
    )
    return dx, dgamma, dbeta
