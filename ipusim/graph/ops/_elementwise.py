"""Rules the elementwise ops share: FLOPs per element, NumPy broadcasting of shapes, dtype and
axis checks, and undoing a broadcast in a gradient.

Gradient rules that need a shape op call it by name through :func:`apply1`, so the elementwise
modules do not import :mod:`ipusim.graph.ops.shape` (which imports them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.graph import Symbol, apply1
from ipusim.graph.op import OpCost, Specs, io_cost
from ipusim.graph.spec import FLOAT_DTYPES, Shape, TensorSpec

#: FLOPs per output element (per input element for reductions). Transcendentals (exp, log, sqrt,
#: tanh, erf) count 4: the IPU's vector unit evaluates them in a few cycles rather than one, and
#: composite functions count the sum of their parts (sigmoid = exp + add + divide, ...).
FLOPS_PER_ELEMENT: dict[str, int] = {
    "add": 1,
    "subtract": 1,
    "multiply": 1,
    "divide": 1,
    "maximum": 1,
    "minimum": 1,
    "equal": 1,
    "masked_grad": 1,
    "negative": 1,
    "square": 1,
    "abs": 1,
    "relu": 1,
    "clip": 2,
    "cast": 1,
    "sqrt": 4,
    "exp": 4,
    "log": 4,
    "sigmoid": 6,
    "tanh": 4,
    "softplus": 10,
    "gelu": 12,
    "relu_grad": 1,
    "abs_grad": 1,
    "clip_grad": 2,
    "square_grad": 2,
    "sqrt_grad": 2,
    "sigmoid_grad": 3,
    "tanh_grad": 3,
    "softplus_grad": 7,
    "gelu_grad": 16,
    "reduce_sum": 1,
    "reduce_mean": 1,
    "reduce_max": 1,
    "sum_to_shape": 1,
    "argmax": 1,
    "reduce_mean_grad": 1,
    "reduce_max_grad": 3,
}


# ---------------------------------------------------------------------------- helpers
def broadcast_shape(op: str, a: Shape, b: Shape) -> Shape:
    """NumPy broadcasting of two shapes (``None`` = unknown) with a clear error."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            raise ConfigurationError(f"{op}: shapes {a} and {b} cannot be broadcast together")
    return tuple(out)


def require_float(op: str, arg: str, spec: TensorSpec) -> None:
    """Raise a TypeError naming ``arg`` unless ``spec`` has a float dtype."""
    if spec.dtype not in FLOAT_DTYPES:
        raise InvalidTypeError(
            f"{op}: {arg} must be a float tensor, received dtype {spec.dtype}; "
            f"cast it first, e.g. cast({arg}, 'float32')"
        )


def merge_shapes(op: str, a: TensorSpec, b: TensorSpec, names: str = "dy and x") -> Shape:
    """The shape two same-shape operands share (known sizes win over ``None``), else an error."""
    if a.dtype != b.dtype:
        raise InvalidTypeError(
            f"{op}: {names} must have the same dtype, received {a.dtype} and {b.dtype}"
        )
    if a.rank != b.rank or any(
        x is not None and y is not None and x != y for x, y in zip(a.shape, b.shape, strict=True)
    ):
        raise ConfigurationError(
            f"{op}: {names} must have the same shape, received {a.shape} and {b.shape}"
        )
    return tuple(x if x is not None else y for x, y in zip(a.shape, b.shape, strict=True))


def normalize_axes(op: str, axis: object, rank: int) -> tuple[int, ...]:
    """``axis`` (None = all, an int or a sequence, negatives allowed) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(rank))
    if not isinstance(axis, int | np.integer | list | tuple):
        raise InvalidTypeError(
            f"{op}: axis must be None, an int or a tuple of ints, received {axis!r}"
        )
    axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int | np.integer):
            raise InvalidTypeError(
                f"{op}: axis must be an int or a tuple of ints, received {axis!r}"
            )
        if not -rank <= a < rank:
            raise ConfigurationError(
                f"{op}: axis {int(a)} is out of range for a tensor of rank {rank}; "
                f"expected an axis in [{-rank}, {rank})"
            )
        out.append(int(a) % rank)
    if len(set(out)) != len(out):
        raise ConfigurationError(f"{op}: axis {axis!r} names the same axis twice")
    return tuple(sorted(out))


def axis_attr(axis: object) -> Any:
    """An ``axis`` argument as a hashable attribute (lists become tuples, NumPy ints become int)."""
    if isinstance(axis, np.integer):
        return int(axis)
    if isinstance(axis, list | tuple):
        return tuple(int(a) if isinstance(a, np.integer) else a for a in axis)
    return axis  # None, an int, or something normalize_axes will reject with a clear message


def _elementwise_cost(
    name: str, in_specs: Specs, out_specs: Specs, kind: str = "elementwise"
) -> OpCost:
    flops = FLOPS_PER_ELEMENT[name] * sum(s.size for s in out_specs)
    return io_cost(flops, in_specs, out_specs, kind)


def unbroadcast(dy: Symbol, like: Symbol) -> Symbol:
    """Sum ``dy`` back to the shape of ``like`` (undoing broadcasting)."""
    if dy.shape == like.shape:
        return dy
    return apply1("sum_to_shape", dy, shape=like.shape)
