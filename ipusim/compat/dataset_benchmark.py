"""``ipu.dataset_benchmark``: how fast can the host produce a ``Dataset``'s elements?

Mirrors IPU TensorFlow 2.5's ``dataset_benchmark`` / ``infeed_benchmark``. This is not a simulation:
it measures the real ``ipusim.data.Dataset`` pipeline on this host, which tells whether the input
pipeline could keep a (simulated) IPU fed. Feed the measured rate into
``IPUConfig.ipusim.host_dataset_rate`` to make the simulation see the same host.

The result is what IPU TensorFlow returns: a string tensor of shape ``[1]`` whose element is a JSON
document ``{"epochs": [{"bandwidth", "elements_per_second", "elements_processed", "time_elapsed",
"total_bytes_processed"}, ...]}``, one entry per epoch::

    result = ipu.dataset_benchmark.dataset_benchmark(ds, number_of_epochs=2, elements_per_epochs=500)
    stats = json.loads(result.numpy()[0])  # or json.loads(result[0])

Invalid arguments are **returned**, not raised, as the error objects IPU TensorFlow returns (a quirk
of the original the reference documents): check ``isinstance(result, Exception)`` if you pass
untrusted values.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np

from ipusim.data import Dataset
from ipusim.data._nest import flatten
from ipusim.errors import UnsupportedError

__all__ = ["OutOfRangeError", "StringTensor", "dataset_benchmark", "infeed_benchmark"]


class OutOfRangeError(Exception):
    """The dataset ran out of elements before the benchmark finished (``tf.errors.OutOfRangeError``)."""


class StringTensor(np.ndarray):
    """A numpy string array that also answers ``.numpy()``, as an eager TensorFlow tensor does."""

    def numpy(self) -> np.ndarray:
        """The values as a plain numpy array."""
        return np.asarray(self).view(np.ndarray)


def _check_counts(number_of_epochs: Any, elements_per_epochs: Any) -> Exception | None:
    for name, value in (
        ("number_of_epochs", number_of_epochs),
        ("elements_per_epochs", elements_per_epochs),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            return ValueError(
                f"Expected `{name}` to be at least 1, received {value!r}; pass a positive int."
            )
    return None


def dataset_benchmark(
    dataset: Any,
    number_of_epochs: int,
    elements_per_epochs: int,
    print_stats: bool = True,
    apply_options: bool = True,
    do_memcpy: bool = True,
) -> StringTensor | Exception:
    """Measure how fast ``dataset`` yields elements on this host.

    One iterator is created; each epoch takes the next ``elements_per_epochs`` elements from it
    (repeat the dataset to run several epochs over it) and, with ``do_memcpy``, copies every array
    of each element into a host buffer, as the infeed would.

    Args:
        dataset: an ``ipusim.data.Dataset`` (``tf.data.Dataset`` in ported scripts).
        number_of_epochs: epochs to time, at least 1.
        elements_per_epochs: elements per epoch, at least 1.
        print_stats: print the rate and bandwidth of each epoch to stderr.
        apply_options: accepted for compatibility (ipusim datasets have no options to apply).
        do_memcpy: copy each element's arrays, as the infeed does (otherwise only produce them).

    Returns:
        A ``StringTensor`` of shape [1] holding the JSON statistics; or, for invalid arguments, the
        ``ValueError`` / ``TypeError`` object (returned, not raised, as in IPU TensorFlow).

    Raises:
        OutOfRangeError: the dataset ends before ``number_of_epochs * elements_per_epochs``
            elements were produced.
    """
    error = _check_counts(number_of_epochs, elements_per_epochs)
    if error is not None:
        return error
    if not isinstance(dataset, Dataset):
        return TypeError(
            f"Expected `dataset` argument to be of type `tf.data.Dataset` (ipusim.data.Dataset), "
            f"but got {type(dataset).__name__} instead; build it with tf.data.Dataset."
        )
    return _run(dataset, int(number_of_epochs), int(elements_per_epochs), print_stats, do_memcpy)


def infeed_benchmark(
    infeed_queue: Any,
    number_of_epochs: int,
    elements_per_epochs: int,
    print_stats: bool = True,
    do_memcpy: bool = True,
) -> StringTensor | Exception:
    """:func:`dataset_benchmark` of the dataset behind an ``IPUInfeedQueue``.

    The queue must expose its dataset as ``dataset`` or ``_dataset``. Invalid arguments are
    returned, as in :func:`dataset_benchmark`.
    """
    error = _check_counts(number_of_epochs, elements_per_epochs)
    if error is not None:
        return error
    from ipusim.compat.runtime.feeds import IPUInfeedQueue

    if not isinstance(infeed_queue, IPUInfeedQueue):
        return TypeError(
            "Expected `infeed_queue` argument to be of type "
            f"`ipu.ipu_infeed_queue.IPUInfeedQueue`, but got {type(infeed_queue).__name__} instead."
        )
    dataset = getattr(infeed_queue, "dataset", None) or getattr(infeed_queue, "_dataset", None)
    if not isinstance(dataset, Dataset):
        raise UnsupportedError(
            "infeed_benchmark: this IPUInfeedQueue does not expose its dataset (`dataset` or "
            "`_dataset`); call dataset_benchmark on the dataset instead."
        )
    return _run(dataset, int(number_of_epochs), int(elements_per_epochs), print_stats, do_memcpy)


def _run(
    dataset: Dataset, epochs: int, per_epoch: int, print_stats: bool, do_memcpy: bool
) -> StringTensor:
    iterator = iter(dataset)
    buffers: dict[int, np.ndarray] = {}
    results = []
    for epoch in range(epochs):
        total_bytes = 0
        start = time.perf_counter()
        for produced in range(per_epoch):
            try:
                element = next(iterator)
            except StopIteration:
                raise OutOfRangeError(
                    f"The dataset iterator reached the end of the dataset in epoch {epoch} "
                    f"after {epoch * per_epoch + produced} of the {epochs * per_epoch} elements "
                    "requested; repeat() the dataset or request fewer elements."
                ) from None
            for index, leaf in enumerate(flatten(element)):
                array = np.asarray(leaf)
                total_bytes += array.nbytes
                if do_memcpy:
                    _copy(buffers, index, array)
        elapsed = max(time.perf_counter() - start, 1e-9)  # a timer tick of 0 would divide by 0
        stats = {
            "bandwidth": total_bytes / (1e9 * elapsed),
            "elements_per_second": per_epoch / elapsed,
            "elements_processed": float(per_epoch),
            "time_elapsed": elapsed,
            "total_bytes_processed": float(total_bytes),
        }
        results.append(stats)
        if print_stats:
            print(f"Processed: {stats['elements_per_second']} elements/second.", file=sys.stderr)
            print(f"Bandwidth: {stats['bandwidth']} GB/s.", file=sys.stderr)
            print(f"Dataset iterator completed epoch {epoch}.", file=sys.stderr)
    return np.array([json.dumps({"epochs": results}, indent="\t", sort_keys=True)]).view(
        StringTensor
    )


def _copy(buffers: dict[int, np.ndarray], index: int, array: np.ndarray) -> None:
    """Copy ``array`` into the reusable host buffer of leaf ``index`` (the infeed's memcpy)."""
    buffer = buffers.get(index)
    if buffer is None or buffer.shape != array.shape or buffer.dtype != array.dtype:
        buffers[index] = buffer = np.empty_like(array)
    np.copyto(buffer, array)
