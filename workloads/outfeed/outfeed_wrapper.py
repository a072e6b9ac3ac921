"""``MaybeOutfeedQueue``: collect named tensors selectively, then enqueue them as one dict.

Part of ipusim's version of Graphcore's tensor-inspection tutorial (seed 002). An
``IPUOutfeedQueue`` may be enqueued only once per traced graph, so layers (or an optimizer) that
each want to send something first *offer* their values with :meth:`MaybeOutfeedQueue.maybe_outfeed`
and one of them enqueues the collected dict with :meth:`MaybeOutfeedQueue.maybe_enqueue`.
Filters keep only the keys that contain one of the filter strings.

Values offered while a graph is being traced (a Keras model's step) are kept per graph (the
tensor's ``graph``), so the scratch graphs Keras traces single layers in while a functional model
is built never mix with the step's graph. ``maybe_enqueue`` enqueues what was offered in the
graph of the latest offer: a layer offers and then enqueues in the same trace. Concrete values
offered on the host (the optimizer's gradients, which have no graph) are enqueued at once when
``maybe_enqueue`` is called there.
"""

from __future__ import annotations

import weakref
from typing import Any

from ipusim.compat import ipu


class MaybeOutfeedQueue:
    """A wrapper around an ``IPUOutfeedQueue`` that enqueues a dict of selected values.

    Args:
        outfeed_mode: the wrapped queue's mode (default ``IPUOutfeedMode.ALL``).
        filters: None to keep every key, or a list of strings: a key is kept when it contains
            at least one of them (e.g. ``["Dense_128"]``).
    """

    def __init__(self, outfeed_mode: Any = None, filters: list[str] | None = None) -> None:
        if filters is not None and (
            not isinstance(filters, list | tuple) or not all(isinstance(f, str) for f in filters)
        ):
            raise TypeError(f"`filters` must be None or a list of strings, received {filters!r}")
        self._queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue(outfeed_mode=outfeed_mode)
        self._filters = None if filters is None else list(filters)
        self._graph_values: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._host_values: dict[str, Any] = {}
        # The graph of the latest offer (a weak reference; None: the host).
        self._offered_in: Any = None

    @property
    def filters(self) -> list[str] | None:
        return self._filters

    @property
    def queue(self) -> Any:
        """The wrapped ``IPUOutfeedQueue``."""
        return self._queue

    def _wanted(self, key: str) -> bool:
        return self._filters is None or any(f in key for f in self._filters)

    def _bucket(self, graph: Any) -> dict[str, Any]:
        if graph is None:
            return self._host_values
        return self._graph_values.setdefault(graph, {})

    def maybe_outfeed(self, key: str, value: Any) -> None:
        """Offer ``value`` under ``key``; it is kept only if a filter matches."""
        graph = getattr(value, "graph", None)
        self._offered_in = None if graph is None else weakref.ref(graph)
        if self._wanted(key):
            self._bucket(graph)[key] = value

    def maybe_enqueue(self) -> Any:
        """Enqueue the values offered so far in the graph of the latest offer (the graph being
        traced), or on the host.

        Returns:
            The enqueue operation, or None when nothing was kept.
        """
        graph = None if self._offered_in is None else self._offered_in()
        bucket = self._bucket(graph)
        if not bucket:
            return None
        values = dict(bucket)
        bucket.clear()
        return self._queue.enqueue(values)

    @property
    def enqueued(self) -> bool:
        """Whether the wrapped queue is enqueued (in the graph being traced, or ever on the host)."""
        return self._queue.enqueued

    def dequeue(self) -> Any:
        """The enqueued dicts stacked along a new first axis, or None if nothing was enqueued."""
        if not self._queue.enqueued:
            return None
        return self._queue.dequeue()
