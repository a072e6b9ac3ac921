"""Elementwise, comparison, cast and reduction ops. Binary ops broadcast like NumPy.

Gradient rules that need a shape op (``expand_dims``, ``broadcast_like``) call it by name through
:func:`apply`, so this module does not import :mod:`ipusim.graph.ops.shape` (which imports this one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_bytes, register
from ipusim.graph.spec import FLOAT_DTYPES, Array, Shape, TensorSpec, canonical_dtype
from ipusim.kernels import elementwise as k

if TYPE_CHECKING:
    from ipusim.graph.execute import ExecContext

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


def normalize_axes(op: str, axis: Any, rank: int) -> tuple[int, ...]:
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


def axis_attr(axis: Any) -> Any:
    """An ``axis`` argument as a hashable attribute (lists become tuples, NumPy ints become int)."""
    if isinstance(axis, np.integer):
        return int(axis)
    if isinstance(axis, list | tuple):
        return tuple(int(a) if isinstance(a, np.integer) else a for a in axis)
    return axis  # None, an int, or something normalize_axes will reject with a clear message


def _elementwise_cost(
    name: str,
    in_specs: Specs,
    out_specs: Specs,
    kind: str = "elementwise",
) -> OpCost:
    read, written = io_bytes(in_specs, out_specs)
    return OpCost(FLOPS_PER_ELEMENT[name] * sum(s.size for s in out_specs), read, written, kind)


def unbroadcast(dy: Symbol, like: Symbol) -> Symbol:
    """Sum ``dy`` back to the shape of ``like`` (undoing broadcasting)."""
    if dy.shape == like.shape:
        return dy
    return apply1("sum_to_shape", dy, shape=like.shape)


# ---------------------------------------------------------------------------- binary ops
class _Binary(Op):
    kind = "elementwise"
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

    def cost(self, in_specs: Specs, out_specs: Specs) -> OpCost:
        return _elementwise_cost(self.name, in_specs, out_specs)


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


@register
class Maximum(_Binary):
    name = "maximum"
    kernel_fn = staticmethod(k.maximum)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs  # ties go to a, as TensorFlow's x >= y mask
        return [
            unbroadcast(masked_grad(dy, a, b, "ge"), a),
            unbroadcast(masked_grad(dy, a, b, "lt"), b),
        ]


@register
class Minimum(_Binary):
    name = "minimum"
    kernel_fn = staticmethod(k.minimum)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs
        return [
            unbroadcast(masked_grad(dy, a, b, "le"), a),
            unbroadcast(masked_grad(dy, a, b, "gt"), b),
        ]


@register
class Equal(_Binary):
    name = "equal"
    kernel_fn = staticmethod(k.equal)

    def infer(self, a: TensorSpec, b: TensorSpec) -> TensorSpec:
        return super().infer(a, b).with_dtype("bool")

    def gradient(self, node: Node, dy: Symbol) -> list[None]:
        return [None, None]


@register
class MaskedGrad(Op):
    """``dy`` where ``a <mode> b`` (mode ge, gt, le, lt), else 0: the gradient of max / min."""

    name = "masked_grad"
    kind = "elementwise"

    def infer(self, dy: TensorSpec, a: TensorSpec, b: TensorSpec, *, mode: str) -> TensorSpec:
        if mode not in ("ge", "gt", "le", "lt"):
            raise ConfigurationError(
                f"masked_grad: mode must be one of ge, gt, le, lt, received {mode!r}"
            )
        broadcast_shape(self.name, broadcast_shape(self.name, a.shape, b.shape), dy.shape)
        return TensorSpec(dy.shape, dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, a: Array, b: Array, *, mode: str) -> Array:
        return k.masked_grad(dy, a, b, mode)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        return _elementwise_cost(self.name, in_specs, out_specs)


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


# ---------------------------------------------------------------------------- unary ops
class _Unary(Op):
    kind = "elementwise"
    kernel_fn: ClassVar[Callable[..., Array]]
    float_only: ClassVar[bool] = True

    def infer(self, x: TensorSpec, **attrs: Any) -> TensorSpec:
        if self.float_only:
            require_float(self.name, "x", x)
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, **attrs: Any) -> Array:
        return self.kernel_fn(x, **attrs)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        return _elementwise_cost(self.name, in_specs, out_specs)


class _UnaryGrad(Op):
    """``dx`` from ``dy`` and one saved value ``v`` (the op's input or output) of the same shape."""

    kind = "elementwise"
    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, dy: TensorSpec, v: TensorSpec, **attrs: Any) -> TensorSpec:
        require_float(self.name, "dy", dy)
        return TensorSpec(merge_shapes(self.name, dy, v), dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, v: Array, **attrs: Any) -> Array:
        return self.kernel_fn(dy, v, **attrs)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        return _elementwise_cost(self.name, in_specs, out_specs)


def _grad_op(op_name: str, fn: Callable[..., Array]) -> type[_UnaryGrad]:
    cls = type(
        op_name.title().replace("_", ""),
        (_UnaryGrad,),
        {
            "name": op_name,
            "kernel_fn": staticmethod(fn),
            "__doc__": f"Gradient kernel op ``{op_name}(dy, v)``: {fn.__doc__}",
        },
    )
    return register(cls)


for _name in (
    "relu_grad",
    "sigmoid_grad",
    "tanh_grad",
    "gelu_grad",
    "softplus_grad",
    "sqrt_grad",
    "square_grad",
    "abs_grad",
    "clip_grad",
):
    _grad_op(_name, getattr(k, _name))


@register
class Negative(_Unary):
    name = "negative"
    kernel_fn = staticmethod(k.negative)
    float_only = False

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [negative(dy)]


@register
class Exp(_Unary):
    name = "exp"
    kernel_fn = staticmethod(k.exp)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [multiply(dy, node.outputs[0])]


@register
class Log(_Unary):
    name = "log"
    kernel_fn = staticmethod(k.log)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [divide(dy, node.inputs[0])]


@register
class Sqrt(_Unary):
    name = "sqrt"
    kernel_fn = staticmethod(k.sqrt)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("sqrt_grad", dy, node.outputs[0])]


@register
class Square(_Unary):
    name = "square"
    kernel_fn = staticmethod(k.square)
    float_only = False

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("square_grad", dy, node.inputs[0])]


@register
class Abs(_Unary):
    name = "abs"
    kernel_fn = staticmethod(k.abs_)
    float_only = False

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("abs_grad", dy, node.inputs[0])]


@register
class Relu(_Unary):
    name = "relu"
    kernel_fn = staticmethod(k.relu)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [relu_grad(dy, node.outputs[0])]


@register
class Sigmoid(_Unary):
    name = "sigmoid"
    kernel_fn = staticmethod(k.sigmoid)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [sigmoid_grad(dy, node.outputs[0])]


@register
class Tanh(_Unary):
    name = "tanh"
    kernel_fn = staticmethod(k.tanh)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [tanh_grad(dy, node.outputs[0])]


@register
class Gelu(_Unary):
    name = "gelu"
    kernel_fn = staticmethod(k.gelu)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [gelu_grad(dy, node.inputs[0], node.attrs.get("approximate", False))]


@register
class Softplus(_Unary):
    name = "softplus"
    kernel_fn = staticmethod(k.softplus)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("softplus_grad", dy, node.inputs[0])]


@register
class Clip(_Unary):
    name = "clip"
    kernel_fn = staticmethod(k.clip)

    # Clip's attributes are its own (as every op's are; see Op's base signatures).
    def infer(self, x: TensorSpec, *, lo: float, hi: float) -> TensorSpec:  # type: ignore[override]
        if not lo <= hi:
            raise ConfigurationError(f"clip: lo ({lo}) must not exceed hi ({hi})")
        return super().infer(x)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("clip_grad", dy, node.inputs[0], **node.attrs)]


def negative(x: TensorLike) -> Symbol:
    """``-x``."""
    return apply1("negative", x)


def exp(x: TensorLike) -> Symbol:
    """``e**x``."""
    return apply1("exp", x)


def log(x: TensorLike) -> Symbol:
    """Natural logarithm."""
    return apply1("log", x)


def sqrt(x: TensorLike) -> Symbol:
    """Square root."""
    return apply1("sqrt", x)


def square(x: TensorLike) -> Symbol:
    """``x * x``."""
    return apply1("square", x)


def abs(x: TensorLike) -> Symbol:
    """``|x|`` (gradient ``sign(x)``, 0 at 0), as tf.abs; shadows the builtin in this module."""
    return apply1("abs", x)


def relu(x: TensorLike) -> Symbol:
    """``max(x, 0)``."""
    return apply1("relu", x)


def sigmoid(x: TensorLike) -> Symbol:
    """``1 / (1 + e**-x)``."""
    return apply1("sigmoid", x)


def tanh(x: TensorLike) -> Symbol:
    """Hyperbolic tangent."""
    return apply1("tanh", x)


def gelu(x: TensorLike, approximate: bool = False) -> Symbol:
    """GELU ``x * Phi(x)`` (erf form), or its tanh approximation when ``approximate`` (as Keras)."""
    return apply1("gelu", x, approximate=bool(approximate))


def softplus(x: TensorLike) -> Symbol:
    """``log(1 + e**x)``, overflow-free."""
    return apply1("softplus", x)


def clip(x: TensorLike, lo: float, hi: float) -> Symbol:
    """``x`` clipped to ``[lo, hi]``; the gradient passes where ``lo <= x <= hi`` (as TF)."""
    return apply1("clip", x, lo=float(lo), hi=float(hi))


def relu_grad(dy: TensorLike, y: TensorLike) -> Symbol:
    """Gradient of relu from its output ``y``: ``dy`` where ``y > 0``."""
    return apply1("relu_grad", dy, y)


def sigmoid_grad(dy: TensorLike, y: TensorLike) -> Symbol:
    """Gradient of sigmoid from its output ``y``: ``dy * y * (1 - y)``."""
    return apply1("sigmoid_grad", dy, y)


def tanh_grad(dy: TensorLike, y: TensorLike) -> Symbol:
    """Gradient of tanh from its output ``y``: ``dy * (1 - y**2)``."""
    return apply1("tanh_grad", dy, y)


def gelu_grad(dy: TensorLike, x: TensorLike, approximate: bool = False) -> Symbol:
    """Gradient of gelu from its input ``x``."""
    return apply1("gelu_grad", dy, x, approximate=bool(approximate))


# ---------------------------------------------------------------------------- casts and identities
@register
class Cast(Op):
    """Convert to ``dtype``. Gradient: cast back between float dtypes, none otherwise."""

    name = "cast"
    kind = "elementwise"

    def infer(self, x: TensorSpec, *, dtype: str) -> TensorSpec:
        return TensorSpec(x.shape, dtype)

    def forward(self, ctx: ExecContext, x: Array, *, dtype: str) -> Array:
        return k.cast(x, dtype)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        x = node.inputs[0]
        if x.dtype in FLOAT_DTYPES and dy.dtype in FLOAT_DTYPES:
            return [cast(dy, x.dtype)]
        return [None]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        return _elementwise_cost(self.name, in_specs, out_specs)


class _PassThrough(Op):
    """Returns its input unchanged (no copy, so no cost: Poplar aliases the tensor)."""

    kind = "data_movement"

    def infer(self, x: TensorSpec) -> TensorSpec:
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array) -> Array:
        return x

    def cost(self, in_specs: Specs, out_specs: Specs) -> OpCost:
        return OpCost(0, 0, 0, "data_movement")


@register
class Identity(_PassThrough):
    name = "identity"

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [dy]


@register
class RecomputationCheckpoint(_PassThrough):
    """A value a pipeline stage stashes instead of recomputing
    (``pipelining_ops.recomputation_checkpoint``; see :mod:`ipusim.lowering.recompute`)."""

    name = "recomputation_checkpoint"

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [dy]


@register
class StopGradient(_PassThrough):
    name = "stop_gradient"

    def gradient(self, node: Node, dy: Symbol) -> list[None]:
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


# Reductions live in their own module; they are part of this module's public surface.
from ipusim.graph.ops.reduce import argmax as argmax  # noqa: E402
from ipusim.graph.ops.reduce import reduce_max as reduce_max  # noqa: E402
from ipusim.graph.ops.reduce import reduce_mean as reduce_mean  # noqa: E402
from ipusim.graph.ops.reduce import reduce_sum as reduce_sum  # noqa: E402
