"""TensorFlow's ``to_hash_bucket_fast`` of integers' decimal text: FarmHash's 64-bit fingerprint
(``farmhash::Fingerprint64``, the "na" variant) of ``str(value)``, modulo the number of buckets.

Integers print in at most 20 characters, so only FarmHash's short-input paths (0-16 and 17-32
bytes) are needed. All arithmetic is on uint64 and wraps, as in C.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel

_K0 = np.uint64(0xC3A5C85C97CB3127)
_K1 = np.uint64(0xB492B66FBE98F273)
_K2 = np.uint64(0x9AE16A3B2F90404F)


@kernel
def _rotate(v, shift):
    if shift == 0:
        return v
    return (v >> np.uint64(shift)) | (v << np.uint64(64 - shift))


@kernel
def _fetch(buf, start, nbytes):
    out = np.uint64(0)
    for i in range(nbytes):  # little-endian load
        out |= np.uint64(buf[start + i]) << np.uint64(8 * i)
    return out


@kernel
def _mix16(u, v, mul):
    a = (u ^ v) * mul
    a ^= a >> np.uint64(47)
    b = (v ^ a) * mul
    b ^= b >> np.uint64(47)
    return b * mul


@kernel
def _fingerprint(buf, n):
    length = np.uint64(n)
    mul = _K2 + length * np.uint64(2)
    if n > 16:
        a = _fetch(buf, 0, 8) * _K1
        b = _fetch(buf, 8, 8)
        c = _fetch(buf, n - 8, 8) * mul
        d = _fetch(buf, n - 16, 8) * _K2
        return _mix16(_rotate(a + b, 43) + _rotate(c, 30) + d, a + _rotate(b + _K2, 18) + c, mul)
    if n >= 8:
        a = _fetch(buf, 0, 8) + _K2
        b = _fetch(buf, n - 8, 8)
        c = _rotate(b, 37) * mul + a
        d = (_rotate(a, 25) + b) * mul
        return _mix16(c, d, mul)
    if n >= 4:
        a = _fetch(buf, 0, 4)
        return _mix16(length + (a << np.uint64(3)), _fetch(buf, n - 4, 4), mul)
    if n > 0:
        y = (np.uint64(buf[0]) + (np.uint64(buf[n >> 1]) << np.uint64(8))) & np.uint64(0xFFFFFFFF)
        z = (length + (np.uint64(buf[n - 1]) << np.uint64(2))) & np.uint64(0xFFFFFFFF)
        h = y * _K2 ^ z * _K0
        return (h ^ (h >> np.uint64(47))) * _K2
    return _K2


@kernel
def _decimal(value, buf):
    # The decimal text of an int64 into buf; returns its length.
    negative = value < 0
    magnitude = np.uint64(-(value + 1)) + np.uint64(1) if negative else np.uint64(value)
    digits = np.empty(20, dtype=np.uint8)
    count = 0
    while True:
        digits[count] = np.uint8(48 + magnitude % np.uint64(10))
        magnitude //= np.uint64(10)
        count += 1
        if magnitude == 0:
            break
    n = 0
    if negative:
        buf[0] = 45  # '-'
        n = 1
    for i in range(count):
        buf[n + i] = digits[count - 1 - i]
    return n + count


@kernel
def _hash_ints(values, buckets, out):
    buf = np.empty(32, dtype=np.uint8)
    for i in range(values.size):
        n = _decimal(values[i], buf)
        out[i] = np.int64(_fingerprint(buf, n) % np.uint64(buckets))


def hash_ints(values: np.ndarray, buckets: int) -> np.ndarray:
    """``Fingerprint64(str(v)) % buckets`` for each integer ``v``, as int64."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    out = np.empty(values.shape, dtype=np.int64)
    _hash_ints(values.reshape(-1), int(buckets), out.reshape(-1))
    return out
