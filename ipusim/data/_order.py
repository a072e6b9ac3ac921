"""Order and length nodes: shuffle, repeat, take, skip, prefetch and cache.

Each of them keeps the index plan of its input when it has one (see ``_node``), so a
``batch()`` downstream can still gather whole batches at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ipusim.data._node import (
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    IndexSource,
    Node,
    chunk_ints,
    flat_ints,
    skip_chunks,
    take_chunks,
)


class _KeepsPlan(Node):
    """A node over the rows of its input's index source when it has one (its :meth:`indices`
    say which), else over the input's elements (its ``elements()``)."""

    elements: Callable[[], Iterator[Any]]  # what each subclass defines

    def index_source(self) -> IndexSource | None:
        return self.input.index_source()

    def iterate(self) -> Iterator[Any]:
        if self.index_source() is not None:
            return super().iterate()
        return self.elements()


class _Counted(_KeepsPlan):
    """A node with a ``count`` argument (repeat, take, skip)."""

    def __init__(self, input_: Node, count: int, **params: Any) -> None:
        super().__init__(input_, count=count, **params)
        self.count = count


class Shuffle(_KeepsPlan):
    """The buffer shuffle: keep ``buffer_size`` elements, emit a random one, refill its slot."""

    kind = "ShuffleDataset"

    def __init__(self, input_: Node, buffer_size: int, seed: int, reshuffle: bool, **params: Any):
        super().__init__(
            input_,
            buffer_size=buffer_size,
            seed=seed,
            reshuffle_each_iteration=reshuffle,
            **params,
        )
        self.buffer_size = buffer_size
        self.seed = seed
        self.reshuffle = reshuffle
        self._passes = itertools.count()

    def _rng(self) -> np.random.Generator:
        epoch = next(self._passes) if self.reshuffle else 0
        return np.random.default_rng(np.random.SeedSequence([self.seed, epoch]))

    def indices(self) -> Iterator[np.ndarray]:
        rng = self._rng()
        upstream = flat_ints(self.input.indices())
        return chunk_ints(shuffle_stream(upstream, self.buffer_size, rng))

    def elements(self) -> Iterator[Any]:
        rng = self._rng()
        return shuffle_stream(self.input.iterate(), self.buffer_size, rng)


_END = object()
_DRAWS = 1024


def shuffle_stream(
    items: Iterable[Any], buffer_size: int, rng: np.random.Generator
) -> Iterator[Any]:
    """Yield ``items`` in buffer-shuffled order; the draws depend only on the item count.

    Fill a buffer with the first ``buffer_size`` items. While input remains: pick a uniform
    random slot, emit its item and put the next input item in that slot. When the input is
    exhausted, emit the remaining items by the same random picks, moving the last buffered item
    into each emptied slot.
    """
    items = iter(items)
    buffer = list(itertools.islice(items, buffer_size))
    if len(buffer) == buffer_size:
        exhausted = False
        while not exhausted:
            for slot in rng.integers(0, buffer_size, size=_DRAWS).tolist():
                following = next(items, _END)
                if following is _END:
                    exhausted = True
                    break
                chosen = buffer[slot]
                buffer[slot] = following
                yield chosen
    if buffer:
        for slot in rng.integers(0, np.arange(len(buffer), 0, -1)).tolist():
            chosen = buffer[slot]
            last = buffer.pop()
            if slot < len(buffer):
                buffer[slot] = last
            yield chosen


class Repeat(_Counted):
    kind = "RepeatDataset"

    def cardinality(self) -> int:
        n = self.input.cardinality()
        if self.count < 0:
            return 0 if n == 0 else INFINITE_CARDINALITY
        if self.count == 0:
            return 0
        return n if n < 0 else n * self.count

    def indices(self) -> Iterator[np.ndarray]:
        return self._rounds(self.input.indices)

    def elements(self) -> Iterator[Any]:
        return self._rounds(self.input.iterate)

    def _rounds(self, start_pass: Callable[[], Iterator[Any]]) -> Iterator[Any]:
        done = 0
        while self.count < 0 or done < self.count:
            produced = False
            for item in start_pass():
                produced = True
                yield item
            if not produced:  # an empty input would otherwise repeat forever
                return
            done += 1


class Take(_Counted):
    kind = "TakeDataset"

    def cardinality(self) -> int:
        n = self.input.cardinality()
        if n == UNKNOWN_CARDINALITY:
            return n
        if n == INFINITE_CARDINALITY:
            return self.count
        return n if self.count < 0 else min(n, self.count)

    def indices(self) -> Iterator[np.ndarray]:
        return take_chunks(self.input.indices(), self.count)

    def elements(self) -> Iterator[Any]:
        if self.count == 0:
            return iter(())
        elements = self.input.iterate()
        return elements if self.count < 0 else itertools.islice(elements, self.count)


class Skip(_Counted):
    kind = "SkipDataset"

    def cardinality(self) -> int:
        n = self.input.cardinality()
        if n < 0:
            return n
        return 0 if self.count < 0 else max(0, n - self.count)

    def indices(self) -> Iterator[np.ndarray]:
        return skip_chunks(self.input.indices(), self.count)

    def elements(self) -> Iterator[Any]:
        elements = self.input.iterate()
        if self.count < 0:
            return _drain(elements)
        return itertools.islice(elements, self.count, None)


class Shard(_KeepsPlan):
    """Every ``num_shards``-th element, starting at element ``index`` (``tf.data`` shard)."""

    kind = "ShardDataset"

    def __init__(self, input_: Node, num_shards: int, index: int, **params: Any) -> None:
        super().__init__(input_, num_shards=num_shards, index=index, **params)
        self.num_shards = num_shards
        self.index = index

    def cardinality(self) -> int:
        n = self.input.cardinality()
        if n < 0:
            return n
        return n // self.num_shards + (1 if self.index < n % self.num_shards else 0)

    def indices(self) -> Iterator[np.ndarray]:
        position = 0  # of the chunk's first element in the input
        for chunk in self.input.indices():
            first = (self.index - position) % self.num_shards
            picked = chunk[first :: self.num_shards]
            position += chunk.size
            if picked.size:
                yield picked

    def elements(self) -> Iterator[Any]:
        return itertools.islice(self.input.iterate(), self.index, None, self.num_shards)


def _drain(elements: Iterator[Any]) -> Iterator[Any]:
    for _ in elements:
        pass
    yield from ()


class Prefetch(_KeepsPlan):
    """Pass-through; ``buffer_size`` is recorded for the host-side timing model."""

    kind = "PrefetchDataset"

    def __init__(self, input_: Node, buffer_size: int, **params: Any) -> None:
        super().__init__(input_, buffer_size=buffer_size, **params)
        self.buffer_size = buffer_size

    def indices(self) -> Iterator[np.ndarray]:
        return self.input.indices()

    def elements(self) -> Iterator[Any]:
        return self.input.iterate()


class Cache(_KeepsPlan):
    """In-memory cache: the first complete pass is recorded and replayed from then on.

    Over an index plan the cache records the index stream (the rows themselves already live
    in memory), so a shuffled order before ``cache()`` is frozen exactly as TF freezes it.
    """

    kind = "CacheDataset"

    def __init__(self, input_: Node, **params: Any) -> None:
        super().__init__(input_, filename="", **params)
        self._stored: list[Any] | None = None

    def indices(self) -> Iterator[np.ndarray]:
        if self._stored is not None:
            return iter(self._stored)
        return self._record(self.input.indices())

    def elements(self) -> Iterator[Any]:
        if self._stored is not None:
            return iter(self._stored)
        return self._record(self.input.iterate())

    def _record(self, items: Iterator[Any]) -> Iterator[Any]:
        recorded = []
        for item in items:
            recorded.append(item)
            yield item
        if self._stored is None:  # only a complete pass is kept
            self._stored = recorded
