"""Python operators of symbolic tensors beyond the one-op ones: ``x[key]``, ``x ** y``, ``x // y``
and ``x % y`` (with the ``floor`` op they need).

``x[key]`` is TensorFlow's basic indexing (``tf.strided_slice``).
A key holds ints (pick one element and drop the axis), slices with any start / stop / step,
``...`` and ``None`` / ``tf.newaxis`` (a new axis of size 1), exactly the keys TensorFlow's
``Tensor.__getitem__`` accepts without a tensor index. It is stored as the node attribute
``index``: one entry per produced or consumed axis, an int, a ``(start, stop, step)`` triple or
None. Like :mod:`ipusim.graph.ops.shape`'s copies it is ``data_movement``: no FLOPs, the bytes it
reads and writes (Poplar copies the selected region).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias, cast

import numpy as np

from ipusim.errors import ConfigurationError, IPUSimError, UnsupportedError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, TensorOperators, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import layout as k
from ipusim.kernels import rounding

__all__ = ["IndexKeyError", "canonical_index", "floor", "floordiv", "getitem", "mod", "power"]


#: One entry of a canonical index: an int, a ``(start, stop, step)`` slice or None (a new axis).
IndexEntry: TypeAlias = int | tuple[int | None, ...] | None
Index: TypeAlias = tuple[IndexEntry, ...]


class IndexKeyError(IPUSimError, TypeError):
    """An index TensorFlow's ``Tensor.__getitem__`` rejects too (a list, a float, a tensor)."""


def _entry(item: object) -> IndexEntry:
    """One key item as an index entry (an int, a (start, stop, step) triple or None)."""
    if item is None:
        return None
    if isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype.kind in "iu":
        item = int(item)  # a concrete scalar tensor, as TensorFlow accepts
    if isinstance(item, Symbol) or getattr(item, "_is_deferred_tensor", False):
        raise UnsupportedError(
            f"symbolic tensor index: indexing by a symbolic tensor ({item!r}) is not simulated "
            "by ipusim; use a Python int or slice"
        )
    if isinstance(item, bool) or not isinstance(item, int | np.integer | slice):
        raise IndexKeyError(
            f"symbolic tensor index: only integers, slices (`:`), ellipsis (`...`) and "
            f"tf.newaxis (`None`) are valid indices, received {item!r} "
            f"({type(item).__name__})"
        )
    if isinstance(item, slice):
        parts = (item.start, item.stop, item.step)
        for part in parts:
            if part is not None and (
                isinstance(part, bool) or not isinstance(part, int | np.integer)
            ):
                raise IndexKeyError(
                    f"symbolic tensor index: slice bounds must be Python ints or None, "
                    f"received {item!r}"
                )
        if item.step == 0:
            raise ConfigurationError("symbolic tensor index: slice step cannot be zero")
        return tuple(None if p is None else int(p) for p in parts)
    return int(item)


def canonical_index(key: object, rank: int) -> Index:
    """``key`` as index entries covering all ``rank`` axes (``...`` and missing axes filled).

    Raises:
        IndexKeyError: an item TensorFlow does not accept as an index.
        ConfigurationError: more than one ``...``, or more indexed axes than ``rank`` (a
            ``ValueError``, as in TensorFlow).
    """
    items = key if isinstance(key, tuple) else (key,)
    if sum(item is Ellipsis for item in items) > 1:
        raise ConfigurationError(
            "symbolic tensor index: an index can only have a single ellipsis ('...')"
        )
    consumed = sum(1 for item in items if item is not None and item is not Ellipsis)
    if consumed > rank:
        raise ConfigurationError(
            f"symbolic tensor index {key!r} indexes {consumed} axes of a tensor of rank {rank}"
        )
    full = (None, None, None)
    out: list[IndexEntry] = []
    for item in items:
        if item is Ellipsis:
            out.extend([full] * (rank - consumed))
        else:
            out.append(_entry(item))
    if Ellipsis not in items:
        out.extend([full] * (rank - consumed))
    return tuple(out)


def _as_index(index: Iterable[object]) -> Index:
    """Node attributes read back from a saved config hold lists: triples become tuples again."""
    return tuple(tuple(e) if isinstance(e, list) else cast(IndexEntry, e) for e in index)


@register
class StridedSlice(Op):
    """``x[index]`` for a canonical index (see :func:`canonical_index`)."""

    name = "strided_slice"
    kind = "data_movement"

    def infer(self, x: TensorSpec, *, index: Index) -> TensorSpec:
        index = _as_index(index)
        shape: list[int | None] = []
        axis = 0
        for entry in index:
            if entry is None:
                shape.append(1)
                continue
            d = x.shape[axis]
            if isinstance(entry, tuple):
                shape.append(None if d is None else len(range(*slice(*entry).indices(d))))
            elif d is not None and not -d <= entry < d:
                raise ConfigurationError(
                    f"symbolic tensor index: index {entry} is out of bounds for axis {axis} "
                    f"of size {d} (tensor shape {x.shape})"
                )
            axis += 1
        if axis != x.rank:
            raise ConfigurationError(
                f"strided_slice: index {index} does not cover the {x.rank} axes of x"
            )
        return TensorSpec(tuple(shape), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, index: Index) -> Array:
        return k.strided_slice(x, _as_index(index))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("strided_slice_grad", dy, node.inputs[0], index=node.attrs["index"])]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(0, out_specs, out_specs, "data_movement")  # only the selected region is read


@register
class StridedSliceGrad(Op):
    """Zeros shaped like ``like`` with ``dy`` where ``like[index]`` reads (``like``: shape only)."""

    name = "strided_slice_grad"
    kind = "data_movement"

    def infer(self, dy: TensorSpec, like: TensorSpec, *, index: Index) -> TensorSpec:
        return TensorSpec(like.shape, dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, like: Array, *, index: Index) -> Array:
        return k.strided_slice_grad(dy, like.shape, _as_index(index))

    def gradient(self, node: Node, ddx: Symbol) -> list[Symbol | None]:
        return [apply1("strided_slice", ddx, index=node.attrs["index"]), None]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(0, in_specs[:1], out_specs, "data_movement")  # ``like`` gives its shape only


def getitem(x: TensorOperators, key: object) -> Symbol:
    """``x[key]`` as TensorFlow's ``Tensor.__getitem__`` computes it (basic indexing only)."""
    rank = x.ndim if hasattr(x, "ndim") else len(x.shape)
    return apply1("strided_slice", x, index=canonical_index(key, rank))


def power(x: TensorLike, y: TensorLike) -> Symbol:
    """``x ** y`` (``tf.pow``) from existing ops.

    Python-number exponents 0.5, 1, 2, 3 and small integers use sqrt / multiplications, which
    are exact and defined for negative ``x`` (as TensorFlow's pow); any other exponent is
    ``exp(y * log(x))``, defined for ``x > 0`` (TensorFlow gives NaN for a negative base with a
    fractional exponent, and so does this).
    """
    from ipusim.graph.ops import math as m

    if isinstance(y, int | float | np.integer | np.floating) and not isinstance(y, bool):
        if y == 0.5:
            return m.sqrt(x)
        if float(y).is_integer() and 1 <= y <= 4:
            if int(y) == 1:
                return m.identity(x)
            out = m.multiply(x, x)
            for _ in range(int(y) - 2):
                out = m.multiply(out, x)
            return out
    if isinstance(x, int | float | np.ndarray | np.generic):  # a constant base: log it here
        dtype = cast(TensorOperators, y).dtype  # y is the tensor here
        return m.exp(m.multiply(y, np.log(np.asarray(x, dtype=np.float64)).astype(dtype)))
    return m.exp(m.multiply(y, m.log(x)))


@register
class Floor(Op):
    """``floor(x)`` elementwise (float inputs). No gradient, as TensorFlow's Floor: the result
    is piecewise constant."""

    name = "floor"
    kind = "elementwise"

    def infer(self, x: TensorSpec) -> TensorSpec:
        if not x.dtype.startswith("float"):
            raise ConfigurationError(f"floor: x must be a float tensor, received {x.dtype}")
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array) -> Array:
        return rounding.floor(x)

    gradient = no_gradient


def floor(x: TensorLike) -> Symbol:
    """``tf.floor``."""
    return apply1("floor", x)


def floordiv(x: TensorLike, y: TensorLike) -> Symbol:
    """``x // y`` (``tf.math.floordiv`` of floats): ``floor(x / y)``."""
    from ipusim.graph.ops import math as m

    return floor(m.divide(x, y))


def mod(x: TensorLike, y: TensorLike) -> Symbol:
    """``x % y`` (``tf.math.floormod`` of floats): ``x - floor(x / y) * y``, the sign of ``y``."""
    from ipusim.graph.ops import math as m

    return m.subtract(x, m.multiply(floordiv(x, y), y))
