"""Reduction ops: sum, mean, max over axes, argmax, and sum-to-shape (the gradient of broadcasting).

Split from :mod:`ipusim.graph.ops.math`, which re-exports every public name defined here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.ops.math import (
    FLOPS_PER_ELEMENT,
    axis_attr,
    merge_shapes,
    normalize_axes,
    require_float,
)
from ipusim.graph.spec import Array, Shape, TensorSpec, canonical_dtype
from ipusim.kernels import elementwise as k
from ipusim.kernels import reduce as kr


def _reduced_shape(shape: Shape, axes: tuple[int, ...], keepdims: bool) -> Shape:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class _Reduce(Op):
    kind = "reduction"
    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, x: TensorSpec, *, axis: object = None, keepdims: bool = False) -> TensorSpec:
        require_float(self.name, "x", x)
        axes = normalize_axes(self.name, axis, x.rank)
        return TensorSpec(_reduced_shape(x.shape, axes, keepdims), x.dtype)

    def forward(
        self, ctx: ExecContext, x: Array, *, axis: object = None, keepdims: bool = False
    ) -> Array:
        return self.kernel_fn(x, normalize_axes(self.name, axis, x.ndim), keepdims)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        flops = FLOPS_PER_ELEMENT[self.name] * in_specs[0].size
        return io_cost(flops, in_specs, out_specs, "reduction")


@register
class ReduceSum(_Reduce):
    name = "reduce_sum"
    kernel_fn = staticmethod(kr.reduce_sum)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x = node.inputs[0]
        axes = normalize_axes(self.name, node.attrs.get("axis"), x.ndim)
        if not node.attrs.get("keepdims", False) and axes:
            dy = apply1("expand_dims", dy, axis=axes)
        return [apply1("broadcast_like", dy, x)]


@register
class ReduceMean(_Reduce):
    name = "reduce_mean"
    kernel_fn = staticmethod(kr.reduce_mean)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("reduce_mean_grad", dy, node.inputs[0], **node.attrs)]


@register
class ReduceMax(_Reduce):
    name = "reduce_max"
    kernel_fn = staticmethod(kr.reduce_max)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("reduce_max_grad", dy, node.inputs[0], node.outputs[0], **node.attrs)]


class _ReduceGrad(Op):
    """Gradient of a reduction: a tensor of the input ``x``'s shape built from ``dy``."""

    kind = "elementwise"

    def infer(
        self,
        dy: TensorSpec,
        x: TensorSpec,
        *saved: TensorSpec,
        axis: object = None,
        keepdims: bool = False,
    ) -> TensorSpec:
        axes = normalize_axes(self.name, axis, x.rank)
        want = _reduced_shape(x.shape, axes, keepdims)
        merge_shapes(self.name, dy, TensorSpec(want, x.dtype), "dy and the reduced x")
        return TensorSpec(x.shape, x.dtype)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        # x is read only for its shape by reduce_mean_grad; reduce_max_grad compares against it.
        read_specs = in_specs if self.name == "reduce_max_grad" else in_specs[:1]
        flops = FLOPS_PER_ELEMENT[self.name] * out_specs[0].size
        return io_cost(flops, read_specs, out_specs, self.kind)


@register
class ReduceMeanGrad(_ReduceGrad):
    """``dy / count`` repeated over the reduced axes (count known at run time)."""

    name = "reduce_mean_grad"

    def forward(
        self, ctx: ExecContext, dy: Array, x: Array, *, axis: object = None, keepdims: bool = False
    ) -> Array:
        axes = normalize_axes(self.name, axis, x.ndim)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        return kr.broadcast_reduced(dy, x.shape, axes, 1.0 / count if count else np.nan)


@register
class ReduceMaxGrad(_ReduceGrad):
    """``dy`` shared equally by the maxima of each reduced slice (TensorFlow's rule)."""

    name = "reduce_max_grad"

    def forward(
        self,
        ctx: ExecContext,
        dy: Array,
        x: Array,
        y: Array,
        *,
        axis: object = None,
        keepdims: bool = False,
    ) -> Array:
        return kr.reduce_max_grad(dy, x, y, normalize_axes(self.name, axis, x.ndim))


@register
class SumToShape(Op):
    """Sum over broadcast axes so the result has ``shape`` (the gradient of broadcasting).

    ``None`` in ``shape`` takes the run-time size of the matching axis of the input.
    """

    name = "sum_to_shape"
    kind = "reduction"

    def infer(self, x: TensorSpec, *, shape: Shape) -> TensorSpec:
        return TensorSpec(tuple(shape), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, shape: Shape) -> Array:
        lead = x.ndim - len(shape)
        known = tuple(x.shape[lead + i] if d is None else d for i, d in enumerate(shape))
        return k.sum_to_shape(x, known)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("broadcast_like", dy, node.inputs[0])]

    def cost(self, in_specs: Specs, out_specs: Specs, *, shape: Shape) -> OpCost:
        return io_cost(in_specs[0].size, in_specs, out_specs, "reduction")


@register
class Argmax(Op):
    """Index of the first maximum along ``axis`` (no gradient)."""

    name = "argmax"
    kind = "reduction"

    def infer(self, x: TensorSpec, *, axis: int = -1, output_type: str = "int64") -> TensorSpec:
        (ax,) = normalize_axes(self.name, axis, x.rank)
        if output_type not in ("int32", "int64"):
            raise InvalidTypeError(
                f"argmax: output_type must be int32 or int64, received {output_type!r}"
            )
        if x.shape[ax] == 0:
            raise ConfigurationError(f"argmax: axis {axis} of x (shape {x.shape}) is empty")
        return TensorSpec(x.shape[:ax] + x.shape[ax + 1 :], output_type)

    def forward(
        self, ctx: ExecContext, x: Array, *, axis: int = -1, output_type: str = "int64"
    ) -> Array:
        return kr.argmax(x, axis % x.ndim, output_type)

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(in_specs[0].size, in_specs, out_specs, "reduction")


def reduce_sum(x: TensorLike, axis: object = None, keepdims: bool = False) -> Symbol:
    """Sum over ``axis`` (None = all; int or tuple, negatives allowed)."""
    return apply1("reduce_sum", x, axis=axis_attr(axis), keepdims=bool(keepdims))


def reduce_mean(x: TensorLike, axis: object = None, keepdims: bool = False) -> Symbol:
    """Mean over ``axis`` (None = all; int or tuple, negatives allowed); NaN over empty axes."""
    return apply1("reduce_mean", x, axis=axis_attr(axis), keepdims=bool(keepdims))


def reduce_max(x: TensorLike, axis: object = None, keepdims: bool = False) -> Symbol:
    """Maximum over ``axis``; the gradient is shared equally by tied maxima, as TensorFlow."""
    return apply1("reduce_max", x, axis=axis_attr(axis), keepdims=bool(keepdims))


def argmax(x: TensorLike, axis: int = -1, output_type: object = "int64") -> Symbol:
    """Index of the first maximum along ``axis``, as ``output_type`` (int32 or int64)."""
    return apply1("argmax", x, axis=int(axis), output_type=canonical_dtype(output_type))
