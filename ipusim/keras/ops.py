"""``keras.ops``: the Keras 3 tensor functions ipusim's models use, with Keras 3's names and
arguments (``keras.ops.matmul``, ``keras.ops.einsum``, ``keras.ops.slice`` ...).

On symbolic tensors (``keras.Input`` tensors of a functional model, or the tensors a layer's
``call`` receives while the model is traced) each function builds ipusim's graph op, so it has
spec inference, a gradient and a cost; on concrete values it computes with NumPy, as Keras 3's
ops compute eagerly. Where an ipusim graph op cannot express a Keras 3 call (an ``einsum`` that
is not a matrix product) it raises :class:`~ipusim.errors.UnsupportedError` naming it.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import linalg as glinalg
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import shape as gs
from ipusim.keras.backend_ops import (
    _either,
    _symbolic,
    cast,
    exp,
    log,
    maximum,
    mean,
    minimum,
    softmax,
    sqrt,
    square,
    stop_gradient,
    tanh,
)
from ipusim.keras.backend_ops import abs as abs  # noqa: A004 - Keras' name
from ipusim.keras.backend_ops import sum as sum  # noqa: A004 - Keras' name

__all__ = [
    "abs",
    "add",
    "cast",
    "divide",
    "einsum",
    "exp",
    "log",
    "matmul",
    "maximum",
    "mean",
    "minimum",
    "multiply",
    "reshape",
    "slice",
    "softmax",
    "sqrt",
    "square",
    "stop_gradient",
    "subtract",
    "sum",
    "tanh",
    "transpose",
]

add = _either(gm.add, np.add)
subtract = _either(gm.subtract, np.subtract)
multiply = _either(gm.multiply, np.multiply)
divide = _either(gm.divide, np.divide)


def reshape(x: Any, newshape: Sequence[int]) -> Any:
    """``x`` with shape ``newshape`` (at most one -1, inferred)."""
    if _symbolic(x):
        return gs.reshape(x, tuple(newshape))
    return np.reshape(np.asarray(x), tuple(newshape))


def transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    """``x`` with its axes permuted by ``axes`` (default: reversed)."""
    perm = None if axes is None else tuple(int(a) for a in axes)
    return gs.transpose(x, perm) if _symbolic(x) else np.transpose(np.asarray(x), perm)


def slice(inputs: Any, start_indices: Sequence[int], shape: Sequence[int]) -> Any:  # noqa: A001
    """``inputs[start : start + shape]`` on every axis (Keras 3's ``ops.slice``; a size of -1
    runs to the end of its axis, as the TensorFlow backend reads it).

    Raises:
        ConfigurationError: ``start_indices`` or ``shape`` does not have one entry per axis.
    """
    begin = tuple(int(s) for s in start_indices)
    size = tuple(int(s) for s in shape)
    rank = len(inputs.shape) if _symbolic(inputs) else np.ndim(inputs)
    if len(begin) != rank or len(size) != rank:
        raise ConfigurationError(
            f"keras.ops.slice: `start_indices` ({list(begin)}) and `shape` ({list(size)}) need "
            f"one entry per axis of `inputs`, which has rank {rank}"
        )
    if _symbolic(inputs):
        return gs.slice(inputs, begin, size)
    index = tuple(
        builtins.slice(b, None if s == -1 else b + s) for b, s in zip(begin, size, strict=True)
    )
    return np.asarray(inputs)[index]


def matmul(x1: Any, x2: Any) -> Any:
    """The matrix product: of two matrices, or batched over the leading axes of two tensors of
    equal rank (NumPy's ``matmul`` for these cases).

    Raises:
        UnsupportedError: a vector operand, or operands of different ranks (broadcast batches).
    """
    if not _symbolic(x1, x2):
        return np.matmul(x1, x2)
    rank1, rank2 = len(x1.shape), len(x2.shape)
    if rank1 == rank2 == 2:
        return gnn.matmul(x1, x2)
    if rank1 == rank2 and rank1 >= 3:
        return glinalg.batch_matmul(x1, x2)
    raise UnsupportedError(
        f"keras.ops.matmul of tensors of ranks {rank1} and {rank2} is not simulated: give both "
        "operands the same rank >= 2 (reshape or expand_dims the smaller one)"
    )


def einsum(subscripts: str, *operands: Any) -> Any:
    """Einstein summation. On symbolic tensors ipusim runs the forms that are a (batched)
    matrix product of two operands, either one transposed, e.g. ``"bhqd,bhkd->bhqk"``.

    Raises:
        UnsupportedError: another form on symbolic tensors (ellipses, one or three operands,
            sums over several axes, batch axes that are not leading).
    """
    if not _symbolic(*operands):
        return np.einsum(subscripts, *operands)
    transpose_a, transpose_b = _matmul_form(subscripts, len(operands))
    a, b = operands
    if len(a.shape) == 2:
        return gnn.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    return glinalg.batch_matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)


def _matmul_form(subscripts: str, count: int) -> tuple[bool, bool]:
    """(transpose_a, transpose_b) of the matrix product that ``subscripts`` spells."""
    unsupported = UnsupportedError(
        f"keras.ops.einsum({subscripts!r}) is not simulated on symbolic tensors: ipusim runs "
        "two-operand matrix products such as 'ij,jk->ik' or 'bhqd,bhkd->bhqk' (batch axes "
        "first, one summed axis). Write it with transpose / reshape / matmul."
    )
    spec = subscripts.replace(" ", "")
    if count != 2 or "->" not in spec or "." in spec:
        raise unsupported
    inputs, out = spec.split("->")
    parts = inputs.split(",")
    if len(parts) != 2:
        raise unsupported
    a, b = parts
    if not len(a) == len(b) == len(out) >= 2 or len(set(out)) != len(out):
        raise unsupported
    batch, m, n = out[:-2], out[-2], out[-1]
    summed = (set(a) & set(b)) - set(out)
    if a[:-2] != batch or b[:-2] != batch or len(summed) != 1:
        raise unsupported
    k = next(iter(summed))
    if {a[-2], a[-1]} != {m, k} or {b[-2], b[-1]} != {k, n} or m == n:
        raise unsupported
    return a[-2:] == k + m, b[-2:] == n + k
