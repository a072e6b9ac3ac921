"""Batched matrix products (attention's Q·Kᵀ and P·V): ``op(a) @ op(b)`` over leading dims."""

from __future__ import annotations

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.graph import Symbol, TensorLike, apply1
from ipusim.graph.op import register
from ipusim.graph.ops.nn import _matrix, _Product
from ipusim.graph.spec import TensorSpec
from ipusim.kernels import amp
from ipusim.kernels import dense as k


@register
class BatchMatMul(_Product):
    """``op(a) @ op(b)`` for tensors of equal rank >= 3 whose leading dimensions match.

    Forward, gradient and cost are :class:`~ipusim.graph.ops.nn.MatMul`'s, over the leading
    dimensions.
    """

    name = "batch_matmul"
    _kernel = staticmethod(k.batch_matmul)
    _amp_kernel = staticmethod(amp.batch_matmul)

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


def batch_matmul(
    a: TensorLike, b: TensorLike, *, transpose_a: bool = False, transpose_b: bool = False
) -> Symbol:
    """Batched matrix product over the leading dimensions of two rank->=3 tensors."""
    return apply1("batch_matmul", a, b, transpose_a=transpose_a, transpose_b=transpose_b)
