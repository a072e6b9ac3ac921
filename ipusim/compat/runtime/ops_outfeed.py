"""The ``outfeed_enqueue`` op: a graph node whose execution hands values to an outfeed queue.

The node's inputs are the values of one enqueue (flattened); executing it copies them into the
queue registered under ``queue_id``. Its output is either one of its inputs passed through
unchanged (``passthrough`` >= 0, so a Keras layer can place it on the data path and the gradient
flows through), or a dummy int32 scalar that the runtime fetches as a side effect. It costs
nothing on the IPU: the transfer to the host is timed by the engine from the step's outfeed bytes.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

import numpy as np

from ipusim.errors import IncompatibleStateError
from ipusim.graph.graph import Node, Symbol, apply
from ipusim.graph.op import Op, OpCost, register
from ipusim.graph.spec import TensorSpec

_lock = threading.Lock()
_ids = itertools.count(1)
_QUEUES: dict[int, weakref.ref] = {}

#: The value of a side-effect node's dummy output.
TOKEN = np.zeros((), dtype=np.int32)


def register_queue(queue: Any) -> int:
    """Give ``queue`` an id that graph nodes can name (the registry holds a weak reference)."""
    with _lock:
        queue_id = next(_ids)
        _QUEUES[queue_id] = weakref.ref(queue)
    return queue_id


def lookup_queue(queue_id: int) -> Any:
    """The queue registered under ``queue_id``.

    Raises:
        RuntimeError: the queue no longer exists (it was deleted while a graph still names it).
    """
    ref = _QUEUES.get(queue_id)
    queue = ref() if ref is not None else None
    if queue is None:
        raise IncompatibleStateError(
            f"outfeed queue #{queue_id} was deleted while a traced function still enqueues to "
            "it; keep the IPUOutfeedQueue alive as long as the function runs"
        )
    return queue


@register
class OutfeedEnqueue(Op):
    """Hand the inputs (one element) to an outfeed queue. Attributes: ``queue_id``,
    ``structure`` (the enqueued nest, leaves replaced by their flat index) and ``passthrough``
    (-1, or the index of the last input, which is returned unchanged and not enqueued)."""

    name = "outfeed_enqueue"
    kind = "data_movement"

    def infer(self, *specs: TensorSpec, queue_id: int, structure: Any, passthrough: int):
        if passthrough >= 0:
            spec = specs[passthrough]
            return TensorSpec(spec.shape, spec.dtype)
        return TensorSpec((), "int32")

    def forward(self, ctx: Any, *arrays: Any, queue_id: int, structure: Any, passthrough: int):
        count = len(arrays) - 1 if passthrough >= 0 else len(arrays)
        values = [np.array(a, copy=True) for a in arrays[:count]]
        lookup_queue(queue_id)._device_push(structure, values)
        return arrays[passthrough] if passthrough >= 0 else TOKEN

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        grads: list[Symbol | None] = [None] * len(node.inputs)
        passthrough = node.attrs["passthrough"]
        if passthrough >= 0:
            grads[passthrough] = dy
        return grads

    def cost(self, in_specs, out_specs, **attrs: Any) -> OpCost:
        return OpCost(0, 0, 0, "data_movement")


def outfeed_enqueue(
    values: list[Any], queue_id: int, structure: Any, passthrough: int = -1
) -> Symbol:
    """Add an ``outfeed_enqueue`` node for the flat ``values`` and return its output."""
    return apply(
        "outfeed_enqueue", *values, queue_id=queue_id, structure=structure, passthrough=passthrough
    )
