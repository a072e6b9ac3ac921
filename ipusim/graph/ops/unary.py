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


# ---------------------------------------------------------------------------- unary ops
class _Unary(Op):
    kind = "elementwise"
    kernel_fn: ClassVar[Callable[..., Array]]
    float_only: ClassVar[bool] = True

    def infer(self, x: TensorSpec, **attrs: object) -> TensorSpec:
        if self.float_only:
            require_float(self.name, "x", x)
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, **attrs: object) -> Array:
        return self.kernel_fn(x, **attrs)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return _elementwise_cost(self.name, in_specs, out_specs)


class _UnaryGrad(Op):
    """``dx`` from ``dy`` and one saved value ``v`` (the op's input or output) of the same shape."""

    kind = "elementwise"
    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, dy: TensorSpec, v: TensorSpec, **attrs: object) -> TensorSpec:
        require_float(self.name, "dy", dy)
        return TensorSpec(merge_shapes(self.name, dy, v), dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, v: Array, **attrs: object) -> Array:
        return self.kernel_fn(dy, v, **attrs)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
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
        return [apply1("multiply", dy, node.outputs[0])]


@register
class Log(_Unary):
    name = "log"
    kernel_fn = staticmethod(k.log)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("divide", dy, node.inputs[0])]


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
