"""Unary elementwise ops (activations, exp/log/sqrt, clip ...) and the kernel ops of their
gradients (``relu_grad(dy, y)`` ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, register
from ipusim.graph.ops._elementwise import _elementwise_cost, merge_shapes, require_float
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import elementwise as k


class ElementwiseOp(Op):
    """Base of the elementwise family's ops: costed per element (``FLOPS_PER_ELEMENT``)."""

    kind = "elementwise"

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return _elementwise_cost(self.name, in_specs, out_specs)


# ---------------------------------------------------------------------------- unary ops
class _Unary(ElementwiseOp):
    kernel_fn: ClassVar[Callable[..., Array]]
    float_only: ClassVar[bool] = True

    def infer(self, x: TensorSpec, **attrs: object) -> TensorSpec:
        if self.float_only:
            require_float(self.name, "x", x)
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, **attrs: object) -> Array:
        return self.kernel_fn(x, **attrs)


class _UnaryGrad(ElementwiseOp):
    """``dx`` from ``dy`` and one saved value ``v`` (the op's input or output) of the same shape."""

    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, dy: TensorSpec, v: TensorSpec, **attrs: object) -> TensorSpec:
        require_float(self.name, "dy", dy)
        return TensorSpec(merge_shapes(self.name, dy, v), dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, v: Array, **attrs: object) -> Array:
        return self.kernel_fn(dy, v, **attrs)


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


class _Clip(_Unary):
    # Clip's attributes are its own (as every op's are; see Op's base signatures).
    def infer(self, x: TensorSpec, *, lo: float, hi: float) -> TensorSpec:  # type: ignore[override]
        if not lo <= hi:
            raise ConfigurationError(f"clip: lo ({lo}) must not exceed hi ({hi})")
        return super().infer(x)


def _unary_op(
    name: str,
    fn: Callable[..., Array],
    grad: str,
    saved: str | None,
    float_only: bool = True,
    base: type[_Unary] = _Unary,
) -> None:
    """Register the unary op ``name`` computing ``fn(x, **attrs)``, whose gradient is the op
    ``grad(dy, v, **attrs)`` with ``v`` the node's input (``saved="in"``), its output ("out") or
    nothing (None)."""

    def gradient(self: _Unary, node: Node, dy: Symbol) -> list[Symbol]:
        values = [] if saved is None else [(node.inputs if saved == "in" else node.outputs)[0]]
        return [apply1(grad, dy, *values, **node.attrs)]

    attrs = {"name": name, "kernel_fn": staticmethod(fn), "float_only": float_only}
    register(type(name.title(), (base,), {**attrs, "gradient": gradient}))


_unary_op("negative", k.negative, "negative", None, False)
_unary_op("exp", k.exp, "multiply", "out")
_unary_op("log", k.log, "divide", "in")
_unary_op("sqrt", k.sqrt, "sqrt_grad", "out")
_unary_op("square", k.square, "square_grad", "in", False)
_unary_op("abs", k.abs_, "abs_grad", "in", False)
_unary_op("relu", k.relu, "relu_grad", "out")
_unary_op("sigmoid", k.sigmoid, "sigmoid_grad", "out")
_unary_op("tanh", k.tanh, "tanh_grad", "out")
_unary_op("gelu", k.gelu, "gelu_grad", "in")
_unary_op("softplus", k.softplus, "softplus_grad", "in")
_unary_op("clip", k.clip, "clip_grad", "in", True, _Clip)


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
