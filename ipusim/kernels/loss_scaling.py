"""Automatic loss scaling kernels: the overflow histogram of float16 gradients and the unscale.

The histogram is popops' ``histogram`` with one level (``popops/GatherStatistics.hpp``: bin 0
counts ``x < level``, bin 1 ``x >= level``) on ``|g|`` cast to float32, as
``statistics_ops.histogram_update(..., absolute_of_input=True)`` in Graphcore's Keras
``ALSOptimizer``. A NaN compares false with the level and is counted in bin 1, with the
overflows (E: the vertex tests ``x < level`` and takes the rest as the upper bin).
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel

#: ALS' level: ``float16.max - 2 * K.epsilon()`` as a float32 constant, which rounds to 65504 (S:
#: graphcore/keras ``keras/ipu/optimizers/als_optimizer.py``, ``_get_updated_hist``).
OVERFLOW_LEVEL = np.float32(np.finfo(np.float16).max - 2 * 1e-7)

#: Operations per gradient element: absolute value, compare, count (popops' histogram vertex)
#: and the unscale (E), added to the wrapped optimizer's update cost.
ALS_FLOPS_PER_ELEMENT = 4


@kernel
def _count_below(x, level):
    below = 0
    for i in range(x.size):
        if abs(x[i]) < level:
            below += 1
    return below


@kernel
def _divide(x, divisor):
    for i in range(x.size):
        x[i] = x[i] / divisor


def overflow_histogram(grad: np.ndarray) -> tuple[int, int]:
    """``(ok, overflowed)``: elements of ``grad`` with ``|g| < 65504`` and the rest.

    Args:
        grad: a float16 gradient (any shape); it is widened to float32 as the SDK casts it.
    """
    wide = np.ascontiguousarray(grad, dtype=np.float32).reshape(-1)
    below = int(_count_below(wide, OVERFLOW_LEVEL))
    return below, wide.size - below


def unscale(grad: np.ndarray, factor: float) -> np.ndarray:
    """A new array ``grad / factor`` with the factor cast to the gradient's dtype.

    float16 gradients are divided in float32 and rounded once to float16, which equals the
    half-precision division (the float32 quotient of two half values is exact for the power-of-
    two factors ALS uses).
    """
    array = np.asarray(grad)
    if array.dtype == np.float16:
        wide = array.astype(np.float32).reshape(-1)
        _divide(wide, np.float32(np.float16(factor)))
        return wide.astype(np.float16).reshape(array.shape)
    out = np.array(array, dtype=array.dtype, copy=True, order="C")
    _divide(out.reshape(-1), out.dtype.type(factor))
    return out


def next_factor_tf25(
    hist: np.ndarray,
    factor: np.float32,
    ratio_threshold: float,
    increase_factor: float,
    decrease_factor: float,
    max_factor: float,
) -> np.float32:
    """IPU TensorFlow 2.5's loss-scaling-factor step (its two ALS optimizers share it).

    Multiplies ``factor`` by ``decrease_factor`` when the overflowed fraction ``hist[1] /
    sum(hist)`` exceeds ``ratio_threshold``, else by ``increase_factor``; keeps ``factor`` when
    the result is not finite, not below ``max_factor`` or below 1. Comparisons in float32.

    Args:
        hist: the float32 two-bin histogram ``(ok, overflowed)``.
        factor: the current loss scaling factor.
        ratio_threshold: overflowed fraction above which the factor decreases.
        increase_factor, decrease_factor: the multipliers.
        max_factor: the factor stays below it.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = hist[1] / np.sum(hist)
    up = not ratio > np.float32(ratio_threshold)
    new = factor * np.float32(increase_factor if up else decrease_factor)
    if not np.isfinite(new) or not new < np.float32(max_factor):
        return factor
    return new if new >= 1.0 else factor
