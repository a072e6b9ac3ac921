"""Embedding kernels: gather rows of a table by integer ids, and the scatter-add gradient.

Ids are checked inside the kernels; a kernel reports the position of the first out-of-range id and
the wrapper raises naming its value and the table size.
"""

from __future__ import annotations

import math

import numpy as np

from ipusim._jit import kernel
from ipusim.errors import IndexOutOfRangeError


@kernel
def _gather_rows(table, ids, out):
    rows, width = table.shape
    for n in range(ids.size):
        row = ids[n]
        if row < 0 or row >= rows:
            return n
        for j in range(width):
            out[n, j] = table[row, j]
    return -1


@kernel
def _scatter_add_rows(dy, ids, out):
    rows, width = out.shape
    for j in range(rows):
        for k in range(width):
            out[j, k] = 0.0
    for n in range(ids.size):
        row = ids[n]
        if row < 0 or row >= rows:
            return n
        for k in range(width):
            out[row, k] += dy[n, k]
    return -1


def _check(ids: np.ndarray, bad: int, rows: int) -> None:
    if bad >= 0:
        index = np.unravel_index(bad, ids.shape) if ids.ndim else ()
        raise IndexOutOfRangeError(
            f"embedding_lookup: id {int(ids.reshape(-1)[bad])} at index "
            f"{tuple(int(i) for i in index)} is outside [0, {rows}); ids must be row numbers "
            f"below the number of rows of params ({rows}). Check the vocabulary size "
            "(input_dim) against the largest id in the data."
        )


def gather_rows(params: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``params[ids]``: rows of ``params`` (any rank ≥ 1), result shape ``ids.shape + params.shape[1:]``."""
    rows = params.shape[0]
    width = math.prod(params.shape[1:])
    table = np.asarray(params, order="C").reshape(rows, width)
    flat_ids = np.asarray(ids, order="C").reshape(-1)
    out = np.empty((flat_ids.size, width), dtype=params.dtype)
    _check(ids, _gather_rows(table, flat_ids, out), rows)
    return out.reshape(ids.shape + params.shape[1:])


def scatter_add_rows(dy: np.ndarray, ids: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Dense gradient of :func:`gather_rows` w.r.t. ``params`` of ``shape``: ``dy`` rows summed by id."""
    width = math.prod(shape[1:])
    flat_ids = np.asarray(ids, order="C").reshape(-1)
    out = np.empty((shape[0], width), dtype=dy.dtype)
    _check(
        ids,
        _scatter_add_rows(np.asarray(dy, order="C").reshape(flat_ids.size, width), flat_ids, out),
        shape[0],
    )
    return out.reshape(shape)


@kernel
def _one_hot(ids, out):
    depth = out.shape[1]
    for n in range(ids.size):
        for j in range(depth):
            out[n, j] = 0
        row = ids[n]
        if row >= 0 and row < depth:  # out-of-range ids give a zero row, as tf.one_hot
            out[n, row] = 1


def one_hot(indices: np.ndarray, depth: int, dtype: str = "float32") -> np.ndarray:
    """``indices.shape + (depth,)`` array with 1 at each index and 0 elsewhere."""
    flat = np.asarray(indices, order="C").reshape(-1)
    out = np.empty((flat.size, depth), dtype=dtype)
    _one_hot(flat, out)
    return out.reshape(indices.shape + (depth,))
