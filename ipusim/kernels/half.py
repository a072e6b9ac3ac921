"""Rounding to IEEE half precision as the IPU does it: nearest-even or stochastic, saturating.

Every half-precision result in ipusim is computed in float32 and then rounded here, once, to the
binary16 grid. For one IEEE operation (add, subtract, multiply, divide, square root) this gives
exactly the correctly rounded half-precision result: float32 carries 24 significand bits, at least
2 x 11 + 2, so rounding the float32 result again cannot double-round.

What happens when a value is too large for half precision follows the IPU's floating-point
control (``IPUConfig.floating_point_behaviour.nanoo``): the result saturates to +-65504 (nanoo
off, the default) or becomes NaN (nanoo on). Infinities and NaNs already in the input pass
through unchanged. The kernels count the overflows so that ``oflo`` can trap on them.

Stochastic rounding (``esr``) rounds up with probability equal to the distance from the value
below in units of the last place, so ``E[round(x)] = x`` exactly, as the IPU's stochastic rounding
unit does. The random bits for element ``i`` are a pure function of a 64-bit stream key and ``i``
(splitmix64, shared with dropout): a run with the same seed rounds identically.

Half values are kept either as float16 arrays (tensors whose dtype is float16) or as float32
arrays holding binary16 values (float32 tensors computed "as half" when ``ipusim.precision`` is
fp16.16 or fp16.32); :func:`round_to_half` produces the second form, :func:`to_half` the first.

Sources (S): IEEE 754-2008 binary16 (max 65504, normal minimum 2**-14, subnormal spacing 2**-24);
Graphcore tutorial "Training a model using half- and mixed-precision" (nanoo: saturate or NaN on
overflow; stochastic rounding is unbiased); Graphcore AI-float white paper (half partial sums are
"expanded to FP32, then added, then rounded back to FP16", by nearest-even or stochastically).
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.random import _mix64

#: Largest finite binary16 value (S: IEEE 754).
HALF_MAX = 65504.0

# float32 bit patterns the kernels compare against.
_ABS_MASK = 0x7FFFFFFF
_SIGN_MASK = 0x80000000
_EXP_MASK = 0x7F800000  # all-ones exponent: inf or NaN
_HALF_NORMAL_MIN_BITS = 0x38800000  # 2**-14, the smallest normal binary16 value
_HALF_MAX_BITS = 0x477FE000  # 65504.0
_KEEP = 0x7FFFE000  # clears the 13 float32 significand bits that binary16 does not hold
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1
# Adding then subtracting 0.75 rounds (nearest-even) any |x| < 0.25 to a multiple of 2**-24, the
# binary16 subnormal spacing: the sum lies in [0.5, 1), where the float32 spacing is 2**-24.
_SUBNORMAL_MAGIC = np.float32(0.75)
_SUBNORMAL_SCALE = 16777216.0  # 2**24


@kernel
def _round_subnormal(mag, r, stochastic):
    # |x| < 2**-14: the binary16 grid is uniform, 2**-24; round on it in floating point.
    if stochastic:
        u = np.float64(r >> np.uint64(40)) * (1.0 / _SUBNORMAL_SCALE)
        return np.float32(np.floor(np.float64(mag) * _SUBNORMAL_SCALE + u) / _SUBNORMAL_SCALE)
    return (mag + _SUBNORMAL_MAGIC) - _SUBNORMAL_MAGIC


@kernel
def _round_normal_bits(a, r, stochastic):
    # |x| >= 2**-14 (magnitude bits a): drop the 13 significand bits binary16 lacks, rounding
    # nearest-even, or stochastically by adding 13 random bits and truncating. A carry into the
    # exponent is the right result.
    if stochastic:
        return (a + np.uint32(r >> np.uint64(51))) & np.uint32(_KEEP)
    return (a + np.uint32(0xFFF) + ((a >> np.uint32(13)) & np.uint32(1))) & np.uint32(_KEEP)


@kernel
def _all_normal_in_range(bits):
    # True when every float32 value (its bits) rounds, nearest-even, to a normal finite binary16.
    special = 0
    for i in range(bits.size):
        a = bits[i] & np.uint32(_ABS_MASK)
        rounded = _round_normal_bits(a, np.uint64(0), False)
        special |= (a < np.uint32(_HALF_NORMAL_MIN_BITS)) | (rounded > np.uint32(_HALF_MAX_BITS))
    return special == 0


@kernel
def round_span(x, bits, out, out_bits, stochastic, key, offset, nan_on_overflow):
    """Round the 1-D float32 ``x`` (``bits``: its uint32 view) into ``out`` (``out_bits``).

    Element ``i`` draws its random bits from position ``offset + i`` of the stream ``key``.
    Returns the number of finite values that overflowed the half range.
    """
    if not stochastic and _all_normal_in_range(bits):
        # The common case, branch-free so that it vectorises: every value is a normal binary16
        # after nearest-even rounding (no inf/NaN, no subnormal, no overflow).
        for i in range(x.size):
            b = bits[i]
            out_bits[i] = _round_normal_bits(b & np.uint32(_ABS_MASK), np.uint64(0), False) | (
                b & np.uint32(_SIGN_MASK)
            )
        return 0
    overflows = 0
    golden = np.uint64(_GOLDEN)
    r = np.uint64(0)
    for i in range(x.size):
        b = bits[i]
        a = b & np.uint32(_ABS_MASK)
        if stochastic:
            r = _mix64(key + (np.uint64(offset + i) + np.uint64(1)) * golden)
        if a >= np.uint32(_EXP_MASK):  # inf or NaN: passes through
            out_bits[i] = b
        elif a < np.uint32(_HALF_NORMAL_MIN_BITS):
            q = _round_subnormal(abs(x[i]), r, stochastic)
            out[i] = q if b == a else -q
        else:
            rounded = _round_normal_bits(a, r, stochastic)
            if rounded > np.uint32(_HALF_MAX_BITS):
                overflows += 1
                rounded = np.uint32(0x7FC00000) if nan_on_overflow else np.uint32(_HALF_MAX_BITS)
            out_bits[i] = rounded | (b & np.uint32(_SIGN_MASK))
    return overflows


@kernel
def round_value(v, r, stochastic, nan_on_overflow, scratch, bits):
    """One float32 value rounded to the binary16 grid: ``(value, overflowed)``.

    ``scratch`` is a float32 array of length 1 and ``bits`` its uint32 view (to read the value's
    bits); ``r`` is 64 random bits, used when ``stochastic``. For kernels that round every
    intermediate result.
    """
    scratch[0] = v
    b = bits[0]
    a = b & np.uint32(_ABS_MASK)
    if a >= np.uint32(_EXP_MASK):
        return scratch[0], False
    if a < np.uint32(_HALF_NORMAL_MIN_BITS):
        q = _round_subnormal(abs(scratch[0]), r, stochastic)
        return (q if b == a else -q), False
    rounded = _round_normal_bits(a, r, stochastic)
    overflowed = rounded > np.uint32(_HALF_MAX_BITS)
    if overflowed:
        if nan_on_overflow:
            return np.float32(np.nan), True
        rounded = np.uint32(_HALF_MAX_BITS)
    bits[0] = rounded | (b & np.uint32(_SIGN_MASK))
    return scratch[0], overflowed


def stream_key(*parts: int) -> int:
    """A 64-bit stream key from integers (seed, step, node, ...), each folded in with splitmix64.

    Distinct tuples give independent-looking streams; the same tuple always the same stream.
    """
    z = 0x243F6A8885A308D3
    for part in parts:
        z = (z ^ (int(part) & _MASK64)) & _MASK64
        z = (z + _GOLDEN) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        z ^= z >> 31
    return z


def round_to_half(
    x: np.ndarray,
    *,
    stochastic: bool = False,
    key: int = 0,
    nan_on_overflow: bool = False,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Round every element of ``x`` to the binary16 grid, keeping float32 storage.

    Args:
        x: float32 array (any shape); another float array is converted to float32 first (a
            float64 value then rounds twice, which no half-precision path in ipusim does).
        stochastic: round stochastically (unbiased) instead of to nearest-even.
        key: the random stream of a stochastic rounding (see :func:`stream_key`).
        nan_on_overflow: overflowing values become NaN instead of saturating to +-65504.
        out: float32 array of ``x``'s shape to write into (may be ``x`` itself); default new.

    Returns:
        ``(rounded, overflows)``: a float32 array whose every value is exactly representable in
        binary16, and the number of finite values that overflowed the half range.
    """
    src = np.asarray(x, dtype=np.float32, order="C")
    if out is None:
        out = np.empty(src.shape, dtype=np.float32)
    flat_in, flat_out = src.reshape(-1), out.reshape(-1)
    overflows = round_span(
        flat_in,
        flat_in.view(np.uint32),
        flat_out,
        flat_out.view(np.uint32),
        bool(stochastic),
        np.uint64(int(key) & _MASK64),
        0,
        bool(nan_on_overflow),
    )
    return out, int(overflows)


def to_half(
    x: np.ndarray, *, stochastic: bool = False, key: int = 0, nan_on_overflow: bool = False
) -> tuple[np.ndarray, int]:
    """:func:`round_to_half`, returned as a float16 array (converting grid values is exact)."""
    rounded, overflows = round_to_half(
        x, stochastic=stochastic, key=key, nan_on_overflow=nan_on_overflow
    )
    return rounded.astype(np.float16), overflows


def widen(x: np.ndarray) -> np.ndarray:
    """A float16 array as float32 (exact); any other array unchanged."""
    return x.astype(np.float32) if x.dtype == np.float16 else x
