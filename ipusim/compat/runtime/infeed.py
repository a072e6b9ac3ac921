"""Infeeds (``ipu.ipu_infeed_queue``, IPU TensorFlow 2.5) and dataset iterators read on the IPU.

An :class:`IPUInfeedQueue` streams a ``Dataset`` to the device: a loop (or a pipeline) that is
given the queue dequeues one element per iteration. In a traced function the element is a set of
placeholders; every execution pulls the next element from the queue's iterator (created on first
use and kept, so successive runs continue where the last one stopped).
"""

from __future__ import annotations

from typing import Any

from ipusim.compat.runtime import context
from ipusim.compat.runtime.dispatch import is_int
from ipusim.data import Dataset
from ipusim.data.dataset import set_iterator_next_hook
from ipusim.errors import (
    ConfigurationError,
    IncompatibleStateError,
    InvalidTypeError,
    UnsupportedError,
)
from ipusim.graph.graph import Symbol
from ipusim.graph.spec import TensorSpec
from ipusim.keras.engine.nest import flatten, pack_sequence_as

__all__ = ["IPUInfeedQueue", "IPUIterator", "IPUOwnedIterator", "TracedIterator"]


def check_device_ordinal(device_ordinal: Any) -> int:
    if device_ordinal is None:
        return 0
    if not is_int(device_ordinal):
        raise ConfigurationError(
            f"Device ordinal must be an integer: `device_ordinal` received {device_ordinal!r}; "
            "pass the IPU device index, e.g. 0"
        )
    if device_ordinal < 0:
        raise ConfigurationError(
            f"Device ordinal must be >= 0: `device_ordinal` received {device_ordinal}; pass the "
            "IPU device index, e.g. 0"
        )
    return int(device_ordinal)


def element_placeholders(element_spec: Any, what: str) -> tuple[Any, list[Symbol]]:
    """Placeholders of the current trace's graph for one element of ``element_spec``.

    Returns:
        The element structure (placeholders as leaves) and the flat placeholder list.
    """
    ctx = context.current()
    if ctx is None:
        raise IncompatibleStateError(
            f"{what} can only be read inside a function running on the IPU (a tf.function run "
            "by strategy.run, a loop body or a pipeline stage)"
        )
    specs = flatten(element_spec)
    placeholders = []
    for spec in specs:
        check_input_dtype(spec.dtype)
        placeholders.append(ctx.graph.placeholder(TensorSpec(spec.shape, spec.dtype)))
    return pack_sequence_as(element_spec, placeholders), placeholders


def check_input_dtype(dtype: str) -> None:
    """IPUs do not take float64 inputs (IPU TensorFlow rejects them)."""
    if dtype == "float64":
        raise InvalidTypeError(
            "Unsupported data type for input: float64. IPUs compute in float32 or float16; cast "
            "the data first (e.g. in Dataset.map with tf.cast(x, tf.float32))."
        )


def _check_element_spec(element_spec: Any) -> None:
    top = element_spec if isinstance(element_spec, tuple) else (element_spec,)
    for item in top:
        if isinstance(item, tuple | list):
            raise ConfigurationError(
                "Nested list/tuple input shapes are not supported: the dataset's elements are "
                f"{element_spec}. Flatten each element to one tuple (or use a dict)."
            )
    for spec in flatten(element_spec):
        if not spec.is_fully_defined:
            raise ConfigurationError(
                f"Output shape {spec.shape} is not fully defined: every element fed to the IPU "
                "needs a static shape. If using Dataset.batch, set drop_remainder=True."
            )


class _Source:
    """Pulls elements from a dataset iterator, one per execution of a dequeue."""

    def __init__(self, make_iterator: Any, what: str, owner: Any = None) -> None:
        self._make_iterator = make_iterator
        self._iterator: Any = None
        self._what = what
        self.owner = owner
        self.pulled = 0

    def pull(self) -> Any:
        if self._iterator is None:
            self._iterator = iter(self._make_iterator())
        try:
            element = next(self._iterator)
        except StopIteration:
            from ipusim.compat.dataset_benchmark import OutOfRangeError

            raise OutOfRangeError(
                f"{self._what} ran out of data after {self.pulled} elements. Make the dataset "
                "long enough for every iteration (e.g. dataset.repeat())."
            ) from None
        self.pulled += 1
        return element


class IPUInfeedQueue:
    """Feeds the elements of ``dataset`` to a loop or pipeline running on the IPU.

    Args:
        dataset: an ``ipusim.data.Dataset`` (``tf.data.Dataset``) whose elements have fully
            defined shapes (batch with ``drop_remainder=True``).
        device_ordinal: the IPU device (default 0).
        prefetch_depth: elements buffered on the device side, 1 to 255 (default 1); the timing
            model uses it as the infeed's prefetch depth.
        optimise_latency: accepted for compatibility (no effect on the simulation).
        **kwargs: ``feed_name`` (TF 2.1 spelling) is accepted and ignored.

    Raises:
        TypeError: ``dataset`` is not a Dataset, or an unknown keyword argument.
        ValueError: nested tuple elements, shapes not fully defined, a bad ``prefetch_depth`` or
            ``device_ordinal``.
    """

    def __init__(
        self,
        dataset: Any,
        device_ordinal: int | None = None,
        prefetch_depth: int | None = None,
        optimise_latency: bool = False,
        **kwargs: Any,
    ) -> None:
        unknown = set(kwargs) - {"feed_name"}
        if unknown:
            raise InvalidTypeError(
                f"IPUInfeedQueue: unexpected keyword argument(s) {sorted(unknown)}"
            )
        if not isinstance(dataset, Dataset):
            raise InvalidTypeError(
                f"IPUInfeedQueue: `dataset` must be a tf.data.Dataset (ipusim.data.Dataset), "
                f"received {type(dataset).__name__}"
            )
        self._device_ordinal = check_device_ordinal(device_ordinal)
        depth = 1 if prefetch_depth is None else prefetch_depth
        if not is_int(depth):
            raise ConfigurationError(
                f"prefetch_depth must be an int from 1 to 255, received {depth!r}"
            )
        if depth <= 0:
            raise ConfigurationError(f"prefetch_depth must be greater than zero, but it is {depth}")
        if depth > 255:
            raise ConfigurationError(f"prefetch_depth must be less than 256, but it is {depth}")
        _check_element_spec(dataset.element_spec)
        self._dataset = dataset
        self._prefetch_depth = int(depth)
        self._optimise_latency = bool(optimise_latency)
        self._element_spec = dataset.element_spec
        self._source = _Source(lambda: dataset, "The infeed's dataset", self)
        self._dequeued = False

    # ------------------------------------------------------------------ TF surface
    @property
    def initializer(self) -> context.Operation:
        """The infeed is initialised when it is first read; this is a no-op kept for scripts."""
        return context.Operation("infeed_initializer")

    @property
    def deleter(self) -> context.Operation:
        return context.Operation("infeed_deleter")

    @property
    def dequeued(self) -> bool:
        """Whether a loop or pipeline has dequeued this infeed."""
        return self._dequeued

    @property
    def number_of_tuple_elements(self) -> int:
        spec = self._element_spec
        return len(spec) if isinstance(spec, tuple) else 1

    @property
    def element_spec(self) -> Any:
        return self._element_spec

    @property
    def prefetch_depth(self) -> int:
        return self._prefetch_depth

    @property
    def element_bytes(self) -> int:
        """Bytes of one element (what one iteration streams from the host)."""
        return sum(spec.nbytes for spec in flatten(self._element_spec))

    def get_next(self) -> Any:
        raise ConfigurationError(
            "`get_next()` is now obsolete as the IPUInfeedQueue is now automatically dequeued by "
            "the loop: pass the queue as `infeed_queue=` to loops.repeat / pipeline and take the "
            "element as the body's arguments."
        )

    def _dequeue(self) -> Any:
        """The next element, as placeholders of the graph being traced (filled at every run)."""
        structure, placeholders = element_placeholders(self._element_spec, "An IPUInfeedQueue")
        ctx = context.current()
        assert ctx is not None  # element_placeholders raised otherwise
        ctx.dequeues.append(context.Dequeue(self._source, placeholders))
        self._dequeued = True
        return structure

    def __repr__(self) -> str:
        return f"IPUInfeedQueue(element_spec={self._element_spec}, prefetch_depth={self._prefetch_depth})"


class IPUIterator:
    """An iterator over a dataset whose elements are read on the IPU (``iter(dataset)`` under an
    ``IPUStrategy``): ``next()`` inside a traced function dequeues one element per execution.

    Args:
        dataset: the dataset.
        infeed_spec / element_spec: accepted for compatibility.
        **kwargs: IPUInfeedQueue options (``prefetch_depth``, ...).
    """

    def __init__(
        self, dataset: Any = None, infeed_spec: Any = None, element_spec: Any = None, **kwargs: Any
    ) -> None:
        self._infeed = IPUInfeedQueue(dataset, **kwargs)

    @property
    def element_spec(self) -> Any:
        return self._infeed.element_spec

    def __iter__(self) -> IPUIterator:
        return self

    def __next__(self) -> Any:
        if not context.is_tracing():
            raise IncompatibleStateError(
                "Accessing dataset elements can not be accessed in eager mode when inside "
                "'IPUStrategy': read them inside a tf.function (experimental_compile=True / "
                "jit_compile=True) run by strategy.run, or create the strategy with "
                "enable_dataset_iterators=False."
            )
        return self._infeed._dequeue()

    def get_next(self) -> Any:
        return next(self)

    def get_next_as_optional(self) -> Any:
        raise UnsupportedError(
            "get_next_as_optional() is not supported for IPU dataset iterators; use next()"
        )


class IPUOwnedIterator(IPUIterator):
    """The iterator ``iter(dataset)`` returns inside an ``IPUStrategy`` (see :class:`IPUIterator`)."""


class TracedIterator:
    """Stands for a plain dataset iterator passed to a traced function: ``next()`` reads one
    element per execution from that iterator (so a re-run continues where the last one stopped)."""

    def __init__(self, iterator: Any) -> None:
        spec = iterator.element_spec
        _check_element_spec(spec)
        self._spec = spec
        self._source = _Source(lambda: iterator, "The dataset iterator")

    @property
    def element_spec(self) -> Any:
        return self._spec

    def __iter__(self) -> TracedIterator:
        return self

    def __next__(self) -> Any:
        structure, placeholders = element_placeholders(self._spec, "A dataset iterator")
        ctx = context.current()
        assert ctx is not None  # element_placeholders raised otherwise
        ctx.dequeues.append(context.Dequeue(self._source, placeholders))
        return structure

    def get_next(self) -> Any:
        return next(self)


def _captured_iterator_next(iterator: Any) -> Any:
    """``next()`` on a dataset iterator the traced function did not receive as an argument (a
    closure or global): while tracing, a dequeue from that iterator, as for an argument; outside
    any trace, NotImplemented (read an element as usual)."""
    if not context.is_tracing():
        return NotImplemented
    return next(TracedIterator(iterator))


set_iterator_next_hook(_captured_iterator_next)
