"""Data-movement kernels: transpose, concatenate, slice, pad, broadcast and tile.

These do no arithmetic, only copies, so they use NumPy's copying routines (which are already
memory-bound loops in C). Every result is a fresh C-contiguous array, never a view of an input, so
later in-place kernels cannot alias an op's input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def transpose(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """``x`` with its axes permuted by ``perm``, as a contiguous copy."""
    return np.array(np.transpose(x, tuple(perm)), order="C")


def concat(arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """Join ``arrays`` along ``axis`` (non-negative)."""
    return np.concatenate(list(arrays), axis=axis)


def slice_(x: np.ndarray, begin: Sequence[int], size: Sequence[int]) -> np.ndarray:
    """``x[begin[i] : begin[i] + size[i]]`` on every axis; a size of -1 means "to the end"."""
    index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size, strict=True))
    return np.array(x[index], order="C")


def pad(x: np.ndarray, paddings: Sequence[tuple[int, int]], value: float = 0.0) -> np.ndarray:
    """``x`` surrounded by ``(before, after)`` elements of ``value`` on every axis."""
    shape = tuple(d + b + a for d, (b, a) in zip(x.shape, paddings, strict=True))
    out = np.full(shape, value, dtype=x.dtype)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, paddings, strict=True))] = x
    return out


def unpad(x: np.ndarray, paddings: Sequence[tuple[int, int]]) -> np.ndarray:
    """Inverse of :func:`pad`: drop ``(before, after)`` elements on every axis."""
    return np.array(
        x[tuple(slice(b, d - a) for d, (b, a) in zip(x.shape, paddings, strict=True))], order="C"
    )


def broadcast_to(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """``x`` repeated to ``shape`` by NumPy broadcasting, as a contiguous copy."""
    return np.array(np.broadcast_to(x, tuple(shape)), order="C")


def tile(x: np.ndarray, multiples: Sequence[int]) -> np.ndarray:
    """``x`` repeated ``multiples[i]`` times along axis ``i``."""
    return np.tile(x, tuple(multiples))


def _index_tuple(index: Sequence) -> tuple:
    """A strided-slice index (ints, ``(start, stop, step)`` triples, None) as NumPy's key."""
    return tuple(slice(*item) if isinstance(item, tuple | list) else item for item in index)


def strided_slice(x: np.ndarray, index: Sequence) -> np.ndarray:
    """``x[index]`` for a basic index: ints drop an axis, triples slice one, None adds one."""
    return np.array(x[_index_tuple(index)], order="C")


def strided_slice_grad(dy: np.ndarray, shape: Sequence[int], index: Sequence) -> np.ndarray:
    """Zeros of ``shape`` with ``dy`` written where :func:`strided_slice` read (its gradient)."""
    out = np.zeros(tuple(shape), dtype=dy.dtype)
    key = _index_tuple(index)
    # The output axes of x[key] are its slices and new axes, in order; new axes (size 1) are
    # dropped from dy so it lines up with the region of x the slices select.
    produced = [k for k in key if not isinstance(k, int | np.integer)]
    new_axes = tuple(i for i, k in enumerate(produced) if k is None)
    out[tuple(k for k in key if k is not None)] = np.squeeze(dy, axis=new_axes)
    return out


def reverse(x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """``x`` with the order of its elements along each of ``axes`` reversed (a copy)."""
    return np.array(np.flip(x, tuple(axes)), order="C")
