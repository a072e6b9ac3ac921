"""Scans and selections along an axis: ``cumsum`` / ``cumprod`` (``tf.math.cumsum``,
``tf.math.cumprod`` with ``exclusive`` and ``reverse``) and ``top_k`` (``tf.math.top_k``).

Gradients follow TensorFlow's: a cumulative sum's gradient is the cumulative sum of ``dy`` in the
other direction; a cumulative product's is ``cumsum(dy * y, reverse') / x`` (so, as in TensorFlow,
an input of exactly 0 gives a non-finite gradient); ``top_k`` sends ``dy`` back to the positions it
picked (a one-hot product, no gradient for the indices).
"""

from __future__ import annotations

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1, apply_multi
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.ops.math import divide, multiply, normalize_axes, require_float
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import math_extra as k


def _axis(op: str, axis: int, rank: int) -> int:
    return normalize_axes(op, int(axis), rank)[0]


@register
class Scan(Op):
    """Cumulative sum (``product=False``) or product along ``axis``."""

    name = "scan"
    kind = "elementwise"

    def infer(
        self, x: TensorSpec, *, axis: int, product: bool, exclusive: bool, reverse: bool
    ) -> TensorSpec:
        op = "cumprod" if product else "cumsum"
        if x.rank == 0:
            raise ConfigurationError(
                f"{op}: the input must have at least one axis, received a scalar"
            )
        _axis(op, axis, x.rank)
        if x.dtype == "bool":
            raise InvalidTypeError(f"{op}: the input must be numeric, received bool")
        return TensorSpec(x.shape, x.dtype)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        *,
        axis: int,
        product: bool,
        exclusive: bool,
        reverse: bool,
    ) -> Array:
        return k.scan(x, _axis(self.name, axis, x.ndim), product, exclusive, reverse).astype(
            x.dtype, copy=False
        )

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        x = node.inputs[0]
        attrs = dict(node.attrs)
        if x.dtype not in ("float16", "float32", "float64"):
            return [None]
        back = dict(attrs, reverse=not attrs["reverse"], product=False)
        if not attrs["product"]:
            return [apply1("scan", dy, **back)]
        return [divide(apply1("scan", multiply(dy, node.outputs[0]), **back), x)]


def cumsum(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Symbol:
    """Cumulative sum of ``x`` along ``axis``."""
    return apply1(
        "scan", x, product=False, axis=int(axis), exclusive=bool(exclusive), reverse=bool(reverse)
    )


def cumprod(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Symbol:
    """Cumulative product of ``x`` along ``axis``."""
    return apply1(
        "scan", x, product=True, axis=int(axis), exclusive=bool(exclusive), reverse=bool(reverse)
    )


@register
class TopK(Op):
    """The ``k`` largest entries of the last axis, descending, and their int32 indices (among
    equal values the lower index first, as ``tf.math.top_k``)."""

    name = "top_k"
    kind = "elementwise"
    num_outputs = 2

    def infer(self, x: TensorSpec, *, k: int) -> tuple[TensorSpec, TensorSpec]:
        if x.rank == 0:
            raise ConfigurationError(
                "top_k: the input must have at least one axis, received a scalar"
            )
        n = x.shape[-1]
        if k < 0 or (n is not None and k > n):
            raise ConfigurationError(
                f"top_k: `k` must be in [0, {n}] (the size of the last axis), received {k}"
            )
        if x.dtype == "bool":
            raise InvalidTypeError("top_k: the input must be numeric, received bool")
        shape = x.shape[:-1] + (k,)
        return TensorSpec(shape, x.dtype), TensorSpec(shape, "int32")

    def forward(self, ctx: ExecContext, x: Array, *, k: int) -> tuple[Array, ...]:
        from ipusim.kernels.math_extra import top_k as run

        return run(x, k)

    def gradient(
        self, node: Node, dy: Symbol | None, d_indices: Symbol | None = None
    ) -> list[Symbol | None]:
        x = node.inputs[0]
        if dy is None or x.dtype not in ("float16", "float32", "float64"):
            return [None]
        require_float("top_k", "dy", dy.spec)
        hot = apply1("one_hot", node.outputs[1], depth=x.shape[-1], dtype=dy.dtype)  # [..., k, n]
        spread = multiply(hot, apply1("expand_dims", dy, axis=-1))
        return [apply1("reduce_sum", spread, axis=-2, keepdims=False)]

    def cost(self, in_specs: Specs, out_specs: Specs, *, k: int) -> OpCost:
        # A partial selection: about log2(k)+1 comparisons per element (E).
        flops = in_specs[0].size * max(1, int(k).bit_length())
        return io_cost(flops, in_specs, out_specs, "elementwise")


def top_k(x: TensorLike, k: int = 1) -> tuple[Symbol, Symbol]:
    """``(values, indices)`` of the ``k`` largest entries of the last axis."""
    values, indices = apply_multi("top_k", x, k=int(k))
    return values, indices


__all__ = ["cumprod", "cumsum", "top_k"]
