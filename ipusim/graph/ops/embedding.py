"""Embedding ops: rows of a table gathered by integer ids, their scatter-add gradient, one-hot.

They are importable from :mod:`ipusim.graph.ops.nn` too.
"""

from __future__ import annotations

from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.ops._window import known_dims
from ipusim.graph.ops.math import merge_shapes
from ipusim.graph.spec import Array, Shape, TensorSpec, canonical_dtype
from ipusim.kernels import embedding as ke

#: Integer dtypes an index tensor may have.
INT_DTYPES = ("int32", "int64")


def _check_ids(op: str, ids: TensorSpec) -> None:
    if ids.dtype not in INT_DTYPES:
        raise InvalidTypeError(
            f"{op}: ids must be int32 or int64, received dtype {ids.dtype}; cast "
            "them with cast(ids, 'int32')"
        )


@register
class EmbeddingLookup(Op):
    """Rows of ``params`` picked by integer ``ids``: shape ``ids.shape + params.shape[1:]``."""

    name = "embedding_lookup"
    kind = "data_movement"

    def infer(self, params: TensorSpec, ids: TensorSpec) -> TensorSpec:
        _check_ids(self.name, ids)
        if params.rank == 0:
            raise ConfigurationError(
                f"{self.name}: params must have at least one axis (rows), received a scalar"
            )
        return TensorSpec(ids.shape + params.shape[1:], params.dtype)

    def forward(self, ctx: ExecContext, params: Array, ids: Array) -> Array:
        return ke.gather_rows(params, ids)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        params, ids = node.inputs
        if not params.spec.is_fully_defined:
            raise UnsupportedError(
                f"{self.name}: the gradient needs the shape of params "
                f"known, received {params.shape}"
            )
        return [apply1("embedding_lookup_grad", dy, ids, shape=params.shape), None]

    def cost(self, in_specs: Specs, out_specs: Specs) -> OpCost:
        # Only the gathered rows of params are read, plus the ids.
        read = in_specs[1].nbytes + out_specs[0].nbytes
        return OpCost(0, read, out_specs[0].nbytes, "data_movement")


@register
class EmbeddingLookupGrad(Op):
    """Dense gradient of ``params``: rows of ``dy`` scatter-added at their ``ids``."""

    name = "embedding_lookup_grad"
    kind = "elementwise"

    def infer(self, dy: TensorSpec, ids: TensorSpec, *, shape: Shape) -> TensorSpec:
        _check_ids(self.name, ids)
        merge_shapes(
            self.name,
            dy,
            TensorSpec(ids.shape + tuple(shape[1:]), dy.dtype),
            "dy and ids.shape + params.shape[1:]",
        )
        return TensorSpec(tuple(shape), dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, ids: Array, *, shape: Shape) -> Array:
        return ke.scatter_add_rows(dy, ids, known_dims(tuple(shape)))

    def gradient(self, node: Node, d_out: Symbol) -> list[Symbol | None]:
        # A scatter-add is linear in dy: its gradient gathers the same rows back
        # (tf.scatter_nd / unsorted_segment_sum are built on this op).
        return [apply1("embedding_lookup", d_out, node.inputs[1]), None]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(in_specs[0].size, in_specs, out_specs, self.kind)  # one add per dy element


@register
class OneHot(Op):
    """``indices.shape + (depth,)``: 1 at each index, 0 elsewhere (zero rows out of range)."""

    name = "one_hot"
    kind = "data_movement"

    def infer(self, indices: TensorSpec, *, depth: int, dtype: str = "float32") -> TensorSpec:
        _check_ids(self.name, indices)
        if depth < 0:
            raise ConfigurationError(f"{self.name}: depth must be non-negative, received {depth}")
        return TensorSpec(indices.shape + (depth,), dtype)

    def forward(
        self, ctx: ExecContext, indices: Array, *, depth: int, dtype: str = "float32"
    ) -> Array:
        return ke.one_hot(indices, depth, dtype)

    gradient = no_gradient


def embedding_lookup(params: TensorLike, ids: TensorLike) -> Symbol:
    """``params[ids]``; an id outside ``[0, params.shape[0])`` raises an IndexError at run time."""
    return apply1("embedding_lookup", params, ids)


def one_hot(indices: TensorLike, depth: int, dtype: object = "float32") -> Symbol:
    """One-hot encoding of integer ``indices`` along a new last axis of size ``depth``."""
    return apply1("one_hot", indices, depth=int(depth), dtype=canonical_dtype(dtype))
