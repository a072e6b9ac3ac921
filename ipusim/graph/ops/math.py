"""Elementwise binary, comparison, cast and pass-through ops; binary ops broadcast like NumPy.

This module is also the public surface of the elementwise family: the shared rules
(:mod:`~ipusim.graph.ops._elementwise`), the unary ops (:mod:`~ipusim.graph.ops.unary`) and the
reductions (:mod:`~ipusim.graph.ops.reduce`) are importable from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, no_gradient, register
from ipusim.graph.ops._elementwise import FLOPS_PER_ELEMENT as FLOPS_PER_ELEMENT
from ipusim.graph.ops._elementwise import axis_attr as axis_attr
from ipusim.graph.ops._elementwise import broadcast_shape as broadcast_shape
from ipusim.graph.ops._elementwise import merge_shapes as merge_shapes
from ipusim.graph.ops._elementwise import normalize_axes as normalize_axes
from ipusim.graph.ops._elementwise import require_float as require_float
from ipusim.graph.ops._elementwise import unbroadcast as unbroadcast
from ipusim.graph.ops.unary import ElementwiseOp
from ipusim.graph.spec import FLOAT_DTYPES, Array, TensorSpec, canonical_dtype
from ipusim.kernels import elementwise as k


# ---------------------------------------------------------------------------- binary ops
class _Binary(ElementwiseOp):
    kernel_fn: ClassVar[Callable[..., Array]]
    float_only: ClassVar[bool] = False

    def infer(self, a: TensorSpec, b: TensorSpec) -> TensorSpec:
        if a.dtype != b.dtype:
            raise InvalidTypeError(
                f"{self.name}: operands have dtypes {a.dtype} and {b.dtype}; cast one so both match"
            )
        if self.float_only:
            require_float(self.name, "a", a)
        return TensorSpec(broadcast_shape(self.name, a.shape, b.shape), a.dtype)

    def forward(self, ctx: ExecContext, a: Array, b: Array) -> Array:
        return self.kernel_fn(a, b)


@register
class Add(_Binary):
    name = "add"
    kernel_fn = staticmethod(k.add)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs
        return [unbroadcast(dy, a), unbroadcast(dy, b)]


@register
class Subtract(_Binary):
    name = "subtract"
    kernel_fn = staticmethod(k.subtract)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs
        return [unbroadcast(dy, a), unbroadcast(negative(dy), b)]


@register
class Multiply(_Binary):
    name = "multiply"
    kernel_fn = staticmethod(k.multiply)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs
        return [unbroadcast(multiply(dy, b), a), unbroadcast(multiply(dy, a), b)]


@register
class Divide(_Binary):
    name = "divide"
    kernel_fn = staticmethod(k.divide)
    float_only = True

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs
        dy_over_b = divide(dy, b)  # d/da = dy / b;  d/db = -dy a / b² = -(dy / b) * y
        return [
            unbroadcast(dy_over_b, a),
            unbroadcast(negative(multiply(dy_over_b, node.outputs[0])), b),
        ]


class _Extremum(_Binary):
    masks: ClassVar[tuple[str, str]]  # which of a, b receives dy, as masked_grad modes

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs  # ties go to a, as TensorFlow's x >= y mask
        return [unbroadcast(masked_grad(dy, a, b, m), x) for m, x in zip(self.masks, (a, b))]


@register
class Maximum(_Extremum):
    name = "maximum"
    kernel_fn = staticmethod(k.maximum)
    masks = ("ge", "lt")


@register
class Minimum(_Extremum):
    name = "minimum"
    kernel_fn = staticmethod(k.minimum)
    masks = ("le", "gt")


@register
class Equal(_Binary):
    name = "equal"
    kernel_fn = staticmethod(k.equal)

    def infer(self, a: TensorSpec, b: TensorSpec) -> TensorSpec:
        return super().infer(a, b).with_dtype("bool")

    gradient = no_gradient


@register
class MaskedGrad(ElementwiseOp):
    """``dy`` where ``a <mode> b`` (mode ge, gt, le, lt), else 0: the gradient of max / min."""

    name = "masked_grad"

    def infer(self, dy: TensorSpec, a: TensorSpec, b: TensorSpec, *, mode: str) -> TensorSpec:
        if mode not in ("ge", "gt", "le", "lt"):
            raise ConfigurationError(
                f"masked_grad: mode must be one of ge, gt, le, lt, received {mode!r}"
            )
        broadcast_shape(self.name, broadcast_shape(self.name, a.shape, b.shape), dy.shape)
        return TensorSpec(dy.shape, dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, a: Array, b: Array, *, mode: str) -> Array:
        return k.masked_grad(dy, a, b, mode)


def add(a: TensorLike, b: TensorLike) -> Symbol:
    """Elementwise ``a + b`` with broadcasting."""
    return apply1("add", a, b)


def subtract(a: TensorLike, b: TensorLike) -> Symbol:
    """Elementwise ``a - b`` with broadcasting."""
    return apply1("subtract", a, b)


def multiply(a: TensorLike, b: TensorLike) -> Symbol:
    """Elementwise ``a * b`` with broadcasting."""
    return apply1("multiply", a, b)


def divide(a: TensorLike, b: TensorLike) -> Symbol:
    """Elementwise ``a / b`` with broadcasting (float operands)."""
    return apply1("divide", a, b)


def maximum(a: TensorLike, b: TensorLike) -> Symbol:
    """Elementwise maximum with broadcasting; the gradient goes to ``a`` on ties."""
    return apply1("maximum", a, b)


def minimum(a: TensorLike, b: TensorLike) -> Symbol:
    """Elementwise minimum with broadcasting; the gradient goes to ``a`` on ties."""
    return apply1("minimum", a, b)


def equal(a: TensorLike, b: TensorLike) -> Symbol:
    """Elementwise ``a == b`` with broadcasting, as a bool tensor (no gradient)."""
    return apply1("equal", a, b)


def masked_grad(dy: TensorLike, a: TensorLike, b: TensorLike, mode: str) -> Symbol:
    """``dy`` where ``a <mode> b`` holds (mode ge, gt, le or lt), else 0."""
    return apply1("masked_grad", dy, a, b, mode=mode)


# ---------------------------------------------------------------------------- casts and identities
@register
class Cast(ElementwiseOp):
    """Convert to ``dtype``. Gradient: cast back between float dtypes, none otherwise."""

    name = "cast"

    def infer(self, x: TensorSpec, *, dtype: str) -> TensorSpec:
        return TensorSpec(x.shape, dtype)

    def forward(self, ctx: ExecContext, x: Array, *, dtype: str) -> Array:
        return k.cast(x, dtype)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        x = node.inputs[0]
        if x.dtype in FLOAT_DTYPES and dy.dtype in FLOAT_DTYPES:
            return [cast(dy, x.dtype)]
        return [None]


class _PassThrough(Op):
    """Returns its input unchanged (no copy, so no cost: Poplar aliases the tensor)."""

    kind = "data_movement"

    def infer(self, x: TensorSpec) -> TensorSpec:
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array) -> Array:
        return x

    def cost(self, in_specs: Specs, out_specs: Specs) -> OpCost:
        return OpCost(0, 0, 0, "data_movement")

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        return [dy]


@register
class Identity(_PassThrough):
    name = "identity"


@register
class RecomputationCheckpoint(_PassThrough):
    """A value a pipeline stage stashes instead of recomputing
    (``pipelining_ops.recomputation_checkpoint``; see :mod:`ipusim.lowering.recompute`)."""

    name = "recomputation_checkpoint"


@register
class StopGradient(_PassThrough):
    name = "stop_gradient"

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        return [None]


def cast(x: TensorLike, dtype: object) -> Symbol:
    """``x`` converted to ``dtype``; returns ``x`` itself when it already has that dtype (as TF)."""
    dtype = canonical_dtype(dtype)
    if isinstance(x, Symbol) and x.dtype == dtype:
        return x
    return apply1("cast", x, dtype=dtype)


def identity(x: TensorLike) -> Symbol:
    """``x`` unchanged (a new node; the gradient passes through)."""
    return apply1("identity", x)


def recomputation_checkpoint(x: TensorLike) -> Symbol:
    """``x`` unchanged, marked as a recomputation checkpoint (kept, not recomputed)."""
    return apply1("recomputation_checkpoint", x)


def stop_gradient(x: TensorLike) -> Symbol:
    """``x`` unchanged in the forward pass; no gradient flows back through it."""
    return apply1("stop_gradient", x)


# The unary ops live in their own module; they are part of this module's public surface.
# Reductions live in their own module; they are part of this module's public surface.
from ipusim.graph.ops.reduce import argmax as argmax  # noqa: E402
from ipusim.graph.ops.reduce import reduce_max as reduce_max  # noqa: E402
from ipusim.graph.ops.reduce import reduce_mean as reduce_mean  # noqa: E402
from ipusim.graph.ops.reduce import reduce_sum as reduce_sum  # noqa: E402
from ipusim.graph.ops.unary import abs as abs  # noqa: E402
from ipusim.graph.ops.unary import clip as clip  # noqa: E402
from ipusim.graph.ops.unary import exp as exp  # noqa: E402
from ipusim.graph.ops.unary import gelu as gelu  # noqa: E402
from ipusim.graph.ops.unary import gelu_grad as gelu_grad  # noqa: E402
from ipusim.graph.ops.unary import log as log  # noqa: E402
from ipusim.graph.ops.unary import negative as negative  # noqa: E402
from ipusim.graph.ops.unary import relu as relu  # noqa: E402
from ipusim.graph.ops.unary import relu_grad as relu_grad  # noqa: E402
from ipusim.graph.ops.unary import sigmoid as sigmoid  # noqa: E402
from ipusim.graph.ops.unary import sigmoid_grad as sigmoid_grad  # noqa: E402
from ipusim.graph.ops.unary import softplus as softplus  # noqa: E402
from ipusim.graph.ops.unary import sqrt as sqrt  # noqa: E402
from ipusim.graph.ops.unary import square as square  # noqa: E402
from ipusim.graph.ops.unary import tanh as tanh  # noqa: E402
from ipusim.graph.ops.unary import tanh_grad as tanh_grad  # noqa: E402
