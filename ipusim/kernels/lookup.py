"""Integer lookups: bucketize against sorted boundaries and map keys to indices by a sorted table.

Both are binary searches per element (``log2`` of the table size steps).
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel


@kernel
def _upper_bound(sorted_values, x):
    lo, hi = 0, sorted_values.size
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_values[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _bucketize(x, boundaries, out):
    for i in range(x.size):
        out[i] = _upper_bound(boundaries, x[i])


@kernel
def _lookup(x, keys, values, default, buckets, out):
    for i in range(x.size):
        j = _upper_bound(keys, x[i]) - 1
        if j >= 0 and keys[j] == x[i]:
            out[i] = values[j]
        elif buckets > 1:  # spread misses over buckets: default + floormod(x, buckets)
            out[i] = default + ((x[i] % buckets) + buckets) % buckets
        else:
            out[i] = default


def bucketize(x: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
    """The number of ``boundaries`` (sorted ascending) that are <= each element, as int64
    (``tf.raw_ops.Bucketize``)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(x.shape, dtype=np.int64)
    _bucketize(x.reshape(-1), np.asarray(boundaries, np.float64), out.reshape(-1))
    return out


def lookup(
    x: np.ndarray, keys: np.ndarray, values: np.ndarray, default: int, buckets: int = 0
) -> np.ndarray:
    """``values[k]`` where element == ``keys[k]`` (keys sorted ascending), else ``default``
    (plus ``floormod(element, buckets)`` when ``buckets`` > 1)."""
    x = np.ascontiguousarray(x, dtype=np.int64)
    out = np.empty(x.shape, dtype=np.int64)
    keys = np.asarray(keys, np.int64)
    values = np.asarray(values, np.int64)
    _lookup(x.reshape(-1), keys, values, int(default), int(buckets), out.reshape(-1))
    return out
