"""Host embedding ops: an embedding table in host memory that the IPU reads and updates.

As IPU TensorFlow's ``IpuDeviceEmbeddingLookup(Trainable)`` and ``IpuDeviceEmbeddingUpdateAdd``
(``tensorflow/compiler/plugin/poplar/kernels/datastream/host_embedding.cc``):

* ``host_embedding_lookup(indices, token)``: the IPU streams the flat int32 ``indices`` to the
  host, which copies the rows ``table[indices]`` back. ``token`` is the trainable scalar IPU
  TensorFlow creates (``<name>/__dummy``) so that an optimizer asks for a gradient through the
  lookup; its gradient is zero.
* ``host_embedding_update(grads, indices)`` (built by the lookup's gradient): the IPU streams the
  indices and ``-learning_rate * grads`` to the host, which adds each row into the table in index
  order (duplicates add up; with gradient accumulation, "SGD+GA", the rows are kept and added
  every ``accumulation_factor`` updates, at the weight update).

The table lives in a :class:`HostTable` registered under an id the nodes name; the IPU cost of
both ops is the host-link round trip, added by the lowering (:mod:`ipusim.cost.host_embedding`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.compat.runtime import context, ops_control  # noqa: F401  (registers ipu_after)
from ipusim.compat.runtime.ops_outfeed import TOKEN, WeakRegistry
from ipusim.errors import IncompatibleStateError
from ipusim.graph.graph import Node, Symbol, apply
from ipusim.graph.op import Op, OpCost, Specs, register
from ipusim.graph.spec import TensorSpec

__all__ = ["HostTable", "lookup_table", "register_table"]


class HostTable:
    """The host side of one host embedding: the table and the pending (accumulated) updates.

    Args:
        name: the embedding's name (its ``embedding_id`` in IPU TensorFlow).
        table: the rows, ``[tokens, encoding]``; updated in place.
        accumulation_factor: updates kept before they are added (1: added at once).
    """

    def __init__(self, name: str, table: np.ndarray, accumulation_factor: int = 1) -> None:
        self.name = name
        self.table = table
        self.accumulation_factor = int(accumulation_factor)
        self.registered = False
        self._pending: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}

    def check_registered(self) -> None:
        if not self.registered:
            raise IncompatibleStateError(
                f"host embedding {self.name!r} is used by an IPU program but is not registered: "
                "run the program inside `with embedding.register():` (or "
                "`with embedding.register(sess):`), as IPU TensorFlow requires"
            )

    def gather(self, indices: np.ndarray) -> np.ndarray:
        """The rows ``table[indices]`` (the indices were clipped on the IPU when asked)."""
        self.check_registered()
        return np.take(self.table, indices, axis=0)

    def add(self, indices: np.ndarray, rows: np.ndarray) -> None:
        """Add ``rows`` (already ``-lr * grad``) into the table, or keep them (SGD+GA).

        In a replicated loop the replicas' updates are added after every replica's iteration
        (in replica order), as the replicas' lookups of a step all precede its updates."""
        self.check_registered()
        state = context.replica_state()
        staged = (0 if state is None else state.index, np.array(indices), np.array(rows))
        if state is not None:
            state.host_updates.append(lambda: self._add(*staged))
        else:
            self._add(*staged)

    def _add(self, replica: int, indices: np.ndarray, rows: np.ndarray) -> None:
        # Each replica keeps its own updates (HostEmbeddingSGDAcc's per-replica lists).
        pending = self._pending.setdefault(replica, [])
        pending.append((indices, rows))
        if len(pending) >= self.accumulation_factor:
            for idx, values in pending:
                np.add.at(self.table, idx, values)  # row by row in index order, as the host loop
            pending.clear()


_TABLES: WeakRegistry[HostTable] = WeakRegistry("host embedding", "uses it", "HostEmbedding")
register_table, lookup_table = _TABLES.register, _TABLES.lookup


@register
class HostEmbeddingLookup(Op):
    """Rows of a host table. Inputs: flat int32 ``indices`` and the scalar ``token``.
    Attributes: ``table_id``, ``width``, ``dtype``, ``learning_rate``."""

    name = "host_embedding_lookup"
    kind = "data_movement"

    def infer(self, indices: TensorSpec, token: TensorSpec, **attrs: Any) -> TensorSpec:
        return TensorSpec((indices.shape[0], attrs["width"]), attrs["dtype"])

    def forward(self, ctx: Any, indices: Any, token: Any, **attrs: Any) -> np.ndarray:
        rows = lookup_table(attrs["table_id"]).gather(np.asarray(indices))
        return rows.astype(attrs["dtype"], copy=False)

    def gradient(self, node: Node, dy: Symbol | None) -> list[Symbol | None]:
        attrs = node.attrs
        if dy is None or attrs["learning_rate"] == 0:
            return [None, None]
        indices, token = node.inputs
        graph = dy.graph
        scaled = apply("multiply", dy, graph.constant(-attrs["learning_rate"], dy.dtype))
        update = apply("host_embedding_update", scaled, indices, table_id=attrs["table_id"])
        # the token is a scalar: its shape has no unknown size
        zero = graph.constant(np.zeros(token.shape, token.dtype))  # type: ignore[type-var]
        return [None, apply("ipu_after", zero, update)]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        # The rows arrive by stream copy; the lowering adds the host-link time.
        return OpCost(0, 0, out_specs[0].nbytes, "data_movement")


@register
class HostEmbeddingUpdate(Op):
    """Add ``rows`` (``-lr * grad``) into a host table at ``indices``. Attribute:
    ``table_id``. Output: a dummy int32 scalar (the node is kept as a dependency)."""

    name = "host_embedding_update"
    kind = "data_movement"

    def infer(self, rows: TensorSpec, indices: TensorSpec, **attrs: Any) -> TensorSpec:
        return TensorSpec((), "int32")

    def forward(self, ctx: Any, rows: Any, indices: Any, **attrs: Any) -> np.ndarray:
        lookup_table(attrs["table_id"]).add(np.asarray(indices), np.asarray(rows))
        return TOKEN

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        return OpCost(0, in_specs[0].nbytes, 0, "data_movement")
