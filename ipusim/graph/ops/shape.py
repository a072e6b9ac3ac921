"""Shape and layout ops: reshape, transpose, expand/squeeze, concat/split/slice, pad, broadcast, tile.

Views (reshape, reshape_like, expand_dims, squeeze) cost nothing: Poplar reshapes a tensor by
relabelling its elements, with no copy. The copying ops (transpose, concat, slice, pad, broadcast,
tile) are ``data_movement``: no FLOPs, the bytes they read and write.
"""

from __future__ import annotations

import math as _pymath
from collections.abc import Iterable, Sequence
from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.ops._window import known_dims
from ipusim.graph.ops.math import broadcast_shape, normalize_axes, reduce_sum
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import layout as k


def _rank_of(x: object) -> int:
    return x.ndim if hasattr(x, "ndim") else len(getattr(x, "shape", ()))


def _known_prod(dims: Iterable[int | None]) -> int:
    return _pymath.prod(d for d in dims if d is not None)


def _padded(x: TensorSpec, paddings: tuple[tuple[int, int], ...], sign: int) -> TensorSpec:
    """``x`` with ``(before, after)`` elements added (``sign`` 1) or removed (-1) on every axis."""
    pairs = zip(x.shape, paddings, strict=True)
    return TensorSpec(
        tuple(None if d is None else d + sign * (b + a) for d, (b, a) in pairs), x.dtype
    )


class _View(Op):
    kind = "data_movement"

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return OpCost(0, 0, 0, "data_movement")

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        return [reshape_like(dy, node.inputs[0])] + [None] * (len(node.inputs) - 1)


class _Copy(Op):
    """An op that copies data: no FLOPs, its inputs read and output written (Op's default cost)."""

    kind = "data_movement"


# ---------------------------------------------------------------------------- views
@register
class Reshape(_View):
    """Reshape to ``shape`` (at most one -1, which is inferred; ``None`` is read as -1)."""

    name = "reshape"

    def infer(self, x: TensorSpec, *, shape: Shape) -> TensorSpec:
        target = tuple(-1 if d is None else int(d) for d in shape)
        if target.count(-1) > 1 or any(d < -1 for d in target):
            raise ConfigurationError(
                f"reshape: shape {shape} may hold at most one -1 and no other negative size"
            )
        known_out = _known_prod(d for d in target if d != -1)
        if x.is_fully_defined:
            if -1 in target:
                if known_out == 0 or x.size % known_out:
                    raise ConfigurationError(
                        f"reshape: cannot reshape a tensor of shape {x.shape} "
                        f"({x.size} elements) into {shape}: {x.size} is not a "
                        f"multiple of {known_out}"
                    )
                target = tuple(x.size // known_out if d == -1 else d for d in target)
            elif known_out != x.size:
                raise ConfigurationError(
                    f"reshape: cannot reshape a tensor of shape {x.shape} "
                    f"({x.size} elements) into {shape} ({known_out} elements)"
                )
            return TensorSpec(target, x.dtype)
        known_in = _known_prod(x.shape)
        if -1 not in target and known_in and known_out % known_in:
            raise ConfigurationError(
                f"reshape: a tensor of shape {x.shape} holds a multiple of {known_in} "
                f"elements, which can never fill shape {shape} ({known_out} elements)"
            )
        return TensorSpec(tuple(None if d == -1 else d for d in target), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, shape: Shape) -> Array:
        target = tuple(-1 if d is None else d for d in shape)
        try:
            return x.reshape(target)
        except ValueError:
            raise ConfigurationError(
                f"reshape: cannot reshape an array of shape {x.shape} ({x.size} "
                f"elements) into {shape}"
            ) from None


@register
class ReshapeLike(_View):
    """Reshape ``x`` to the run-time shape of ``like`` (used by gradients of views)."""

    name = "reshape_like"

    def infer(self, x: TensorSpec, like: TensorSpec) -> TensorSpec:
        if x.is_fully_defined and like.is_fully_defined and x.size != like.size:
            raise ConfigurationError(
                f"reshape_like: x of shape {x.shape} cannot take the shape {like.shape} of like"
            )
        return TensorSpec(like.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, like: Array) -> Array:
        return x.reshape(like.shape)


@register
class ExpandDims(_View):
    """Insert size-1 axes at ``axis`` (an int or a tuple of positions in the result)."""

    name = "expand_dims"

    def _expanded(self, shape: Shape, axis: int | Sequence[int]) -> Shape:
        rank = len(shape) + (1 if isinstance(axis, int) else len(axis))
        axes = normalize_axes(self.name, axis, rank)
        dims = iter(shape)
        return tuple(1 if i in axes else next(dims) for i in range(rank))

    def infer(self, x: TensorSpec, *, axis: Any) -> TensorSpec:
        return TensorSpec(self._expanded(x.shape, axis), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, axis: Any) -> Array:
        return x.reshape(known_dims(self._expanded(x.shape, axis)))


@register
class Squeeze(_View):
    """Remove size-1 axes: those in ``axis``, or every known size-1 axis when ``axis`` is None."""

    name = "squeeze"

    def infer(self, x: TensorSpec, *, axis: object = None) -> TensorSpec:
        if axis is None:
            axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
        else:
            axes = normalize_axes(self.name, axis, x.rank)
            bad = [a for a in axes if x.shape[a] not in (1, None)]
            if bad:
                raise ConfigurationError(
                    f"squeeze: axis {bad[0]} of x (shape {x.shape}) has size "
                    f"{x.shape[bad[0]]}, not 1; only size-1 axes can be removed"
                )
        return TensorSpec(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, axis: object = None) -> Array:
        if axis is None:
            return x.reshape(tuple(d for d in x.shape if d != 1))
        axes = normalize_axes(self.name, axis, x.ndim)
        if any(x.shape[a] != 1 for a in axes):
            raise ConfigurationError(
                f"squeeze: axes {axes} of an array of shape {x.shape} are not all 1"
            )
        return x.reshape(tuple(d for i, d in enumerate(x.shape) if i not in axes))


def reshape(x: TensorLike, shape: Sequence[int | None]) -> Symbol:
    """Reshape to ``shape`` (at most one -1). An unknown batch size stays unknown:
    ``(None, 28, 28)`` reshaped to ``(-1, 784)`` is ``(None, 784)``."""
    return apply1("reshape", x, shape=tuple(None if d is None else int(d) for d in shape))


def reshape_like(x: TensorLike, like: TensorLike) -> Symbol:
    """Reshape ``x`` to the shape ``like`` has at run time."""
    return apply1("reshape_like", x, like)


def flatten(x: TensorLike) -> Symbol:
    """Keep axis 0, flatten the rest: ``(b, d1, d2, ...)`` to ``(b, d1 * d2 * ...)``."""
    x = x if isinstance(x, Symbol) else apply1("identity", x)
    rest = x.shape[1:]
    if None not in rest:
        return reshape(x, (-1, _pymath.prod(known_dims(rest))))
    if x.shape[0] is not None:
        return reshape(x, (x.shape[0], -1))
    raise ConfigurationError(
        f"flatten: x has shape {x.shape}; with an unknown batch size the other "
        "dimensions must be known"
    )


def expand_dims(x: TensorLike, axis: int | Sequence[int]) -> Symbol:
    """Insert size-1 axes at ``axis`` (positions in the result; negatives count from its end)."""
    return apply1(
        "expand_dims", x, axis=int(axis) if isinstance(axis, int) else tuple(int(a) for a in axis)
    )


def squeeze(x: TensorLike, axis: int | Sequence[int] | None = None) -> Symbol:
    """Remove size-1 axes (``axis`` or, when None, every size-1 axis)."""
    return apply1(
        "squeeze",
        x,
        axis=None
        if axis is None
        else (int(axis) if isinstance(axis, int) else tuple(int(a) for a in axis)),
    )


# ---------------------------------------------------------------------------- copies
@register
class Transpose(_Copy):
    """Permute axes: output axis ``i`` is input axis ``perm[i]``."""

    name = "transpose"

    def infer(self, x: TensorSpec, *, perm: tuple[int, ...]) -> TensorSpec:
        if sorted(perm) != list(range(x.rank)):
            raise ConfigurationError(
                f"transpose: perm {perm} is not a permutation of the {x.rank} axes "
                f"of x (shape {x.shape})"
            )
        return TensorSpec(tuple(x.shape[p] for p in perm), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, perm: tuple[int, ...]) -> Array:
        return k.transpose(x, perm)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        perm = node.attrs["perm"]
        return [transpose(dy, tuple(sorted(range(len(perm)), key=perm.__getitem__)))]


@register
class Concat(_Copy):
    """Join any number of inputs along ``axis``."""

    name = "concat"

    def infer(self, *values: TensorSpec, axis: int) -> TensorSpec:
        if not values:
            raise ConfigurationError("concat: values is empty; pass a list of at least one tensor")
        first = values[0]
        if first.rank == 0:
            raise ConfigurationError(
                "concat: scalars cannot be concatenated; expand_dims them first"
            )
        (ax,) = normalize_axes(self.name, axis, first.rank)
        shape = list(first.shape)
        for i, v in enumerate(values[1:], 1):
            if v.dtype != first.dtype or v.rank != first.rank:
                raise ConfigurationError(
                    f"concat: values[{i}] has shape {v.shape} and dtype {v.dtype}, "
                    f"values[0] has {first.shape} and {first.dtype}; all values must "
                    "have the same rank and dtype"
                )
            for d, (a, b) in enumerate(zip(shape, v.shape, strict=True)):
                if d == ax:
                    shape[d] = None if a is None or b is None else a + b
                elif a is not None and b is not None and a != b:
                    raise ConfigurationError(
                        f"concat: values[{i}] has shape {v.shape}, which differs "
                        f"from {tuple(shape)} on axis {d} (only axis {axis} may "
                        "differ)"
                    )
                elif a is None:
                    shape[d] = b
        return TensorSpec(tuple(shape), first.dtype)

    def forward(self, ctx: ExecContext, *arrays: Array, axis: int) -> Array:
        return k.concat(arrays, axis % arrays[0].ndim)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        (ax,) = normalize_axes(self.name, node.attrs["axis"], dy.ndim)
        shapes = [v.shape[ax] for v in node.inputs]
        if None in shapes:
            raise UnsupportedError(
                f"concat: the gradient needs the sizes along axis {ax} "
                f"to be known, received input shapes "
                f"{[v.shape for v in node.inputs]}"
            )
        sizes = known_dims(tuple(shapes))
        begins = [sum(sizes[:i]) for i in range(len(sizes))]
        return [slice_axis(dy, b, s, ax) for b, s in zip(begins, sizes, strict=True)]


@register
class Slice(_Copy):
    """``x[begin[i] : begin[i] + size[i]]`` on every axis, as tf.slice (size -1 = to the end)."""

    name = "slice"

    def infer(self, x: TensorSpec, *, begin: tuple[int, ...], size: tuple[int, ...]) -> TensorSpec:
        if len(begin) != x.rank or len(size) != x.rank:
            raise ConfigurationError(
                f"slice: begin {begin} and size {size} need one entry per axis of x "
                f"(shape {x.shape})"
            )
        out = []
        for d, b, s in zip(x.shape, begin, size, strict=True):
            if b < 0 or s < -1 or (d is not None and b + max(s, 0) > d):
                raise ConfigurationError(
                    f"slice: begin {begin} with size {size} is outside x of shape {x.shape}"
                )
            out.append(s if s != -1 else (None if d is None else d - b))
        return TensorSpec(tuple(out), x.dtype)

    def forward(
        self, ctx: ExecContext, x: Array, *, begin: tuple[int, ...], size: tuple[int, ...]
    ) -> Array:
        return k.slice_(x, begin, size)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x = node.inputs[0]
        paddings = []
        for d, b, s in zip(x.shape, node.attrs["begin"], node.attrs["size"], strict=True):
            if s == -1:
                paddings.append((b, 0))
            elif d is None:
                raise UnsupportedError(
                    f"slice: the gradient needs the sliced sizes of x "
                    f"known, received shape {x.shape}"
                )
            else:
                paddings.append((b, d - b - s))
        return [pad(dy, tuple(paddings))]


@register
class Pad(_Copy):
    """Surround with ``(before, after)`` copies of ``constant_values`` on every axis."""

    name = "pad"

    def infer(
        self, x: TensorSpec, *, paddings: tuple[tuple[int, int], ...], constant_values: float = 0.0
    ) -> TensorSpec:
        if len(paddings) != x.rank or any(len(p) != 2 or min(p) < 0 for p in paddings):
            raise ConfigurationError(
                f"pad: paddings must hold one (before, after) pair of non-negative "
                f"ints per axis of x (shape {x.shape}), received {paddings}"
            )
        return _padded(x, paddings, 1)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        *,
        paddings: tuple[tuple[int, int], ...],
        constant_values: float = 0.0,
    ) -> Array:
        return k.pad(x, paddings, constant_values)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("unpad", dy, paddings=node.attrs["paddings"])]


@register
class Unpad(_Copy):
    """Drop ``(before, after)`` elements on every axis (the gradient of pad)."""

    name = "unpad"

    def infer(self, x: TensorSpec, *, paddings: tuple[tuple[int, int], ...]) -> TensorSpec:
        return _padded(x, paddings, -1)

    def forward(
        self, ctx: ExecContext, x: Array, *, paddings: tuple[tuple[int, int], ...]
    ) -> Array:
        return k.unpad(x, paddings)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [pad(dy, node.attrs["paddings"])]


@register
class BroadcastTo(_Copy):
    """Repeat ``x`` to ``shape`` by NumPy broadcasting."""

    name = "broadcast_to"

    def infer(self, x: TensorSpec, *, shape: Shape) -> TensorSpec:
        if broadcast_shape(self.name, x.shape, shape) != tuple(shape):
            raise ConfigurationError(
                f"broadcast_to: x of shape {x.shape} cannot be broadcast to {shape}"
            )
        return TensorSpec(tuple(shape), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, shape: Shape) -> Array:
        return k.broadcast_to(x, known_dims(shape))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("sum_to_shape", dy, shape=node.inputs[0].shape)]


@register
class BroadcastLike(_Copy):
    """Repeat ``x`` to the run-time shape of ``like`` (which is read only for its shape)."""

    name = "broadcast_like"

    def infer(self, x: TensorSpec, like: TensorSpec) -> TensorSpec:
        if x.rank > like.rank:
            raise ConfigurationError(
                f"broadcast_like: x of shape {x.shape} has more axes than like ({like.shape})"
            )
        broadcast_shape(self.name, x.shape, like.shape)
        return TensorSpec(like.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, like: Array) -> Array:
        return k.broadcast_to(x, like.shape)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        return [apply1("sum_to_shape", dy, shape=node.inputs[0].shape), None]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(0, in_specs[:1], out_specs, "data_movement")


@register
class Tile(_Copy):
    """Repeat ``x`` ``multiples[i]`` times along axis ``i``."""

    name = "tile"

    def infer(self, x: TensorSpec, *, multiples: tuple[int, ...]) -> TensorSpec:
        if len(multiples) != x.rank or any(m < 0 for m in multiples):
            raise ConfigurationError(
                f"tile: multiples must hold one non-negative int per axis of x "
                f"(shape {x.shape}), received {multiples}"
            )
        return TensorSpec(
            tuple(None if d is None else d * m for d, m in zip(x.shape, multiples, strict=True)),
            x.dtype,
        )

    def forward(self, ctx: ExecContext, x: Array, *, multiples: tuple[int, ...]) -> Array:
        return k.tile(x, multiples)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x = node.inputs[0]
        if not x.spec.is_fully_defined:
            raise UnsupportedError(
                f"tile: the gradient needs the shape of x known, received {x.shape}"
            )
        # dy viewed as (m0, d0, m1, d1, ...) summed over the repeat axes.
        split = tuple(
            v for m, d in zip(node.attrs["multiples"], x.shape, strict=True) for v in (m, d)
        )
        summed = reduce_sum(reshape(dy, split), axis=tuple(range(0, 2 * x.ndim, 2)))
        return [summed]


def transpose(x: TensorLike, perm: Sequence[int] | None = None) -> Symbol:
    """Permute axes (default: reverse them)."""
    if perm is None:
        perm = tuple(reversed(range(_rank_of(x))))
    return apply1("transpose", x, perm=tuple(int(p) for p in perm))


def concat(values: Sequence[TensorLike], axis: int) -> Symbol:
    """Join the tensors in ``values`` along ``axis``."""
    return apply1("concat", *values, axis=int(axis))


def slice(x: TensorLike, begin: Sequence[int], size: Sequence[int]) -> Symbol:
    """``tf.slice``: ``size[i]`` elements from ``begin[i]`` on every axis (-1 = to the end)."""
    return apply1("slice", x, begin=tuple(int(b) for b in begin), size=tuple(int(s) for s in size))


def slice_axis(x: TensorLike, begin: int, size: int, axis: int) -> Symbol:
    """``size`` elements from ``begin`` along ``axis`` only (-1 = to the end)."""
    rank = _rank_of(x)
    (ax,) = normalize_axes("slice_axis", axis, rank)
    begins = tuple(int(begin) if i == ax else 0 for i in range(rank))
    sizes = tuple(int(size) if i == ax else -1 for i in range(rank))
    return slice(x, begins, sizes)


def split(
    x: TensorLike, num_or_size_splits: int | Sequence[int], axis: int = 0
) -> tuple[Symbol, ...]:
    """Split along ``axis`` into equal parts (an int) or parts of the given sizes (one may be -1).

    Each part is its own ``slice`` node, so the gradient of each pads it back independently.
    """
    x = x if isinstance(x, Symbol) else apply1("identity", x)
    (ax,) = normalize_axes("split", axis, x.ndim)
    dim = x.shape[ax]
    if isinstance(num_or_size_splits, int):
        num = num_or_size_splits
        if dim is None or num <= 0 or dim % num:
            raise ConfigurationError(
                f"split: axis {axis} of x (shape {x.shape}) must have a known size "
                f"divisible by num_or_size_splits ({num})"
            )
        sizes = [dim // num] * num
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
            raise ConfigurationError(
                f"split: sizes {sizes} may hold at most one -1 and no other negative"
            )
        if -1 in sizes:
            if dim is None:
                raise ConfigurationError(
                    f"split: a -1 size needs axis {axis} of x (shape {x.shape}) known"
                )
            sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
        if dim is not None and (sum(sizes) != dim or min(sizes) < 0):
            raise ConfigurationError(
                f"split: sizes {list(num_or_size_splits)} do not add up to {dim}, "
                f"the size of axis {axis} of x (shape {x.shape})"
            )
    begins = [sum(sizes[:i]) for i in range(len(sizes))]
    return tuple(slice_axis(x, b, s, ax) for b, s in zip(begins, sizes, strict=True))


def pad(x: TensorLike, paddings: Sequence[Sequence[int]], constant_values: float = 0.0) -> Symbol:
    """Pad every axis with ``(before, after)`` elements of ``constant_values``."""
    return apply1(
        "pad",
        x,
        paddings=tuple((int(b), int(a)) for b, a in paddings),
        constant_values=float(constant_values),
    )


def broadcast_to(x: TensorLike, shape: Sequence[int]) -> Symbol:
    """Repeat ``x`` to ``shape`` by broadcasting (sizes must be known)."""
    return apply1("broadcast_to", x, shape=tuple(int(d) for d in shape))


def broadcast_like(x: TensorLike, like: TensorLike) -> Symbol:
    """Repeat ``x`` to the shape ``like`` has at run time."""
    return apply1("broadcast_like", x, like)


def tile(x: TensorLike, multiples: Sequence[int]) -> Symbol:
    """Repeat ``x`` ``multiples[i]`` times along axis ``i``."""
    return apply1("tile", x, multiples=tuple(int(m) for m in multiples))
