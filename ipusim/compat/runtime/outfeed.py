"""Outfeeds (``ipu.ipu_outfeed_queue``, IPU TensorFlow 2.5).

An :class:`IPUOutfeedQueue` is enqueued on the device (at most once per traced graph) and
dequeued on the host. Executing the enqueue node pushes a copy of the values as one element; in
``ALL`` mode the queue keeps every element until the host dequeues it, in ``LAST`` mode only the
latest. The queue is thread safe: a host thread may iterate over it while the loop that fills it
runs in another thread, and receives every element exactly once, in order. ``dequeue()`` stacks
the available elements along a new first axis (and a replica axis after it when the loop is
replicated).
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from enum import Enum
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.dispatch import is_int
from ipusim.compat.runtime.infeed import check_device_ordinal
from ipusim.compat.runtime.ops_outfeed import outfeed_enqueue, register_queue
from ipusim.compat.runtime.tensor import EagerTensor, is_tensor_like
from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError
from ipusim.graph.graph import current_graph
from ipusim.graph.spec import TensorSpec
from ipusim.keras.engine.nest import flatten, pack_sequence_as

__all__ = [
    "IPUOutfeedMode",
    "IPUOutfeedQueue",
    "IPUOutfeedQueueIterator",
    "ScopedIPUOutfeedQueue",
]


class IPUOutfeedMode(Enum):
    """What the host receives: every enqueued element (ALL) or only the latest (LAST)."""

    ALL = "all"
    LAST = "get_last"


class IPUOutfeedQueue:
    """Streams values from the IPU to the host (see the module docstring).

    Args:
        outfeed_mode: ``IPUOutfeedMode.ALL`` (default) or ``IPUOutfeedMode.LAST``.
        device_ordinal: the IPU device (default 0).
        buffer_depth: elements buffered on the device before the IPU waits for the host (>= 1);
            used by the timing model.
        optimise_latency: accepted for compatibility.

    Raises:
        ValueError: a mode that is not an ``IPUOutfeedMode``, ``buffer_depth`` < 1, or a bad
            ``device_ordinal``.
    """

    def __init__(
        self,
        outfeed_mode: IPUOutfeedMode | None = None,
        device_ordinal: int | None = None,
        buffer_depth: int = 1,
        optimise_latency: bool = False,
    ) -> None:
        mode = IPUOutfeedMode.ALL if outfeed_mode is None else outfeed_mode
        if not isinstance(mode, IPUOutfeedMode):
            raise ConfigurationError(
                "Expected `outfeed_mode` value to be of `ipu_outfeed_queue.IPUOutfeedMode` type, "
                f"but is {outfeed_mode!r}. Use IPUOutfeedMode.ALL or IPUOutfeedMode.LAST."
            )
        if not is_int(buffer_depth):
            raise ConfigurationError(f"buffer_depth must be an int >= 1, received {buffer_depth!r}")
        if buffer_depth < 1:
            raise ConfigurationError(
                f"Outfeed buffer depth cannot be less than 1: `buffer_depth` is {buffer_depth}"
            )
        self._mode = mode
        self._device_ordinal = check_device_ordinal(device_ordinal)
        self._buffer_depth = int(buffer_depth)
        self._optimise_latency = bool(optimise_latency)
        self._id = register_queue(self)
        self._cond = threading.Condition()
        self._elements: deque[tuple[Any, list[np.ndarray]]] = deque()
        self._last: tuple[Any, list[np.ndarray]] | None = None
        self._graphs: weakref.WeakSet[Any] = weakref.WeakSet()
        self._ever_enqueued = False
        self._structure: Any = None
        self._specs: list[TensorSpec] = []

    # ------------------------------------------------------------------ properties
    @property
    def outfeed_mode(self) -> IPUOutfeedMode:
        return self._mode

    @property
    def buffer_depth(self) -> int:
        return self._buffer_depth

    @property
    def enqueued(self) -> bool:
        """While tracing: whether the graph being traced enqueues this queue. On the host:
        whether anything has ever been enqueued."""
        graph = current_graph()
        if graph is not None:
            return graph in self._graphs
        return self._ever_enqueued

    @property
    def deleter(self) -> context.Operation:
        return context.Operation("outfeed_deleter")

    # ------------------------------------------------------------------ device side
    def enqueue(self, tensors: Any) -> context.Operation:
        """Send ``tensors`` (a tensor, a tuple / list or a dict of them) to the host once per
        execution of the graph being traced; called eagerly, the values are sent at once.

        Raises:
            ValueError: the graph being traced already enqueues this queue.
            TypeError: a leaf is not a tensor.
        """
        flat = flatten(tensors)
        for leaf in flat:
            if not (is_tensor_like(leaf) or isinstance(leaf, int | float)):
                raise InvalidTypeError(
                    f"IPUOutfeedQueue.enqueue: expected tensors (or a tuple / list / dict of "
                    f"them), received a leaf of type {type(leaf).__name__}"
                )
        structure = pack_sequence_as(tensors, list(range(len(flat))))
        graph = current_graph()
        if graph is None:
            self._note_enqueue(structure, [TensorSpec.from_array(np.asarray(v)) for v in flat])
            self._device_push(structure, [np.array(v, copy=True) for v in flat])
            return context.Operation("outfeed_enqueue", None)
        if graph in self._graphs:
            raise ConfigurationError(
                "An outfeed can only be enqueued once per traced function: this IPUOutfeedQueue "
                "is already enqueued in the graph being traced. Enqueue one tuple or dict holding "
                "every value instead."
            )
        symbol = outfeed_enqueue(list(flat), self._id, structure)
        self._graphs.add(graph)
        self._note_enqueue(structure, [s.spec for s in symbol.node.inputs])
        ctx = context.current()
        if ctx is not None and ctx.graph is graph:
            ctx.add_side_effect(symbol)
        else:  # a Keras model's step: its graph runs the enqueue each step
            graph.side_effects.append(symbol)
        return context.Operation("outfeed_enqueue", symbol)

    def _note_enqueue(self, structure: Any, specs: list[TensorSpec]) -> None:
        self._ever_enqueued = True
        self._structure = structure
        self._specs = specs

    @property
    def element_bytes(self) -> int:
        """Bytes of one enqueued element (for the timing model)."""
        return sum(spec.nbytes for spec in self._specs if spec.is_fully_defined)

    def _device_push(self, structure: Any, arrays: list[np.ndarray]) -> None:
        """Called when an enqueue executes (by the graph node, or eagerly)."""
        state = context.replica_state()
        if state is not None and state.replicas > 1:
            staged = state.outfeed.setdefault(self._id, [None] * state.replicas)
            staged[state.index] = (structure, arrays)
            return
        self._push(structure, arrays)

    def _push(self, structure: Any, arrays: list[np.ndarray]) -> None:
        with self._cond:
            if self._mode is IPUOutfeedMode.LAST:
                self._last = (structure, arrays)
            else:
                self._elements.append((structure, arrays))
            self._cond.notify_all()

    def _flush_replicas(self, staged: list[Any]) -> None:
        """Push one element whose leaves stack the replicas' values (replica axis first)."""
        structure = staged[0][0]
        leaves = [np.stack([s[1][i] for s in staged]) for i in range(len(staged[0][1]))]
        self._push(structure, leaves)

    # ------------------------------------------------------------------ host side
    def dequeue(self, wait_for_completion: bool = False) -> Any:
        """The elements enqueued so far (ALL: stacked along a new first axis, then removed from
        the queue; LAST: the latest element).

        Raises:
            ValueError: nothing was ever enqueued (from another thread, ``[]`` is returned).
            RuntimeError: called inside a traced function, or LAST mode before any element.
        """
        defer = getattr(context.current(), "defer", None)
        if defer is not None:  # built in a TF1 graph: each Session.run fetching it dequeues
            return defer("outfeed_dequeue", lambda: self.dequeue(wait_for_completion), [])
        if context.is_tracing():
            raise IncompatibleStateError(
                "IPUOutfeedQueue.dequeue() runs on the host: call it outside the tf.function "
                "(after strategy.run returns, or from a host thread)"
            )
        if not self._ever_enqueued:
            if threading.current_thread() is not threading.main_thread():
                return []
            raise ConfigurationError(
                "Trying to dequeue an outfeed which has not been enqueued: run the function "
                "that calls outfeed_queue.enqueue(...) first."
            )
        with self._cond:
            if self._mode is IPUOutfeedMode.LAST:
                if self._last is None:
                    raise IncompatibleStateError(
                        "The LAST-mode outfeed has no element yet: the enqueue has not run."
                    )
                structure, arrays = self._last
                return _pack(structure, [np.array(a, copy=True) for a in arrays])
            elements = list(self._elements)
            self._elements.clear()
        if not elements:
            # the enqueued values of a trace have known sizes (a Keras step traces concrete specs)
            empty = [
                np.zeros((0, *s.shape), dtype=s.dtype)  # type: ignore[type-var]
                for s in self._specs
            ]
            return _pack(self._structure, empty)
        structure = elements[0][0]
        for other, _ in elements[1:]:
            if other != structure:
                raise ConfigurationError(
                    f"The outfeed holds elements of different structures ({structure} and "
                    f"{other}); dequeue after each function that enqueues it"
                )
        leaves = [np.stack([e[1][i] for e in elements]) for i in range(len(elements[0][1]))]
        return _pack(structure, leaves)

    def __iter__(self) -> IPUOutfeedQueueIterator:
        if context.is_tracing():
            raise IncompatibleStateError(
                "IPUOutfeedQueue can only be iterated over in eager mode: iterate on the host, "
                "outside the tf.function."
            )
        if self._mode is not IPUOutfeedMode.ALL:
            raise IncompatibleStateError(
                "IPUOutfeedQueue can only be iterated over if the `outfeed_mode` is set to "
                "'IPUOutfeedMode.ALL'."
            )
        return IPUOutfeedQueueIterator(self)

    def _pop(self) -> Any:
        with self._cond:
            if not self._elements:
                raise StopIteration
            structure, arrays = self._elements.popleft()
        return _pack(structure, arrays)

    def __repr__(self) -> str:
        return f"IPUOutfeedQueue(outfeed_mode={self._mode}, buffer_depth={self._buffer_depth})"


class IPUOutfeedQueueIterator:
    """Yields the elements available now, one enqueued element at a time, oldest first; stops as
    soon as none is available (iterate again later for more)."""

    def __init__(self, queue: IPUOutfeedQueue) -> None:
        self._queue = queue

    def __iter__(self) -> IPUOutfeedQueueIterator:
        return self

    def __next__(self) -> Any:
        return self._queue._pop()


class ScopedIPUOutfeedQueue(IPUOutfeedQueue):
    """An outfeed that is emptied when its ``with`` block ends (eager mode only).

    Raises:
        RuntimeError: created inside a traced function.
    """

    def __init__(
        self, outfeed_mode: IPUOutfeedMode | None = None, device_ordinal: int | None = None
    ) -> None:
        if context.is_tracing():
            raise IncompatibleStateError(
                "ScopedIPUOutfeedQueue can only be created in eager mode: create it outside the "
                "tf.function."
            )
        super().__init__(outfeed_mode=outfeed_mode, device_ordinal=device_ordinal)

    def __enter__(self) -> ScopedIPUOutfeedQueue:
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._cond:
            self._elements.clear()
            self._last = None


def _pack(structure: Any, leaves: list[np.ndarray]) -> Any:
    """Rebuild the enqueued structure (its leaves are flat indices) around EagerTensors."""
    tensors = [np.asarray(a).view(EagerTensor) for a in leaves]
    flat = flatten(structure)
    return pack_sequence_as(structure, [tensors[i] for i in flat])
