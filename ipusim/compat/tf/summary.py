"""``tf.summary``: TensorBoard event files written by ipusim, as TensorFlow 2 writes them.

``create_file_writer(logdir)`` makes a writer of ``events.out.tfevents.*.v2`` files that
TensorBoard reads; inside ``writer.as_default()``, ``scalar``, ``histogram``, ``text``,
``image`` and ``write`` add summaries at ``step`` (or the default step of ``as_default(step)`` /
``experimental.set_step``), unless ``record_if`` says not to. Each event's ``wall_time`` is
``time.time()`` when it is written (the simulated clock where ipusim runs one).

Not simulated (ipusim's NotSimulatedError says so): ``graph``, ``trace_on`` / ``trace_off`` /
``trace_export`` (no TensorFlow graph or profiler; the report's trace.json is the execution
trace) and ``audio``. ``flush_millis`` is accepted; events are written when ``max_queue`` are
waiting, on ``flush()`` / ``close()`` and when the program ends. Summaries inside a traced
``tf.function`` run on the host values they are given; a traced tensor is refused.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np

from ipusim import _summary_values as values
from ipusim._events import (
    EventFileWriter,
    event,
    string_tensor_proto,
    summary_value,
    tensor_proto,
)
from ipusim.errors import ConfigurationError, UnsupportedError

__all__ = [
    "SummaryWriter",
    "create_file_writer",
    "create_noop_writer",
    "experimental",
    "flush",
    "histogram",
    "image",
    "record_if",
    "scalar",
    "should_record_summaries",
    "text",
    "write",
]


class _State(threading.local):
    def __init__(self) -> None:
        self.writer: SummaryWriter | None = None
        self.record: list[bool | Callable[[], Any]] = []


_STATE = _State()
_STEP: list[int | None] = [None]
_OPEN: weakref.WeakSet[SummaryWriter] = weakref.WeakSet()


class SummaryWriter:
    """A summary writer (``tf.summary.SummaryWriter``); made by :func:`create_file_writer`."""

    def __init__(self, logdir: str | None, max_queue: int = 10, suffix: str = ".v2") -> None:
        self._file = EventFileWriter(logdir, max_queue, suffix) if logdir is not None else None
        self._closed = False
        if self._file is not None:
            _OPEN.add(self)

    @contextlib.contextmanager
    def as_default(self, step: Any = None) -> Iterator[SummaryWriter]:
        """Make this the default writer (and ``step`` the default step) within the block."""
        previous_writer, previous_step = _STATE.writer, _STEP[0]
        self.set_as_default(step)
        try:
            yield self
        finally:
            _STATE.writer = previous_writer
            if step is not None:
                _STEP[0] = previous_step
            self.flush()

    def set_as_default(self, step: Any = None) -> None:
        """Make this the default writer from now on (and ``step`` the default step)."""
        _STATE.writer = self
        if step is not None:
            _STEP[0] = _as_step(step)

    def init(self) -> None:
        """Nothing to do: the file exists from the writer's creation."""

    def flush(self) -> None:
        """Write the queued events to the file."""
        if self._file is not None and not self._closed:
            self._file.flush()

    def close(self) -> None:
        """Flush and stop writing; later summaries to this writer are an error."""
        self.flush()
        self._closed = True

    def _add(self, tag: str, value: bytes, step: Any) -> bool:
        if self._file is None:
            return False
        if self._closed:
            raise ConfigurationError(
                f"tf.summary: the writer of {str(self._file.logdir)!r} is closed; create a new "
                "one with tf.summary.create_file_writer"
            )
        self._file.add(event(time.time(), _resolve_step(step, tag), (value,)))
        return True


def create_file_writer(
    logdir: Any,
    max_queue: int | None = None,
    flush_millis: int | None = None,
    filename_suffix: str | None = None,
    name: str | None = None,
    experimental_trackable: bool = False,
    experimental_mesh: Any = None,
) -> SummaryWriter:
    """``tf.summary.create_file_writer``: a writer of an event file in ``logdir``."""
    if logdir is None:
        return create_noop_writer()
    return SummaryWriter(
        str(logdir), 10 if max_queue is None else int(max_queue), filename_suffix or ".v2"
    )


def create_noop_writer() -> SummaryWriter:
    """``tf.summary.create_noop_writer``: a writer that writes nothing."""
    return SummaryWriter(None)


def _as_step(step: Any) -> int:
    if hasattr(step, "numpy"):
        step = step.numpy()
    return int(np.asarray(step))


def _resolve_step(step: Any, tag: str) -> int:
    if step is not None:
        return _as_step(step)
    if _STEP[0] is None:
        raise ConfigurationError(
            f"tf.summary ({tag!r}): no step set; pass step=..., use writer.as_default(step) or "
            "tf.summary.experimental.set_step(step)"
        )
    return _STEP[0]


@contextlib.contextmanager
def record_if(condition: bool | Callable[[], Any]) -> Iterator[None]:
    """``tf.summary.record_if``: summaries in the block are written only when ``condition``
    (a bool, or a callable evaluated at each summary) holds."""
    _STATE.record.append(condition)
    try:
        yield
    finally:
        _STATE.record.pop()


def should_record_summaries() -> bool:
    """Whether a summary written now would be: a default writer and the innermost
    ``record_if`` condition true."""
    if _STATE.writer is None or _STATE.writer._file is None:
        return False
    if not _STATE.record:
        return True
    condition = _STATE.record[-1]
    return bool(np.asarray(condition() if callable(condition) else condition))


def _host(data: Any, where: str) -> Any:
    """``data`` as a host value (numpy, str, bytes)."""
    if isinstance(data, str | bytes):
        return data
    if hasattr(data, "numpy"):
        data = data.numpy()
    array = np.asarray(data)
    if array.dtype == object:
        raise UnsupportedError(
            f"tf.summary ({where!r}): ipusim writes summaries of host values (numpy arrays, numbers); received "
            f"{type(data).__name__}. Inside a traced tf.function, return the value (or outfeed "
            "it) and write the summary on the host"
        )
    return array


def _emit(tag: str, step: Any, make: Callable[[], bytes]) -> bool:
    writer = _STATE.writer
    return writer is not None and should_record_summaries() and writer._add(tag, make(), step)


def scalar(name: str, data: Any, step: Any = None, description: str | None = None) -> bool:
    """``tf.summary.scalar``: a float32 scalar for TensorBoard's scalars dashboard."""
    return _emit(name, step, lambda: values.scalar_value(name, _host(data, name), description))


def histogram(
    name: str,
    data: Any,
    step: Any = None,
    buckets: int | None = None,
    description: str | None = None,
) -> bool:
    """``tf.summary.histogram``: ``buckets`` (30) equal-width buckets of ``data``."""
    return _emit(
        name, step, lambda: values.histogram_value(name, _host(data, name), buckets, description)
    )


def text(name: str, data: Any, step: Any = None, description: str | None = None) -> bool:
    """``tf.summary.text``: a string for TensorBoard's text dashboard."""
    return _emit(name, step, lambda: values.text_value(name, _host(data, name), description))


def image(
    name: str, data: Any, step: Any = None, max_outputs: int = 3, description: str | None = None
) -> bool:
    """``tf.summary.image``: up to ``max_outputs`` images [k, h, w, c] as PNGs."""
    return _emit(
        name, step, lambda: values.image_value(name, _host(data, name), max_outputs, description)
    )


def write(
    tag: str, tensor: Any, step: Any = None, metadata: Any = None, name: str | None = None
) -> bool:
    """``tf.summary.write``: any numeric tensor with optional serialised ``SummaryMetadata``."""
    if metadata is not None and hasattr(metadata, "SerializeToString"):
        metadata = metadata.SerializeToString()

    def make() -> bytes:
        array = _host(tensor() if callable(tensor) else tensor, tag)
        if isinstance(array, str):
            array = array.encode()
        proto = string_tensor_proto(array) if isinstance(array, bytes) else tensor_proto(array)
        return summary_value(tag, proto, metadata or b"")

    return _emit(tag, step, make)


def flush(writer: SummaryWriter | None = None, name: str | None = None) -> None:
    """``tf.summary.flush``: flush ``writer`` (default: the default writer)."""
    target = writer if writer is not None else _STATE.writer
    if target is not None:
        target.flush()


@contextlib.contextmanager
def _summary_scope(
    name: str, default_name: str | None = None, values: Any = None
) -> Iterator[tuple[str, str]]:
    """``tf.summary.experimental.summary_scope``: (tag, scope name); ipusim has no name
    scopes, so both are ``name`` (or ``default_name``)."""
    tag = name or default_name or ""
    yield tag, tag


def _get_step() -> int | None:
    return _STEP[0]


def _set_step(step: Any) -> None:
    _STEP[0] = None if step is None else _as_step(step)


#: ``tf.summary.experimental``: the default step and ``summary_scope``.
experimental = SimpleNamespace(get_step=_get_step, set_step=_set_step, summary_scope=_summary_scope)


@atexit.register
def _flush_open_writers() -> None:
    for writer in list(_OPEN):
        writer.flush()
