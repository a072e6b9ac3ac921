"""The rest of the IPU API around the programs (issue 23 item 1): ALS in a custom training loop,
``ipu.outlined_function``, the ``ipu.scopes`` and ``ipu.utils`` functions."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ipusim.compat import ipu
from ipusim.compat.runtime import loops, ops
from ipusim.compat.runtime.feeds import IPUInfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.tape import GradientTape
from ipusim.data import Dataset
from ipusim.errors import UnsupportedError
from ipusim.keras import optimizers
from ipusim.keras.ipu.optimizers import ALSOptimizer
from ipusim.strategy import IPUStrategy

pytestmark = pytest.mark.usefixtures("one_ipu")


def _train(optimizer_step, x_rows: np.ndarray, iterations: int) -> np.ndarray:
    w = ops.Variable(np.ones(3, np.float32))
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(x_rows))

    def body(x):
        with GradientTape() as tape:
            loss = ops.reduce_sum(w * w * x)
        return optimizer_step(loss, w, tape)

    IPUStrategy().run(function(lambda: loops.repeat(iterations, body, [], infeed)))
    return w.numpy()


def test_als_minimize_in_a_traced_loop_scales_the_loss_and_applies_unscaled_gradients() -> None:
    als = ALSOptimizer(
        optimizers.SGD(0.1),
        initial_loss_scaling_factor=1,
        update_frequency=1,
        max_loss_scaling_factor=8,
    )
    x = np.array([[1.0, 2.0, -1.0]] * 4, np.float32)
    w = _train(lambda loss, v, tape: als.minimize(loss, [v], tape=tape), x, 4)
    # d/dw sum(w^2 x) = 2 w x; four plain SGD steps (the scale cancels out).
    expected = np.ones(3)
    for _ in range(4):
        expected = expected - 0.1 * 2 * expected * x[0]
    np.testing.assert_allclose(w, expected, rtol=1e-6)
    # float32 gradients: no statistics, so the scale doubles at each due update up to 4 (< 8).
    assert als.loss_scaling_factor == 4


def test_outlined_function_gives_the_same_numbers_as_the_inlined_code() -> None:
    @ipu.outlined_function
    def square_sum(v, x):
        return ops.reduce_sum(v * v * x)

    @ipu.outlined_function(unique_sharding=True)
    def twice(t):
        return t + t

    sgd = optimizers.SGD(0.1)

    def step(loss, v, tape):
        del loss
        return sgd.apply_gradients(zip(tape.gradient(twice_loss[0], [v]), [v]))

    twice_loss: list = []
    w = ops.Variable(np.ones(3, np.float32))
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(np.ones((2, 3), np.float32)))

    def body(x):
        with GradientTape() as tape:
            twice_loss[:] = [twice(square_sum(w, x))]
        return step(None, w, tape)

    IPUStrategy().run(function(lambda: loops.repeat(2, body, [], infeed)))
    # d/dw 2 sum(w^2) = 4 w: w <- w (1 - 0.4), twice.
    np.testing.assert_allclose(w.numpy(), np.full(3, 0.6 * 0.6), rtol=1e-6)
    assert square_sum.__name__ == "square_sum"


def test_scopes() -> None:
    with ipu.scopes.ipu_jit_scope(0), ipu.scopes.frontend_attribute("a", "b"):
        pass
    with ipu.scopes.ipu_shard(0), ipu.scopes.ipu_shard([0]):
        pass
    with pytest.raises(UnsupportedError, match="manual sharding"), ipu.scopes.ipu_shard(1):
        pass
    with (
        pytest.raises(ValueError, match="Only support float16, float32"),
        ipu.scopes.partials_type(np.int32),
    ):
        pass


def test_scopes_without_a_simulated_effect_warn(caplog) -> None:
    ipu.scopes._WARNED.clear()
    with (
        caplog.at_level(logging.WARNING, logger="ipusim"),
        ipu.scopes.outside_compilation_scope(),
        ipu.scopes.stochastic_rounding(True),
        ipu.scopes.partials_type(np.float16),
    ):
        pass
    text = caplog.text
    assert "outside_compilation_scope" in text and "stochastic_rounding" in text
    assert "partials_type" in text


def test_utils(monkeypatch) -> None:
    assert ipu.utils.move_variable_initialization_to_cpu() is None
    category = ipu.utils.SyntheticDataCategory
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--synthetic_data_categories=infeed,Outfeed")
    assert ipu.utils.use_synthetic_data_for(category.Infeed)
    assert ipu.utils.use_synthetic_data_for(category.Outfeed)
    assert not ipu.utils.use_synthetic_data_for(category.Parameters)
    monkeypatch.setenv("TF_POPLAR_FLAGS", "--use_synthetic_data")
    assert ipu.utils.use_synthetic_data_for(category.Seed)
    monkeypatch.delenv("TF_POPLAR_FLAGS")
    assert not ipu.utils.use_synthetic_data_for(category.Infeed)
    with pytest.raises(TypeError, match="SyntheticDataCategory"):
        ipu.utils.use_synthetic_data_for("infeed")
    with pytest.raises(UnsupportedError, match="export_dataset_to_file is not simulated"):
        ipu.utils.export_dataset_to_file(None, "out.bin", 10)


def test_module_paths_of_tf1_era_programs() -> None:
    from ipusim.compat.runtime import optimizers as runtime_optimizers

    assert ipu.cross_replica_optimizer.CrossReplicaOptimizer is (
        runtime_optimizers.CrossReplicaOptimizer
    )
    assert ipu.gradient_accumulation_optimizer.GradientAccumulationOptimizerV2 is (
        runtime_optimizers.GradientAccumulationOptimizerV2
    )
    assert ipu.functional_ops.outlined_function is ipu.outlined_function


def test_tf1_losses_reduce_as_tf1() -> None:
    from ipusim.compat import tf

    losses = tf.compat.v1.losses
    logits = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0], [1.0, 1.0, 1.0]], np.float32)
    labels = np.array([0, 2, 1], np.int32)
    shifted = logits - logits.max(axis=1, keepdims=True)
    per_example = -(shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))[
        np.arange(3), labels
    ]
    got = losses.sparse_softmax_cross_entropy(labels, logits)
    np.testing.assert_allclose(np.asarray(got), per_example.mean(), rtol=1e-6)
    weights = np.array([2.0, 0.0, 1.0], np.float32)
    got = losses.sparse_softmax_cross_entropy(labels, logits, weights=weights)
    # SUM_BY_NONZERO_WEIGHTS: the weighted sum over the two non-zero weights.
    np.testing.assert_allclose(np.asarray(got), (per_example * weights).sum() / 2, rtol=1e-6)
    onehot = np.eye(3, dtype=np.float32)[labels]
    got = losses.softmax_cross_entropy(onehot, logits, reduction=losses.Reduction.SUM)
    np.testing.assert_allclose(np.asarray(got), per_example.sum(), rtol=1e-6)
    got = losses.mean_squared_error(np.zeros(3, np.float32), np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_allclose(np.asarray(got), 14.0 / 3, rtol=1e-6)


def test_tf1_layers_dense_builds_a_keras_dense() -> None:
    from ipusim.compat import tf

    x = np.ones((2, 3), np.float32)
    out = tf.compat.v1.layers.dense(x, 4, kernel_initializer="ones", bias_initializer="zeros")
    np.testing.assert_allclose(np.asarray(out), np.full((2, 4), 3.0))
    with pytest.raises(UnsupportedError, match="reuse"):
        tf.compat.v1.layers.dense(x, 4, reuse=True)


def test_tf25_automatic_loss_scaling_optimizer_sequence() -> None:
    opt = ipu.optimizers.AutomaticLossScalingOptimizer(
        optimizers.SGD(0.0),
        initial_loss_scaling_factor=4,
        update_frequency=2,
        max_loss_scaling_factor=64,
        ratio_threshold=0.1,
    )
    var = ops.Variable(np.zeros(4, np.float16))
    fine = np.full(4, 8.0, np.float16)
    overflowing = fine.copy()
    overflowing[:2] = 65504.0
    seen = []
    for grad in [fine, overflowing] + [fine] * 10:
        opt.apply_gradients([(grad, var)])
        seen.append(float(opt.loss_scaling_factor.numpy()))
    # The TF-2.5 counter starts at 1: the LSF changes on calls 2, 4, 6, ... Call 2: 2 of 8
    # values overflowed (0.25 > 0.1): x0.5. Then x2 per update until 64 (not below the max).
    assert seen == [4, 2, 2, 4, 4, 8, 8, 16, 16, 32, 32, 32]
    with pytest.raises(ValueError, match="decrease_factor must be less than increase_factor"):
        ipu.optimizers.AutomaticLossScalingOptimizer(optimizers.SGD(0.1), decrease_factor=3.0)


def test_tf25_automatic_loss_scaling_in_a_traced_loop() -> None:
    opt = ipu.optimizers.AutomaticLossScalingOptimizer(
        optimizers.SGD(0.1), update_frequency=1, max_loss_scaling_factor=16
    )
    x = np.array([[1.0, 2.0, -1.0]] * 3, np.float32)
    w = _train(lambda loss, v, tape: opt.minimize(loss, [v], tape=tape), x, 3)
    expected = np.ones(3)
    for _ in range(3):
        expected = expected - 0.1 * 2 * expected * x[0]
    np.testing.assert_allclose(w, expected, rtol=1e-6)  # the scale cancels out
    assert float(opt.loss_scaling_factor.numpy()) == 8  # 1 -> 2 -> 4 -> 8 (no float16 grads)


def test_ipu_nn_ops_and_embedding_lookup() -> None:
    import math

    x = np.linspace(-3, 3, 7).astype(np.float32)
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(np.asarray(ipu.nn_ops.gelu(x)), tanh_form, rtol=1e-5, atol=1e-6)
    erf_form = 0.5 * x * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    got = ipu.ops.nn_ops.gelu(x, approximate=False)
    np.testing.assert_allclose(np.asarray(got), erf_form, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        np.asarray(ipu.nn_ops.swish(x)), x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        np.asarray(ipu.nn_ops.hard_sigmoid(x)), np.clip(0.2 * x + 0.5, 0, 1), rtol=1e-6
    )
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    ids = np.array([[5, 0], [2, 2]], np.int32)
    got = ipu.embedding_ops.embedding_lookup(table, ids, serialization_factor=3)
    np.testing.assert_array_equal(np.asarray(got), table[ids])
    with pytest.raises(ValueError, match="serialization_factor"):
        ipu.ops.embedding_ops.embedding_lookup(table, ids, serialization_factor=4)


def test_ipu_rand_ops_dropout_drops_and_scales_in_a_training_step() -> None:
    def run(seed):
        sgd = optimizers.SGD(1.0)
        x = np.ones((1, 1000), np.float32)

        def step(loss, v, tape):
            return sgd.apply_gradients(zip(tape.gradient(loss, [v]), [v]))

        w = ops.Variable(np.ones(1000, np.float32))
        infeed = IPUInfeedQueue(Dataset.from_tensor_slices(x))

        def body(xb):
            with GradientTape() as tape:
                loss = ops.reduce_sum(ipu.rand_ops.dropout(w * xb, rate=0.25, seed=seed))
            return step(loss, w, tape)

        IPUStrategy().run(function(lambda: loops.repeat(1, body, [], infeed)))
        return w.numpy()

    first = run([1, 2])
    # d loss / d w = mask / (1 - rate): kept elements move by -4/3, dropped ones stay at 1.
    assert set(np.round(first.astype(np.float64), 5).tolist()) <= {1.0, round(1 - 1 / 0.75, 5)}
    assert 0.2 < np.mean(first == 1.0) < 0.3
    with pytest.raises(ValueError, match=r"range \[0, 1\)"):
        ipu.rand_ops.dropout(np.ones(3, np.float32), rate=1.0)
    with pytest.raises(ValueError, match="shape \\[2\\]"):
        ipu.rand_ops.dropout(np.ones(3, np.float32), seed=[1, 2, 3])
