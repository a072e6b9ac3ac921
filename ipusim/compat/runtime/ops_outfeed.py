"""The ``outfeed_enqueue`` op: a graph node whose execution hands values to an outfeed queue.

The node's inputs are the values of one enqueue (flattened); executing it copies them into the
queue registered under ``queue_id``. Its output is either one of its inputs passed through
unchanged (``passthrough`` >= 0, so a Keras layer can place it on the data path and the gradient
flows through), or a dummy int32 scalar that the runtime fetches as a side effect. It costs
nothing on the IPU: the transfer to the host is timed by the engine from the step's outfeed bytes.

Also here, for the other runtime nodes: :class:`WeakRegistry` (the ids nodes name queues and host
tables by) and :class:`FreeOp` (a data-movement node that costs nothing on the IPU).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Generic, TypeVar

import numpy as np

from ipusim.errors import IncompatibleStateError
from ipusim.graph.graph import Node, Symbol, apply1
from ipusim.graph.op import Op, OpCost, register
from ipusim.graph.spec import TensorSpec

#: The value of a side-effect node's dummy output.
TOKEN = np.zeros((), dtype=np.int32)

_T = TypeVar("_T")


class WeakRegistry(Generic[_T]):
    """Objects that graph nodes name by an int id, held by weak reference.

    Args:
        what: The objects in error messages ("outfeed queue").
        use: How a traced function uses one ("enqueues to it").
        owner: The user's object to keep alive ("IPUOutfeedQueue").
    """

    def __init__(self, what: str, use: str, owner: str) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._refs: dict[int, weakref.ref[_T]] = {}
        self._what, self._use, self._owner = what, use, owner

    def register(self, obj: _T) -> int:
        """Give ``obj`` an id that graph nodes can name."""
        with self._lock:
            obj_id = next(self._ids)
            self._refs[obj_id] = weakref.ref(obj)
        return obj_id

    def lookup(self, obj_id: int) -> _T:
        """The object registered under ``obj_id``.

        Raises:
            IncompatibleStateError: it was deleted while a traced function still names it.
        """
        ref = self._refs.get(obj_id)
        obj = ref() if ref is not None else None
        if obj is None:
            raise IncompatibleStateError(
                f"{self._what} #{obj_id} was deleted while a traced function still {self._use}; "
                f"keep the {self._owner} alive as long as the function runs"
            )
        return obj


_QUEUES: WeakRegistry[Any] = WeakRegistry("outfeed queue", "enqueues to it", "IPUOutfeedQueue")
register_queue, lookup_queue = _QUEUES.register, _QUEUES.lookup


class FreeOp(Op):
    """A data-movement node that costs nothing on the IPU (what it moves is timed elsewhere)."""

    kind = "data_movement"

    def cost(self, in_specs: Any, out_specs: Any, **attrs: Any) -> OpCost:
        return OpCost(0, 0, 0, "data_movement")


@register
class OutfeedEnqueue(FreeOp):
    """Hand the inputs (one element) to an outfeed queue. Attributes: ``queue_id`` and
    ``structure`` (the enqueued nest, leaves replaced by their flat index)."""

    name = "outfeed_enqueue"

    def infer(self, *specs: TensorSpec, queue_id: int, structure: Any) -> TensorSpec:
        return TensorSpec((), "int32")

    def forward(self, ctx: Any, *arrays: Any, queue_id: int, structure: Any) -> Any:
        values = [np.array(a, copy=True) for a in arrays]
        lookup_queue(queue_id)._device_push(structure, values)
        return TOKEN

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        return [None] * len(node.inputs)


def outfeed_enqueue(values: list[Any], queue_id: int, structure: Any) -> Symbol:
    """Add an ``outfeed_enqueue`` node for the flat ``values`` and return its output."""
    return apply1("outfeed_enqueue", *values, queue_id=queue_id, structure=structure)
