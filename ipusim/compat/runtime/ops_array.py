"""Array ops of the ``tf`` namespace: stacking, splitting, tiling, padding, gathering and
scattering, ``where``, ``fill`` / ``linspace`` / ``eye``, ``einsum`` / ``tensordot``, clipping,
``shape`` / ``size`` / ``rank``, ``sort`` / ``argsort``, ``reverse`` / ``roll``.

Each works eagerly and on traced tensors as one or a few graph ops (``gather`` is an embedding
lookup on the gathered axis moved first; ``scatter_nd`` an embedding gradient on flat indices).
Ops whose output shape depends on the values (``boolean_mask``, one-argument ``where``,
``unique``) exist only eagerly: an IPU program's shapes are fixed when it is compiled.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ipusim.compat.runtime.dispatch import default_array, is_symbolic, rank_of, shape_of
from ipusim.compat.runtime.ops_math import _op, _t, _TopK
from ipusim.compat.runtime.strings import host_strings
from ipusim.compat.runtime.tensor import EagerTensor
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.graph import apply
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import math_extra as me
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import noise as gnoise
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import scan as gsc
from ipusim.graph.ops import shape as gs
from ipusim.graph.spec import canonical_dtype


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(values).reshape(-1))


def _static_only(op: str, *values: Any) -> None:
    if any(is_symbolic(v) for v in values):
        raise UnsupportedError(
            f"tf.{op}: the output shape depends on the values, which an IPU program cannot have "
            "(its shapes are fixed when it is compiled); use a mask (tf.where(cond, x, 0)) or "
            f"call tf.{op} outside tf.function on concrete values"
        )


# ---------------------------------------------------------------------- stack / split
@host_strings("stack")
def stack(values: Any, axis: int = 0, name: str | None = None) -> Any:
    """``tf.stack``: join equal-shaped tensors along a new ``axis``."""
    items = list(values)
    rank = rank_of(items[0])
    ax = int(axis) % (rank + 1)

    def compose(*vs: Any) -> Any:
        return gs.concat([gs.expand_dims(v, ax) for v in vs], ax)

    return _op(compose, *items)


@host_strings("unstack")
def unstack(
    value: Any, num: int | None = None, axis: int = 0, name: str | None = None
) -> list[Any]:
    """``tf.unstack``: the slices of ``value`` along ``axis``, as a list."""

    def compose(v: Any) -> Any:
        ax = int(axis) % v.ndim
        count = v.shape[ax] if num is None else int(num)
        parts = gs.split(v, count, ax) if count > 1 else (gm.identity(v),)
        return tuple(gs.squeeze(p, axis=ax) for p in parts)

    return list(_op(compose, value))


def split(
    value: Any, num_or_size_splits: Any, axis: int = 0, num: Any = None, name: str | None = None
) -> list[Any]:
    """``tf.split``: equal parts (an int) or parts of the given sizes along ``axis``."""
    spec = num_or_size_splits
    spec = int(spec) if np.ndim(spec) == 0 else [int(s) for s in np.asarray(spec)]
    return list(_op(lambda v: gs.split(v, spec, int(axis)), value))


def tile(input: Any, multiples: Any, name: str | None = None) -> Any:  # noqa: A002
    """``tf.tile``: repeat ``input`` ``multiples[i]`` times along axis ``i``."""
    return _op(gs.tile, input, multiples=_ints(multiples))


def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    constant_values: float = 0,
    name: str | None = None,
) -> Any:
    """``tf.pad``: constant padding (``mode="CONSTANT"``); REFLECT and SYMMETRIC are refused."""
    if str(mode).upper() != "CONSTANT":
        raise UnsupportedError(
            f"tf.pad: mode {mode!r} is not simulated by ipusim; only mode='CONSTANT' is"
        )
    pairs = np.asarray(paddings).reshape(-1, 2).tolist()
    return _op(gs.pad, tensor, paddings=pairs, constant_values=float(constant_values))


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Any:  # noqa: A001
    """``tf.slice``: ``size[i]`` elements from ``begin[i]`` on every axis (-1 = to the end)."""
    return _op(gs.slice, input_, begin=_ints(begin), size=_ints(size))


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Any:  # noqa: A002
    """``tf.broadcast_to``: repeat ``input`` to ``shape`` by broadcasting."""
    return _op(gs.broadcast_to, input, shape=_ints(shape))


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Any:
    """``tf.reverse``: flip the order along each axis in ``axis`` (the graph's reverse op)."""

    def compose(v: Any) -> Any:
        return gnoise.reverse(v, sorted({int(a) % v.ndim for a in np.asarray(axis).reshape(-1)}))

    return _op(compose, tensor)


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Any:  # noqa: A002
    """``tf.roll``: rotate elements by ``shift`` along ``axis`` (both may be lists)."""
    shifts, axes = np.broadcast_arrays(np.asarray(shift).reshape(-1), np.asarray(axis).reshape(-1))

    def compose(v: Any) -> Any:
        out = v
        for s, a in zip(shifts, axes, strict=True):
            n = v.shape[int(a)]
            order = (np.arange(n) - int(s)) % n
            out = _gather_axis(out, order.astype(np.int32), int(a) % v.ndim)
        return out

    return _op(compose, input)


def repeat(input: Any, repeats: Any, axis: Any = None, name: str | None = None) -> Any:  # noqa: A002
    """``tf.repeat``: repeat each element ``repeats`` times along ``axis`` (flattened if None);
    ``repeats`` must be concrete."""
    counts = np.asarray(repeats)

    def compose(v: Any) -> Any:
        src = gs.reshape(v, (-1,)) if axis is None else v
        ax = 0 if axis is None else int(axis) % v.ndim
        # an unknown size (a Keras input's batch) is not supported: a TypeError below
        n: int = src.shape[ax]  # type: ignore[assignment]
        order = np.repeat(np.arange(n), counts).astype(np.int32)
        return _gather_axis(src, order, ax)

    return _op(compose, input)


# ---------------------------------------------------------------------- gather / scatter
def _gather_axis(params: Any, indices: Any, axis: int) -> Any:
    """``params`` gathered along ``axis`` (an embedding lookup on that axis moved first)."""
    rank = params.ndim
    if axis == 0:
        return gnn.embedding_lookup(params, indices)
    perm = (axis,) + tuple(i for i in builtins.range(rank) if i != axis)
    rows = gnn.embedding_lookup(gs.transpose(params, perm), indices)
    k = np.ndim(indices) if not hasattr(indices, "ndim") else indices.ndim
    # rows: indices.shape + params.shape without axis; move the params axes before `axis` first.
    back = (
        tuple(builtins.range(k, k + axis))
        + tuple(builtins.range(k))
        + tuple(builtins.range(k + axis, k + rank - 1))
    )
    return gs.transpose(rows, back)


def gather(
    params: Any,
    indices: Any,
    validate_indices: Any = None,
    axis: Any = None,
    batch_dims: int = 0,
    name: str | None = None,
) -> Any:
    """``tf.gather``: slices of ``params`` along ``axis`` at integer ``indices`` (an index out of
    range raises, where TensorFlow on CPU also raises)."""
    if int(batch_dims) != 0:
        raise UnsupportedError(
            f"tf.gather: batch_dims={batch_dims} is not simulated by ipusim; only batch_dims=0 is"
        )

    def compose(p: Any, i: Any) -> Any:
        return _gather_axis(p, i, 0 if axis is None else int(axis) % p.ndim)

    return _op(compose, _t(params), _t(indices))


def _flat_index(indices: Any, shape: tuple[int, ...]) -> Any:
    """Row-major flat positions of the index tuples in the last axis of ``indices``."""
    depth = indices.shape[-1]
    strides = np.cumprod((shape[1:depth] + (1,))[::-1])[::-1].astype(np.int32)
    weights = gm.multiply(gm.cast(indices, "float32"), strides.astype(np.float32))
    return gm.cast(gr.reduce_sum(weights, axis=-1), "int32")


def gather_nd(params: Any, indices: Any, batch_dims: int = 0, name: str | None = None) -> Any:
    """``tf.gather_nd``: slices of ``params`` at the index tuples in the last axis of ``indices``."""
    if int(batch_dims) != 0:
        raise UnsupportedError("tf.gather_nd: only batch_dims=0 is simulated by ipusim")

    def compose(p: Any, i: Any) -> Any:
        depth = i.shape[-1]
        flat = gs.reshape(p, (-1,) + tuple(p.shape[depth:]))
        return gnn.embedding_lookup(flat, _flat_index(i, tuple(p.shape)))

    return _op(compose, _t(params), _t(indices))


def scatter_nd(
    indices: Any, updates: Any, shape: Any, name: str | None = None, bad_indices_policy: str = ""
) -> Any:
    """``tf.scatter_nd``: a zero tensor of ``shape`` with ``updates`` added at ``indices``
    (repeated indices add up, as TensorFlow's)."""
    target = _ints(shape)

    def compose(i: Any, u: Any) -> Any:
        depth = i.shape[-1]
        rows = (int(np.prod(target[:depth])),) + target[depth:]
        flat = apply("embedding_lookup_grad", u, _flat_index(i, target), shape=rows)
        return gs.reshape(flat, target)

    return _op(compose, _t(indices), _t(updates))


def tensor_scatter_nd_add(
    tensor: Any, indices: Any, updates: Any, name: str | None = None, bad_indices_policy: str = ""
) -> Any:
    """``tf.tensor_scatter_nd_add``: ``tensor`` plus ``updates`` scattered at ``indices``."""
    shape = shape_of(tensor)
    return _op(gm.add, _t(tensor), scatter_nd(indices, updates, tuple(shape)))


def tensor_scatter_nd_update(
    tensor: Any, indices: Any, updates: Any, name: str | None = None
) -> Any:
    """``tf.tensor_scatter_nd_update``: ``tensor`` with the entries at ``indices`` replaced."""
    # unknown sizes (a Keras input's batch) are not supported: a TypeError below
    shape: tuple[int, ...] = shape_of(tensor)  # type: ignore[assignment]

    def compose(t: Any, i: Any, u: Any) -> Any:
        depth = i.shape[-1]
        rows = (int(np.prod(shape[:depth])),) + shape[depth:]
        flat_index = _flat_index(i, shape)
        hit = apply(
            "embedding_lookup_grad", gm.add(gm.multiply(u, 0.0), 1.0), flat_index, shape=rows
        )
        added = apply("embedding_lookup_grad", u, flat_index, shape=rows)
        keep = gm.subtract(1.0, gm.minimum(gs.reshape(hit, shape), 1.0))
        return gm.add(gm.multiply(t, keep), gs.reshape(added, shape))

    return _op(compose, _t(tensor), _t(indices), _t(updates, tensor))


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Any:
    """``tf.where``: ``x`` where ``condition`` else ``y`` (broadcasting); with only
    ``condition``, the coordinates of its true entries (eager only)."""
    if x is None and y is None:
        _static_only("where", condition)
        coords = np.argwhere(np.asarray(condition))
        return coords.astype(np.int64).view(EagerTensor)
    if x is None or y is None:
        raise ConfigurationError("tf.where: give both `x` and `y`, or neither")
    return _op(me.select, _t(condition), _t(x, y), _t(y, x))


def boolean_mask(tensor: Any, mask: Any, axis: Any = None, name: str | None = None) -> Any:
    """``tf.boolean_mask``: the entries of ``tensor`` where ``mask`` is true (eager only)."""
    _static_only("boolean_mask", tensor, mask)
    array, flags = np.asarray(tensor), np.asarray(mask, dtype=bool)
    ax = 0 if axis is None else int(axis)
    moved = np.moveaxis(array, ax, 0) if flags.ndim == 1 else array
    picked = moved[flags] if flags.ndim == 1 else array[flags]
    return np.array(np.moveaxis(picked, 0, ax) if flags.ndim == 1 else picked).view(EagerTensor)


def unique(x: Any, out_idx: Any = "int32", name: str | None = None) -> Any:
    """``tf.unique``: the distinct values in order of first appearance and each entry's index
    into them (eager only)."""
    _static_only("unique", x)
    array = np.asarray(x).reshape(-1)
    _, first, inverse = np.unique(array, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    values = array[np.sort(first)]
    idx = rank[inverse].astype(canonical_dtype(out_idx))
    return values.view(EagerTensor), idx.view(EagerTensor)


# ---------------------------------------------------------------------- creation
def fill(dims: Any, value: Any, name: str | None = None) -> Any:
    """``tf.fill``: a tensor of shape ``dims`` holding ``value``."""
    array = default_array(value)
    return np.full(_ints(dims), array, dtype=array.dtype).view(EagerTensor)


def linspace(start: Any, stop: Any, num: Any, name: str | None = None, axis: int = 0) -> Any:
    """``tf.linspace``: ``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    a, b = default_array(start), default_array(stop)
    dtype = np.result_type(a.dtype, b.dtype)
    out = np.linspace(a.astype(np.float64), b.astype(np.float64), int(num), axis=int(axis))
    return out.astype(dtype if dtype.kind == "f" else np.float32).view(EagerTensor)


def eye(
    num_rows: int,
    num_columns: int | None = None,
    batch_shape: Any = None,
    dtype: Any = "float32",
    name: str | None = None,
) -> Any:
    """``tf.eye``: an identity matrix (batched by ``batch_shape``)."""
    base = np.eye(int(num_rows), None if num_columns is None else int(num_columns))
    shape = tuple(_ints(batch_shape)) if batch_shape is not None else ()
    out = np.broadcast_to(base, shape + base.shape).astype(canonical_dtype(dtype))
    return np.array(out).view(EagerTensor)


def meshgrid(*args: Any, **kwargs: Any) -> list[EagerTensor]:
    """``tf.meshgrid``: coordinate grids from 1-D arrays (``indexing="xy"`` or ``"ij"``)."""
    indexing = kwargs.get("indexing", "xy")
    return [
        np.array(g).view(EagerTensor)
        for g in np.meshgrid(*map(np.asarray, args), indexing=indexing)
    ]


def sequence_mask(
    lengths: Any, maxlen: Any = None, dtype: Any = "bool", name: str | None = None
) -> Any:
    """``tf.sequence_mask``: ``mask[..., j] = j < lengths[...]`` (``maxlen`` needed when traced)."""
    if maxlen is None:
        _static_only("sequence_mask (without maxlen)", lengths)
        maxlen = int(np.max(np.asarray(lengths))) if np.size(lengths) else 0
    width = int(maxlen)

    def compose(n: Any) -> Any:
        positions = np.arange(width, dtype=np.float32)
        room = gm.subtract(gs.expand_dims(gm.cast(n, "float32"), -1), positions)
        return gm.cast(me.positive_mask(room), canonical_dtype(dtype))

    return _op(compose, _t(lengths))


# ---------------------------------------------------------------------- shapes
def shape(input: Any, out_type: Any = "int32", name: str | None = None) -> Any:  # noqa: A002
    """``tf.shape``: the shape as a concrete int tensor (an IPU program's shapes are static)."""
    dims = shape_of(input)
    if any(d is None for d in dims):
        raise UnsupportedError(
            f"tf.shape: the shape {dims} has unknown sizes; ipusim needs them known (set the "
            "batch size of the model's Input, or use x.shape on a traced tensor)"
        )
    return np.asarray(dims, dtype=canonical_dtype(out_type)).view(EagerTensor)


def shape_n(
    input: Any,  # noqa: A002
    out_type: Any = "int32",
    name: str | None = None,
) -> list[Any]:
    """``tf.shape_n``: ``tf.shape`` of each tensor in the list."""
    return [shape(v, out_type) for v in input]


def size(input: Any, out_type: Any = "int32", name: str | None = None) -> Any:  # noqa: A002
    """``tf.size``: the number of elements, as a concrete int tensor."""
    return np.asarray(int(np.prod(shape(input, "int64"))), dtype=canonical_dtype(out_type)).view(
        EagerTensor
    )


def rank(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """``tf.rank``: the number of axes, as a concrete int32 tensor."""
    return np.asarray(rank_of(input), dtype=np.int32).view(EagerTensor)


def identity_n(input: Any, name: str | None = None) -> list[Any]:  # noqa: A002
    """``tf.identity_n``: each tensor of the list, unchanged."""
    return [_op(gm.identity, v) for v in input]


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Any:
    """``tf.dtypes.saturate_cast``: cast, clamping to the target dtype's range first."""
    target = canonical_dtype(dtype)
    kind = np.dtype(target)
    if kind.kind in "iu":
        lo, hi = float(np.iinfo(kind).min), float(np.iinfo(kind).max)
    elif kind.kind == "f":
        lo, hi = float(np.finfo(kind).min), float(np.finfo(kind).max)
    else:
        return _op(gm.cast, value, target)

    def compose(v: Any) -> Any:
        if v.dtype in ("float16", "float32", "float64"):
            v = gm.minimum(gm.maximum(v, lo), hi)
        return gm.cast(v, target)

    return _op(compose, value)


# ---------------------------------------------------------------------- sorting
def sort(values: Any, axis: int = -1, direction: str = "ASCENDING", name: str | None = None) -> Any:
    """``tf.sort``: values sorted along ``axis`` (the last axis; ``direction`` ASCENDING or
    DESCENDING), through ``top_k`` over the whole axis."""
    return _sorted(values, axis, direction)[0]


def argsort(
    values: Any,
    axis: int = -1,
    direction: str = "ASCENDING",
    stable: bool = False,
    name: Any = None,
) -> Any:
    """``tf.argsort``: the int32 indices that sort ``values`` along ``axis`` (stable)."""
    return _sorted(values, axis, direction)[1]


def _sorted(values: Any, axis: int, direction: str) -> _TopK:
    descending = str(direction).upper() == "DESCENDING"
    if not descending and str(direction).upper() != "ASCENDING":
        raise ConfigurationError(
            f"sort: direction must be ASCENDING or DESCENDING, received {direction!r}"
        )

    def compose(v: Any) -> Any:
        ax = int(axis) % v.ndim
        perm = tuple(i for i in builtins.range(v.ndim) if i != ax) + (ax,)
        back = tuple(int(i) for i in np.argsort(perm))
        moved = gs.transpose(v, perm) if ax != v.ndim - 1 else v
        keyed = moved if descending else gm.negative(moved)
        top, idx = gsc.top_k(keyed, k=v.shape[ax])
        top = top if descending else gm.negative(top)
        if ax != v.ndim - 1:
            top, idx = gs.transpose(top, back), gs.transpose(idx, back)
        return top, idx

    out = _op(compose, values)
    return _TopK(out[0], out[1])


def searchsorted(
    sorted_sequence: Any, values: Any, side: str = "left", out_type: Any = "int32", name: Any = None
) -> Any:
    """``tf.searchsorted``: insertion points of ``values`` in each sorted innermost row."""

    def compose(s: Any, v: Any) -> Any:
        diff = gm.subtract(gs.expand_dims(v, -1), gs.expand_dims(s, -2))  # [..., m, n]
        below = (
            me.positive_mask(diff)
            if side == "left"
            else gm.subtract(1.0, me.positive_mask(gm.negative(diff)))
        )
        return gm.cast(gr.reduce_sum(below, axis=-1), canonical_dtype(out_type))

    return _op(compose, _t(sorted_sequence), _t(values))


__all__ = [
    "boolean_mask", "broadcast_to", "eye", "fill", "gather", "gather_nd", "identity_n",
    "linspace", "meshgrid", "pad", "rank", "repeat", "reverse", "roll", "saturate_cast",
    "scatter_nd", "searchsorted", "sequence_mask", "shape", "shape_n", "size", "slice", "sort",
    "argsort", "split", "stack", "tensor_scatter_nd_add", "tensor_scatter_nd_update", "tile",
    "unique", "unstack", "where",
]  # fmt: skip
