"""Batched matrix products (attention's Q·Kᵀ and P·V): ``op(a) @ op(b)`` over leading dims."""

from __future__ import annotations

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.numerics import amp_products, computes_half
from ipusim.graph.op import Op, OpCost, Specs, io_bytes, register
from ipusim.graph.ops._window import known_dims
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import amp
from ipusim.kernels import dense as k


def _matrix(shape: Shape, transpose: bool) -> Shape:
    return (shape[-1], shape[-2]) if transpose else (shape[-2], shape[-1])


@register
class BatchMatMul(Op):
    """``op(a) @ op(b)`` for tensors of equal rank >= 3 whose leading dimensions match."""

    name = "batch_matmul"
    kind = "matmul"
    rounds_half_outputs = True

    def infer(
        self, a: TensorSpec, b: TensorSpec, *, transpose_a: bool = False, transpose_b: bool = False
    ) -> TensorSpec:
        if a.rank < 3 or a.rank != b.rank:
            raise ConfigurationError(
                f"batch_matmul expects operands of equal rank >= 3, received shapes "
                f"{a.shape} and {b.shape}; use matmul for 2-D operands"
            )
        if a.dtype != b.dtype:
            raise InvalidTypeError(f"batch_matmul: operands have dtypes {a.dtype} and {b.dtype}")
        lead = []
        for x, y in zip(a.shape[:-2], b.shape[:-2]):
            if x is not None and y is not None and x != y:
                raise ConfigurationError(
                    f"batch_matmul: leading dimensions of {a.shape} and {b.shape} differ"
                )
            lead.append(x if x is not None else y)
        m, ka = _matrix(a.shape, transpose_a)
        kb, n = _matrix(b.shape, transpose_b)
        if ka is not None and kb is not None and ka != kb:
            raise ConfigurationError(
                f"batch_matmul inner dimensions differ: {ka} != {kb} (shapes "
                f"{a.shape} and {b.shape})"
            )
        return TensorSpec((*lead, m, n), a.dtype)

    def forward(
        self,
        ctx: ExecContext,
        a: Array,
        b: Array,
        *,
        transpose_a: bool = False,
        transpose_b: bool = False,
    ) -> Array:
        if computes_half(ctx):
            products = amp_products(ctx, "matmul")
            out = amp.batch_matmul(a, b, transpose_a, transpose_b, products)
            ctx.overflows = products.overflows
            return out
        return k.batch_matmul(a, b, transpose_a, transpose_b)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        a, b = node.inputs
        ta, tb = node.attrs.get("transpose_a", False), node.attrs.get("transpose_b", False)
        if not ta and not tb:
            return [batch_matmul(dy, b, transpose_b=True), batch_matmul(a, dy, transpose_a=True)]
        if ta and not tb:
            return [batch_matmul(b, dy, transpose_b=True), batch_matmul(a, dy)]
        if not ta and tb:
            return [batch_matmul(dy, b), batch_matmul(dy, a, transpose_a=True)]
        return [
            batch_matmul(b, dy, transpose_a=True, transpose_b=True),
            batch_matmul(dy, a, transpose_a=True, transpose_b=True),
        ]

    def cost(
        self,
        in_specs: Specs,
        out_specs: Specs,
        *,
        transpose_a: bool = False,
        transpose_b: bool = False,
    ) -> OpCost:
        a = in_specs[0]
        k_dim = known_dims(_matrix(a.shape, transpose_a))[1]  # costed shapes are known
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(2 * out_specs[0].size * k_dim, read, written, "matmul")


def batch_matmul(
    a: TensorLike, b: TensorLike, *, transpose_a: bool = False, transpose_b: bool = False
) -> Symbol:
    """Batched matrix product over the leading dimensions of two rank->=3 tensors."""
    return apply1("batch_matmul", a, b, transpose_a=transpose_a, transpose_b=transpose_b)
