"""Counter-based random draws for ``tf.random`` ops: uniform, normal, truncated normal, integers
and categorical samples from the splitmix64 stream of :mod:`ipusim.kernels.random`.

Element ``i`` of a draw for ``(seed, step)`` is a pure function of those integers (no generator
state), so a traced function draws fresh numbers at every execution (``step``) and a rerun with
the same seed gives the same numbers. The streams are ipusim's own: the same seed does not give
TensorFlow's numbers (TensorFlow uses Philox), only the same distributions.
"""

from __future__ import annotations

import math

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.random import _stream_key, _u64, _uniform

#: Distribution name -> code of :func:`_draw`.
DIST_CODES: dict[str, int] = {"uniform": 0, "normal": 1, "truncated_normal": 2, "integers": 3}


@kernel
def _normal(key, i):
    # Box-Muller on two uniforms of the stream (elements 2i and 2i+1); 1 - u avoids log(0).
    u1 = 1.0 - _uniform(key, 2 * i)
    u2 = _uniform(key, 2 * i + 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@kernel
def _draw(seed, step, code, low, high, out):
    key = _stream_key(seed, step)
    n = out.size
    for i in range(n):
        if code == 0:
            out[i] = low + (high - low) * _uniform(key, i)
        elif code == 3:
            out[i] = math.floor(low + (high - low) * _uniform(key, i))
        else:
            z = _normal(key, i)
            if code == 2:
                # Redraw beyond two standard deviations, as tf.random.truncated_normal; each retry
                # reads a later part of the stream (offset by the output size).
                j = i
                while abs(z) > 2.0:
                    j += n
                    z = _normal(key, j)
            out[i] = low + high * z


@kernel
def _categorical(logits, seed, step, samples, out):
    key = _stream_key(seed, step)
    rows, classes = logits.shape
    for r in range(rows):
        peak = -np.inf
        for c in range(classes):
            peak = max(peak, logits[r, c])
        total = 0.0
        for c in range(classes):
            total += math.exp(logits[r, c] - peak)
        for s in range(samples):
            u = _uniform(key, r * samples + s) * total
            acc = 0.0
            pick = classes - 1
            for c in range(classes):
                acc += math.exp(logits[r, c] - peak)
                if u < acc:
                    pick = c
                    break
            out[r, s] = pick


def draw(
    shape: tuple[int, ...], dist: str, a: float, b: float, seed: int, step: int, dtype: object
) -> np.ndarray:
    """Values of ``dist`` for ``(seed, step)``: uniform / integers in ``[a, b)``, normal and
    truncated normal with mean ``a`` and standard deviation ``b``."""
    out = np.empty(shape, dtype=np.float64)
    _draw(_u64(seed), _u64(step), DIST_CODES[dist], float(a), float(b), out.reshape(-1))
    return out.astype(dtype)


def categorical(
    logits: np.ndarray, samples: int, seed: int, step: int, dtype: object
) -> np.ndarray:
    """``samples`` class indices per row of ``logits`` (unnormalised log-probabilities)."""
    rows = np.ascontiguousarray(logits, dtype=np.float64)
    out = np.empty((rows.shape[0], int(samples)), dtype=np.int64)
    _categorical(rows, _u64(seed), _u64(step), int(samples), out)
    return out.astype(dtype)
