"""Infeed and outfeed queues: the checks of reference §6.1 / §6.2, outfeed modes, and an outfeed
read by a host thread while the loop that fills it runs."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ipusim.compat.runtime import loops, ops
from ipusim.compat.runtime.feeds import (
    IPUInfeedQueue,
    IPUOutfeedMode,
    IPUOutfeedQueue,
    ScopedIPUOutfeedQueue,
)
from ipusim.compat.runtime.function import function
from ipusim.data import Dataset
from ipusim.graph.spec import TensorSpec
from ipusim.strategy import IPUStrategy

pytestmark = pytest.mark.usefixtures("one_ipu")


def _slices(n: int = 8) -> Dataset:
    return Dataset.from_tensor_slices(np.arange(2 * n, dtype=np.float32).reshape(n, 2))


# ---------------------------------------------------------------------- §6.1
def test_infeed_rejects_nested_tuples_and_undefined_shapes():
    nested = Dataset.from_tensor_slices(
        ((np.zeros((4, 2), np.float32), np.zeros((4, 2), np.float32)), np.zeros(4, np.float32))
    )
    with pytest.raises(ValueError, match="Nested list/tuple input shapes are not supported"):
        IPUInfeedQueue(nested)
    with pytest.raises(ValueError, match="drop_remainder=True"):
        IPUInfeedQueue(_slices().batch(3))
    IPUInfeedQueue(_slices().batch(3, drop_remainder=True))  # fully defined: fine


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prefetch_depth": 0}, "prefetch_depth must be greater than zero, but it is 0"),
        ({"prefetch_depth": 256}, "prefetch_depth must be less than 256, but it is 256"),
        ({"device_ordinal": "0"}, "Device ordinal must be an integer"),
        ({"device_ordinal": -1}, "Device ordinal must be >= 0"),
    ],
)
def test_infeed_argument_checks(kwargs, message):
    with pytest.raises(ValueError, match=message):
        IPUInfeedQueue(_slices(), **kwargs)


def test_infeed_get_next_is_obsolete_and_datasets_only():
    infeed = IPUInfeedQueue(_slices(), prefetch_depth=3)
    assert infeed.prefetch_depth == 3 and not infeed.dequeued
    with pytest.raises(ValueError, match="obsolete"):
        infeed.get_next()
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        IPUInfeedQueue([1, 2, 3])


def test_infeed_float64_elements_are_rejected_on_the_device():
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(np.zeros((4, 2))))
    with pytest.raises(TypeError, match="Unsupported data type for input: float64"):
        IPUStrategy().run(function(lambda: loops.repeat(2, lambda x: None, [], infeed)))


# ---------------------------------------------------------------------- §6.2
def test_outfeed_argument_checks():
    with pytest.raises(ValueError, match="IPUOutfeedMode"):
        IPUOutfeedQueue(outfeed_mode="all")
    with pytest.raises(ValueError, match="buffer depth cannot be less than 1"):
        IPUOutfeedQueue(buffer_depth=0)


def test_dequeue_before_enqueue():
    outfeed = IPUOutfeedQueue()
    with pytest.raises(
        ValueError, match="Trying to dequeue an outfeed which has not been enqueued"
    ):
        outfeed.dequeue()
    seen = []
    thread = threading.Thread(target=lambda: seen.append(outfeed.dequeue()))
    thread.start()
    thread.join()
    assert seen == [[]]  # from another thread: nothing yet, no error


def test_an_outfeed_is_enqueued_once_per_traced_function():
    outfeed = IPUOutfeedQueue()

    def twice():
        x = ops.constant([1.0, 2.0]) + 0.0
        outfeed.enqueue(x)
        outfeed.enqueue(x)

    with pytest.raises(ValueError, match="enqueued once"):
        IPUStrategy().run(function(twice))


def test_iteration_is_eager_and_all_mode_only():
    last = IPUOutfeedQueue(outfeed_mode=IPUOutfeedMode.LAST)
    with pytest.raises(RuntimeError, match="outfeed_mode"):
        iter(last)
    outfeed = IPUOutfeedQueue()

    def iterate_inside():
        iter(outfeed)

    with pytest.raises(RuntimeError, match="eager mode"):
        IPUStrategy().run(function(iterate_inside))

    def scoped_inside():
        ScopedIPUOutfeedQueue()

    with pytest.raises(RuntimeError, match="ScopedIPUOutfeedQueue can only be created in eager"):
        IPUStrategy().run(function(scoped_inside))


def test_last_mode_keeps_the_latest_element_and_all_mode_stacks():
    infeed_all = IPUInfeedQueue(_slices())
    infeed_last = IPUInfeedQueue(_slices())
    every = IPUOutfeedQueue()
    latest = IPUOutfeedQueue(outfeed_mode=IPUOutfeedMode.LAST)
    strategy = IPUStrategy()
    strategy.run(
        function(lambda: loops.repeat(5, lambda x: every.enqueue((x, x * 2.0)), [], infeed_all))
    )
    strategy.run(function(lambda: loops.repeat(5, lambda x: latest.enqueue(x), [], infeed_last)))
    a, b = every.dequeue()
    np.testing.assert_array_equal(a, np.arange(10, dtype=np.float32).reshape(5, 2))
    np.testing.assert_array_equal(b, 2 * a)
    np.testing.assert_array_equal(latest.dequeue(), [8.0, 9.0])  # no enqueue axis
    empty_a, _ = every.dequeue()  # everything was taken: empty arrays of the element's shape
    assert empty_a.shape == (0, 2)
    options = strategy.last_simulation.trace.to_dataframe()
    assert (options["name"] == "outfeed stall").sum() == 0  # LAST mode never waits


def test_a_host_thread_reads_every_element_once_in_order_while_the_loop_runs():
    n = 12
    received: list[float] = []
    got = [threading.Event() for _ in range(n)]

    def gated():
        for i in range(n):
            # Element i is produced only once the host thread has read element i - 1, so the
            # loop can only finish if the elements were read while it was running.
            if i and not got[i - 1].wait(timeout=30):
                raise RuntimeError(f"the host thread never read element {i - 1}")
            yield np.float32(i)

    dataset = Dataset.from_generator(gated, output_signature=TensorSpec((), "float32"))
    infeed = IPUInfeedQueue(dataset)
    outfeed = IPUOutfeedQueue()

    def consume():
        while len(received) < n:
            for value in outfeed:
                received.append(float(value.numpy()))
                got[len(received) - 1].set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    IPUStrategy().run(
        function(lambda: loops.repeat(n, lambda x: outfeed.enqueue(x * 10.0), [], infeed))
    )
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert received == [10.0 * i for i in range(n)]
    assert outfeed.dequeue().shape == (0,)  # nothing left: each element was delivered once
