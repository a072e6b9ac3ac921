"""Custom training loops: infeed -> loops.repeat -> outfeed inside a tf.function run by
strategy.run (the "Training a model" guide, seed 001), loop-carried values, while_loop, training
with GradientTape, and the loop errors of reference §6.3."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.compat.runtime import loops, ops
from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.tape import GradientTape
from ipusim.data import Dataset
from ipusim.strategy import IPUStrategy

pytestmark = pytest.mark.usefixtures("one_ipu")


def test_seed_001_loop_outfeeds_sum_and_difference_of_every_iteration():
    # perf_training_example: a constant of 800 ones mapped to the pair (x, x), repeated.
    dataset = Dataset.from_tensors(ops.constant(1.0, shape=[800])).map(lambda x: [x, x]).repeat()
    infeed = IPUInfeedQueue(dataset)
    outfeed = IPUOutfeedQueue()
    strategy = IPUStrategy()
    with strategy.scope():

        def body(x1, x2):
            d1 = x1 + x2
            d2 = x1 - x2
            outfeed.enqueue({"d1": d1, "d2": d2})

        @function(experimental_compile=True)
        def my_net():
            return loops.repeat(10, body, [], infeed)

        strategy.run(my_net)
        result = outfeed.dequeue()
    assert sorted(result) == ["d1", "d2"]
    np.testing.assert_array_equal(result["d1"], np.full((10, 800), 2.0, np.float32))
    np.testing.assert_array_equal(result["d2"], np.zeros((10, 800), np.float32))
    assert result["d1"].dtype == np.float32
    report = strategy.last_simulation
    assert report.steps == 10 and report.kind == "predict"
    trace = report.trace.to_dataframe()
    copies = trace[(trace["name"] == "infeed copy")]
    assert len(copies) == 10
    assert set(copies["bytes"]) == {2 * 800 * 4}  # both tensors of one element, float32
    outfeed_copies = trace[trace["name"] == "outfeed copy"]
    assert len(outfeed_copies) == 10 and set(outfeed_copies["bytes"]) == {2 * 800 * 4}


def test_loop_values_follow_the_dataset_element_by_element():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    dataset = Dataset.from_tensor_slices(x).map(lambda v: (v, 10 * v))
    infeed = IPUInfeedQueue(dataset)
    outfeed = IPUOutfeedQueue()

    def body(x1, x2):
        outfeed.enqueue({"d1": x1 + x2, "d2": x1 - x2})

    @function(jit_compile=True)
    def net():
        return loops.repeat(3, body, [], infeed)

    strategy = IPUStrategy()
    strategy.run(net)
    first = outfeed.dequeue()
    strategy.run(net)  # the infeed continues where the first run stopped
    second = outfeed.dequeue()
    np.testing.assert_array_equal(first["d1"], 11 * x[:3])
    np.testing.assert_array_equal(first["d2"], -9 * x[:3])
    np.testing.assert_array_equal(second["d1"], 11 * x[3:])


def test_loop_carried_values_and_while_loop():
    @function
    def counting():
        count = loops.repeat(5, lambda c: c + 1, [ops.constant(0)])
        total, steps = loops.while_loop(
            lambda t, s: ops.less(t, 7.5),
            lambda t, s: (t + 2.0, s + 1),
            [ops.constant(0.0), ops.constant(0)],
        )
        capped = loops.while_loop(
            lambda t: ops.less(t, 100.0),
            lambda t: t + 1.0,
            [ops.constant(0.0)],
            maximum_iterations=3,
        )
        return count, total, steps, capped

    count, total, steps, capped = IPUStrategy().run(counting)
    assert int(count) == 5 and count.dtype == np.int32
    assert float(total) == 8.0 and int(steps) == 4
    assert float(capped) == 3.0


def test_training_loop_with_gradient_tape_matches_hand_computed_sgd():
    # loss = mean((w * x - t)^2): dL/dw = mean(2 (w x - t) x); plain SGD.
    xs = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], dtype=np.float32)
    ts = np.array([[2.0, 1.0], [0.0, 1.0], [1.0, -2.0]], dtype=np.float32)
    w = ops.Variable(np.float32(0.5), name="w")
    optimizer = keras.optimizers.SGD(0.1)
    losses = IPUOutfeedQueue()
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices((xs, ts)))

    def body(x, t):
        with GradientTape() as tape:
            loss = ops.reduce_mean(ops.square(w * x - t))
        (grad,) = tape.gradient(loss, [w])
        optimizer.apply_gradients([(grad, w)])
        return losses.enqueue(loss)

    IPUStrategy().run(function(lambda: loops.repeat(3, body, [], infeed)))
    expected_w, expected_losses = 0.5, []
    for x, t in zip(xs.astype(np.float64), ts.astype(np.float64)):
        expected_losses.append(np.mean((expected_w * x - t) ** 2))
        expected_w -= 0.1 * np.mean(2 * (expected_w * x - t) * x)
    np.testing.assert_allclose(float(w.numpy()), expected_w, rtol=1e-6)
    np.testing.assert_allclose(losses.dequeue(), expected_losses, rtol=1e-6)


def test_tf_range_loop_in_a_function_is_one_device_loop():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 4)).astype(np.float32)
    y = rng.integers(0, 3, 40).astype(np.int32)
    iterator = iter(Dataset.from_tensor_slices((x, y)).batch(8, drop_remainder=True).repeat())
    outfeed = IPUOutfeedQueue()
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.layers.Dense(3)])
    model.build((None, 4))
    start = [w.numpy() for w in model.weights]
    optimizer = keras.optimizers.SGD(0.05)

    @function(experimental_compile=True)
    def training_step(num_iterations, it, in_model, opt):
        for _ in ops.range(num_iterations):
            features, labels = next(it)
            with GradientTape() as tape:
                logits = in_model(features, training=True)
                loss = ops.reduce_mean(
                    ops.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
                )
            grads = tape.gradient(loss, in_model.trainable_variables)
            opt.apply_gradients(zip(grads, in_model.trainable_variables))
            outfeed.enqueue(loss)

    strategy = IPUStrategy()
    strategy.run(training_step, args=[5, iterator, model, optimizer])
    assert outfeed.dequeue().shape == (5,)
    assert strategy.last_simulation.steps == 5 and strategy.last_simulation.kind == "train"
    # The same five batches through Keras' own training step give the same weights.
    check = keras.Sequential([keras.layers.Dense(3)])
    check.build((None, 4))
    check.set_weights(start)
    check.compile(
        optimizer=keras.optimizers.SGD(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    for i in range(5):
        check.train_on_batch(x[8 * i : 8 * i + 8], y[8 * i : 8 * i + 8])
    for got, want in zip(model.get_weights(), check.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- §6.3 errors
def _run(fn):
    return IPUStrategy().run(function(fn))


def test_body_that_cannot_take_the_inputs_is_a_type_error():
    with pytest.raises(TypeError, match="You specified 1 inputs"):
        _run(lambda: loops.repeat(2, lambda a, b: (a, b), [ops.constant(1.0)]))
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(np.zeros((4, 2), np.float32)))
    with pytest.raises(TypeError, match="1 additional inputs from infeed"):
        _run(lambda: loops.repeat(2, lambda a: a, [ops.constant(1.0)], infeed))


def test_body_returning_a_tensor_after_an_operation_is_a_value_error():
    outfeed = IPUOutfeedQueue()

    def body(a):
        return outfeed.enqueue(a), a

    with pytest.raises(ValueError, match="zero or more Tensor values followed by zero or more"):
        _run(lambda: loops.repeat(2, body, [ops.constant(1.0)]))


def test_body_outputs_must_match_the_inputs_types():
    with pytest.raises(TypeError, match="Mismatch between input types and output types"):
        _run(lambda: loops.repeat(2, lambda a: ops.cast(a, "int32"), [ops.constant(1.0)]))
    with pytest.raises(TypeError, match="Mismatch between input types and output types"):
        _run(lambda: loops.repeat(2, lambda a: (a, a), [ops.constant(1.0)]))


def test_bad_loop_arguments():
    with pytest.raises(ValueError, match="positive int"):
        loops.repeat(0, lambda: None)
    with pytest.raises(TypeError, match="not an instance of ipu_infeed_queue.IPUInfeedQueue"):
        _run(lambda: loops.repeat(2, lambda: None, [], infeed_queue=[1, 2]))


def test_a_dataset_too_short_for_the_loop_says_so():
    from ipusim.compat.dataset_benchmark import OutOfRangeError

    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(np.zeros((2, 3), np.float32)))
    with pytest.raises(OutOfRangeError, match="ran out of data after 2 elements"):
        _run(lambda: loops.repeat(3, lambda x: None, [], infeed))


def test_layer_state_updates_and_dropout_run_in_training_loops():
    x = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 4.0], [7.0, 0.0]], np.float32)
    bn = keras.layers.BatchNormalization(momentum=0.9)
    drop = keras.layers.Dropout(0.5)
    outfeed = IPUOutfeedQueue()
    infeed = IPUInfeedQueue(Dataset.from_tensors(x).repeat())

    def body(batch):
        return outfeed.enqueue(drop(bn(batch, training=True), training=True))

    IPUStrategy().run(function(lambda: loops.repeat(1, body, [], infeed)))
    moving_mean = next(w for w in bn.weights if "moving_mean" in w.name)
    np.testing.assert_allclose(moving_mean.numpy(), 0.1 * x.mean(axis=0), rtol=1e-6)
    dropped = outfeed.dequeue()[0]
    assert (dropped == 0).any()  # dropout was active: the layer was called with training=True


def test_seed_001_example_through_the_tensorflow_names():
    from ipusim.compat import ipu, tf

    def create_dataset():
        ds = tf.data.Dataset.from_tensors(tf.constant(1.0, shape=[800]))
        ds = ds.map(lambda x: [x, x])
        ds = ds.repeat()
        return ds.prefetch(16)

    infeed_queue = ipu.ipu_infeed_queue.IPUInfeedQueue(create_dataset())
    outfeed_queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():

        def body(x1, x2):
            d1 = x1 + x2
            d2 = x1 - x2
            outfeed_queue.enqueue({"d1": d1, "d2": d2})

        @tf.function(experimental_compile=True)
        def my_net():
            return ipu.loops.repeat(10, body, [], infeed_queue)

        strategy.run(my_net)
        result = outfeed_queue.dequeue()
    assert set(result) == {"d1", "d2"}
    assert (result["d1"].numpy() == 2.0).all() and result["d1"].shape == (10, 800)
    assert (result["d2"].numpy() == 0.0).all() and result["d2"].shape == (10, 800)
