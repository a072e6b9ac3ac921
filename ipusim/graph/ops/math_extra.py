"""Elementwise math beyond the core ops: ``unary_math`` (trigonometric, hyperbolic, error
functions, rounding, ``sign``, ``reciprocal``, ``rsqrt``, ``expm1``, ``log1p``, ``lgamma`` and the
activations ``softsign`` / ``elu`` / ``selu`` / ``relu6``), ``is_finite``-style predicates,
``binary_math`` (``pow``, ``atan2``, floor division and modulo) and ``select`` (``tf.where``).

Gradients are compositions of graph ops (``d sin = cos``, ``d atan2`` from both operands...), as
TensorFlow's own gradient functions are; rounding ops have none, as in TensorFlow.
"""

from __future__ import annotations

import math as _math
from collections.abc import Callable

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.ops.math import (
    broadcast_shape,
    divide,
    exp,
    multiply,
    negative,
    require_float,
    square,
    subtract,
    unbroadcast,
)
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import math_extra as k

#: FLOPs per output element. Transcendentals count 4 as in :data:`ipusim.graph.ops.math.
#: FLOPS_PER_ELEMENT` (the vector unit evaluates them in a few cycles); inverse trigonometric and
#: special functions are polynomial / rational approximations of several such steps (E).
UNARY_FLOPS: dict[str, int] = {
    "sin": 4, "cos": 4, "tan": 8, "asin": 8, "acos": 8, "atan": 8, "sinh": 6, "cosh": 6,
    "asinh": 10, "acosh": 10, "atanh": 10, "erf": 8, "erfc": 8, "floor": 1, "ceil": 1,
    "round": 2, "sign": 1, "reciprocal": 1, "rsqrt": 4, "expm1": 4, "log1p": 4, "lgamma": 20,
    "softsign": 3, "elu": 6, "selu": 7, "relu6": 2,
}  # fmt: skip
BINARY_FLOPS: dict[str, int] = {
    "pow": 8, "atan2": 10, "floordiv": 2, "floormod": 3, "bitwise_and": 1, "bitwise_or": 1,
    "bitwise_xor": 1, "left_shift": 1, "right_shift": 1,
}  # fmt: skip
_BITWISE = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"})

_INT_OK = frozenset({"sign", "floor", "ceil", "round"})
_NO_GRADIENT = frozenset({"floor", "ceil", "round"})
_TWO_OVER_SQRT_PI = 2.0 / _math.sqrt(_math.pi)


def _elementwise(flops: int, in_specs: Specs, out_specs: Specs) -> OpCost:
    return io_cost(flops * sum(s.size for s in out_specs), in_specs, out_specs, "elementwise")


def unary(fn: str, x: TensorLike) -> Symbol:
    """``fn`` (a key of ``UNARY_FLOPS``) of every element of ``x``."""
    return apply1("unary_math", x, fn=fn)


def _one_plus(x: Symbol) -> Symbol:
    return apply1("add", x, 1.0)


def _erf_derivative(x: Symbol) -> Symbol:
    return multiply(exp(negative(square(x))), _TWO_OVER_SQRT_PI)


#: d fn(x) / dx of each differentiable ``fn``, from the input ``x`` and output ``y``.
_DERIVATIVES: dict[str, Callable[[Symbol, Symbol], Symbol]] = {
    "sin": lambda x, y: unary("cos", x),
    "cos": lambda x, y: negative(unary("sin", x)),
    "tan": lambda x, y: _one_plus(square(y)),
    "asin": lambda x, y: unary("rsqrt", subtract(1.0, square(x))),
    "acos": lambda x, y: negative(unary("rsqrt", subtract(1.0, square(x)))),
    "atan": lambda x, y: unary("reciprocal", _one_plus(square(x))),
    "sinh": lambda x, y: unary("cosh", x),
    "cosh": lambda x, y: unary("sinh", x),
    "asinh": lambda x, y: unary("rsqrt", _one_plus(square(x))),
    "acosh": lambda x, y: unary("rsqrt", subtract(square(x), 1.0)),
    "atanh": lambda x, y: unary("reciprocal", subtract(1.0, square(x))),
    "erf": lambda x, y: _erf_derivative(x),
    "erfc": lambda x, y: negative(_erf_derivative(x)),
    "sign": lambda x, y: multiply(x, 0.0),
    "reciprocal": lambda x, y: negative(square(y)),
    "rsqrt": lambda x, y: multiply(multiply(square(y), y), -0.5),
    "expm1": lambda x, y: _one_plus(y),
    "log1p": lambda x, y: unary("reciprocal", _one_plus(x)),
    "softsign": lambda x, y: unary("reciprocal", square(_one_plus(apply1("abs", x)))),
    "elu": lambda x, y: _elu_derivative("elu", x, y),
    "selu": lambda x, y: _elu_derivative("selu", x, y),
    # 1 on (0, 6), else 0
    "relu6": lambda x, y: multiply(positive_mask(x), positive_mask(subtract(6.0, x))),
}


def _unary_derivative(fn: str, x: Symbol, y: Symbol) -> Symbol:
    """d fn(x) / dx, from the input ``x`` and output ``y``."""
    if fn not in _DERIVATIVES:
        raise NotImplementedError(f"unary_math: no gradient rule for {fn!r}")
    return _DERIVATIVES[fn](x, y)


def positive_mask(x: Symbol) -> Symbol:
    """1.0 where ``x > 0``, else 0.0 (``relu(sign(x))``; a float mask for finite gradients)."""
    return apply1("relu", unary("sign", x))


def _elu_derivative(fn: str, x: Symbol, y: Symbol) -> Symbol:
    """elu: 1 above 0, y + 1 below; selu: scale above 0, y + scale * alpha below (as TF)."""
    scale, alpha = (1.0, 1.0) if fn == "elu" else (k._SELU_SCALE, k._SELU_ALPHA)
    mask = positive_mask(x)
    below = apply1("add", y, scale * alpha)
    return apply1("add", multiply(mask, scale), multiply(subtract(1.0, mask), below))


@register
class UnaryMath(Op):
    """``fn(x)`` elementwise. Attribute ``fn``: a key of ``UNARY_FLOPS``."""

    name = "unary_math"
    kind = "elementwise"

    def infer(self, x: TensorSpec, *, fn: str) -> TensorSpec:
        if fn not in UNARY_FLOPS:
            raise ConfigurationError(f"unary_math: unknown function {fn!r}")
        if fn not in _INT_OK:
            require_float(fn, "x", x)
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, fn: str) -> Array:
        if x.dtype.kind in "iu":
            if fn == "sign":
                sign: Array = (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
                return sign
            return x.copy()  # floor / ceil / round of an integer is itself
        return k.unary(x, fn)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        fn = node.attrs["fn"]
        if fn in _NO_GRADIENT:
            return [None]
        return [multiply(dy, _unary_derivative(fn, node.inputs[0], node.outputs[0]))]

    def cost(self, in_specs: Specs, out_specs: Specs, *, fn: str) -> OpCost:
        return _elementwise(UNARY_FLOPS[fn], in_specs, out_specs)


@register
class Predicate(Op):
    """``is_nan`` / ``is_inf`` / ``is_finite`` of a float tensor; bool, no gradient."""

    name = "float_predicate"
    kind = "elementwise"

    def infer(self, x: TensorSpec, *, fn: str) -> TensorSpec:
        if fn not in k.PREDICATE_CODES:
            raise ConfigurationError(f"float_predicate: unknown predicate {fn!r}")
        require_float(fn, "x", x)
        return TensorSpec(x.shape, "bool")

    def forward(self, ctx: ExecContext, x: Array, *, fn: str) -> Array:
        return k.predicate(x, fn)

    gradient = no_gradient


@register
class BinaryMath(Op):
    """``fn(a, b)`` with broadcasting: ``pow``, ``atan2``, ``floordiv``, ``floormod``."""

    name = "binary_math"
    kind = "elementwise"

    def infer(self, a: TensorSpec, b: TensorSpec, *, fn: str) -> TensorSpec:
        if fn not in BINARY_FLOPS:
            raise ConfigurationError(f"binary_math: unknown function {fn!r}")
        if a.dtype != b.dtype:
            raise InvalidTypeError(
                f"{fn}: operands have dtypes {a.dtype} and {b.dtype}; cast one so both match"
            )
        if fn == "atan2":
            require_float(fn, "y", a)
        if fn in _BITWISE and a.dtype not in ("int8", "int16", "int32", "int64", "uint8"):
            raise InvalidTypeError(f"{fn}: operands must be integers, received {a.dtype}")
        return TensorSpec(broadcast_shape(fn, a.shape, b.shape), a.dtype)

    def forward(self, ctx: ExecContext, a: Array, b: Array, *, fn: str) -> Array:
        return k.binary(a, b, fn)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        a, b = node.inputs
        fn = node.attrs["fn"]
        if fn == "floordiv" or a.dtype not in ("float16", "float32", "float64"):
            return [None, None]
        if fn == "floormod":  # a - floor(a / b) * b
            return [unbroadcast(dy, a), unbroadcast(multiply(dy, negative(floordiv(a, b))), b)]
        if fn == "atan2":  # d/da = b / (a² + b²), d/db = -a / (a² + b²)
            over = divide(dy, apply1("add", square(a), square(b)))
            return [unbroadcast(multiply(over, b), a), unbroadcast(negative(multiply(over, a)), b)]
        # pow: d/da = b a^(b-1); d/db = y log(a) where a > 0, else 0 (as TensorFlow)
        da = multiply(dy, multiply(b, pow_(a, subtract(b, 1.0))))
        mask = positive_mask(a)
        log_a = multiply(apply1("log", apply1("add", multiply(a, mask), subtract(1.0, mask))), mask)
        db = multiply(dy, multiply(node.outputs[0], log_a))
        return [unbroadcast(da, a), unbroadcast(db, b)]

    def cost(self, in_specs: Specs, out_specs: Specs, *, fn: str) -> OpCost:
        return _elementwise(BINARY_FLOPS[fn], in_specs, out_specs)


def pow_(a: TensorLike, b: TensorLike) -> Symbol:
    """``a ** b`` elementwise."""
    return apply1("binary_math", a, b, fn="pow")


def floordiv(a: TensorLike, b: TensorLike) -> Symbol:
    """``floor(a / b)`` elementwise (integers or floats)."""
    return apply1("binary_math", a, b, fn="floordiv")


@register
class Select(Op):
    """``a`` where ``cond`` else ``b`` (all broadcast); the gradient goes to the chosen side."""

    name = "select"
    kind = "elementwise"

    def infer(self, cond: TensorSpec, a: TensorSpec, b: TensorSpec) -> TensorSpec:
        if cond.dtype != "bool":
            raise InvalidTypeError(f"where: `condition` must be bool, received {cond.dtype}")
        if a.dtype != b.dtype:
            raise InvalidTypeError(
                f"where: x and y have dtypes {a.dtype} and {b.dtype}; cast one so both match"
            )
        shape = broadcast_shape("where", broadcast_shape("where", cond.shape, a.shape), b.shape)
        return TensorSpec(shape, a.dtype)

    def forward(self, ctx: ExecContext, cond: Array, a: Array, b: Array) -> Array:
        return k.select(cond, a, b)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        cond, a, b = node.inputs
        zero = multiply(dy, 0.0)
        return [
            None,
            unbroadcast(select(cond, dy, zero), a),
            unbroadcast(select(cond, zero, dy), b),
        ]


def select(cond: TensorLike, a: TensorLike, b: TensorLike) -> Symbol:
    """``a`` where ``cond`` holds, else ``b``."""
    return apply1("select", cond, a, b)


__all__ = ["UNARY_FLOPS", "apply_binary", "floordiv", "positive_mask", "pow_", "select", "unary"]


def apply_binary(fn: str, a: TensorLike, b: TensorLike) -> Symbol:
    """``fn`` (a key of ``BINARY_FLOPS``) of ``a`` and ``b`` with broadcasting."""
    return apply1("binary_math", a, b, fn=fn)
