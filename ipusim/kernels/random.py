"""Counter-based random numbers for dropout: splitmix64 of (seed, step, element index).

No generator state exists anywhere: element ``i`` of the mask drawn for ``(seed, step)`` is a pure
function of those three integers, so the backward pass can recompute exactly the forward mask, any
run with the same seed reproduces it bit for bit, and a new step gives a new mask.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.errors import ConfigurationError

_MASK64 = (1 << 64) - 1


@kernel
def _mix64(z):
    # The splitmix64 finaliser (Steele, Lea & Flood 2014): a bijection on uint64 with full
    # avalanche, so consecutive counters give independent-looking outputs.
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def _stream_key(seed, step):
    # Independent key per (seed, step): hash the seed, fold in the step, hash again.
    golden = np.uint64(0x9E3779B97F4A7C15)
    return _mix64(_mix64(seed + golden) ^ (step * golden + np.uint64(1)))


@kernel
def _uniform(key, i):
    # Element i of the splitmix64 stream started at key, mapped to [0, 1) with 53 random bits.
    golden = np.uint64(0x9E3779B97F4A7C15)
    h = _mix64(key + (np.uint64(i) + np.uint64(1)) * golden)
    return np.float64(h >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel
def _dropout(x, seed, step, rate, scale, out):
    key = _stream_key(seed, step)
    for i in range(x.size):
        out[i] = x[i] * scale if _uniform(key, i) >= rate else 0.0


@kernel
def _keep_mask(seed, step, rate, scale, out):
    key = _stream_key(seed, step)
    for i in range(out.size):
        out[i] = scale if _uniform(key, i) >= rate else 0.0


def _u64(value: int) -> np.uint64:
    return np.uint64(int(value) & _MASK64)  # negative seeds wrap, as in C


def dropout_mask(
    shape: tuple[int, ...], seed: int, step: int, rate: float, dtype: object = np.float32
) -> np.ndarray:
    """The dropout mask for ``(seed, step)``: ``1 / (1 - rate)`` where kept, 0 where dropped.

    Each element is kept with probability ``1 - rate``, independently of the others.
    """
    out = np.empty(shape, dtype=dtype)
    scale = 1.0 / (1.0 - rate)
    _keep_mask(_u64(seed), _u64(step), float(rate), scale, out.reshape(-1))
    return out


def dropout(x: np.ndarray, seed: int, step: int, rate: float) -> np.ndarray:
    """``x * mask`` with the mask of :func:`dropout_mask` for ``x.shape``."""
    x = np.asarray(x, order="C")
    out = np.empty_like(x)
    _dropout(
        x.reshape(-1), _u64(seed), _u64(step), float(rate), 1.0 / (1.0 - rate), out.reshape(-1)
    )
    return out


@kernel
def _fill_uniform(seed, step, low, high, out):
    key = _stream_key(seed, step)
    for i in range(out.size):
        out[i] = low + (high - low) * _uniform(key, i)


@kernel
def _fill_normal(seed, step, mean, stddev, out):
    # Box-Muller on two draws per element (elements 2i and 2i+1 of the stream); 1 - u keeps the
    # logarithm's argument in (0, 1].
    key = _stream_key(seed, step)
    for i in range(out.size):
        u1 = 1.0 - _uniform(key, 2 * i)
        u2 = _uniform(key, 2 * i + 1)
        out[i] = mean + stddev * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def draw(
    distribution: str,
    shape: tuple[int, ...],
    seed: int,
    step: int,
    a: float,
    b: float,
    dtype: object = np.float32,
) -> np.ndarray:
    """Random numbers for ``(seed, step)``, a pure function of them like the dropout masks.

    Args:
        distribution: ``"uniform"`` (in [a, b)), ``"normal"`` (mean a, standard deviation b) or
            ``"bernoulli"`` (1 with probability a, else 0; b unused).
        shape: output shape.
        seed / step: the stream's key.
    """
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)
    if distribution == "uniform":
        _fill_uniform(_u64(seed), _u64(step), float(a), float(b), flat)
    elif distribution == "normal":
        _fill_normal(_u64(seed), _u64(step), float(a), float(b), flat)
    elif distribution == "bernoulli":
        _keep_mask(_u64(seed), _u64(step), 1.0 - float(a), 1.0, flat)
    else:
        raise ConfigurationError(f"unknown distribution {distribution!r}")
    return out
