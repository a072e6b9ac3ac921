"""Automatic loss scaling (``keras.ipu.optimizers.ALSOptimizer``) against hand-computed LSF
sequences (the SDK's rules: graphcore/keras ``keras/ipu/optimizers/als_optimizer.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import ConfigurationError
from ipusim.graph.variable import Variable
from ipusim.keras.ipu.optimizers import ALSGradientAccumulationOptimizer, ALSOptimizer

F16_MAX = 65504.0


def _fine(n: int = 4) -> np.ndarray:
    return np.full(n, 8.0, np.float16)


def _overflowing(count: int, n: int = 4) -> np.ndarray:
    g = _fine(n)
    g[:count] = F16_MAX  # a saturated float16 gradient
    return g


def test_lsf_sequence_follows_the_histogram_and_the_sdk_counter() -> None:
    # update_frequency=2: the counter n must reach 2, so the LSF changes on calls 3, 6, 9, ...
    opt = ALSOptimizer(
        keras.optimizers.SGD(0.5),
        initial_loss_scaling_factor=4,
        update_frequency=2,
        max_loss_scaling_factor=64,
        ratio_threshold=0.1,
    )
    var = Variable(np.zeros(4, np.float16), "w:0")
    grads = [_fine(), _fine(), _overflowing(2)] + [_fine()] * 15
    lsf, previous = [], []
    for g in grads:
        opt.apply_gradients([(g, var)])
        lsf.append(opt.loss_scaling_factor)
        previous.append(opt.previous_loss_scaling_factor)
    # Call 3: 2 of 12 collected values overflowed (ratio 1/6 > 0.1): 4 -> 2. Then no overflow:
    # x2 on calls 6, 9, 12, 15; 64 is not below the maximum, so call 18 keeps 32.
    assert lsf == [4, 4, 2, 2, 2, 4, 4, 4, 8, 8, 8, 16, 16, 16, 32, 32, 32, 32]
    assert previous[:6] == [4, 4, 4, 4, 4, 2]
    assert opt.update_counter == 0 and list(opt.histogram) == [0.0, 0.0]


def test_gradients_are_unscaled_and_an_overflow_is_still_applied() -> None:
    opt = ALSOptimizer(keras.optimizers.SGD(0.5), initial_loss_scaling_factor=4)
    var = Variable(np.zeros(4, np.float16), "w:0")
    opt.apply_gradients([(_overflowing(1), var)])
    # var -= 0.5 * g / 4, in float16: the saturated element gives -8188, the others -1.
    np.testing.assert_array_equal(var.numpy(), np.array([-8188.0, -1, -1, -1], np.float16))
    assert list(opt.histogram) == [3.0, 1.0]


def test_float32_gradients_are_not_counted_and_the_lsf_grows() -> None:
    opt = ALSOptimizer(keras.optimizers.SGD(0.1), update_frequency=1, max_loss_scaling_factor=8)
    var = Variable(np.zeros(3, np.float32), "w:0")
    seen = []
    for _ in range(4):
        opt.apply_gradients([(np.full(3, 1e30, np.float32), var)])
        seen.append(opt.loss_scaling_factor)
    assert seen == [2, 4, 4, 4]  # 0/0 is not above the threshold; 8 is not below the maximum


def test_lpf_alpha_filters_the_statistics() -> None:
    opt = ALSOptimizer(keras.optimizers.SGD(0.0), update_frequency=4, lpf_alpha=0.5)
    var = Variable(np.zeros(4, np.float16), "w:0")
    opt.apply_gradients([(_overflowing(1), var)])
    # h = 0.5 * [0, 0] + 0.5 * [3, 1] after the gradient; storing the state at the end of the
    # call blends h with itself, so it stays [1.5, 0.5].
    np.testing.assert_allclose(opt.histogram, [1.5, 0.5])
    opt.apply_gradients([(_fine(), var)])
    np.testing.assert_allclose(opt.histogram, [0.5 * 1.5 + 0.5 * 5.5, 0.5])


def test_captured_grads_only_ignores_the_weight_gradients() -> None:
    opt = ALSOptimizer(
        keras.optimizers.SGD(0.0), update_frequency=1, captured_grads_only=True, ratio_threshold=0.5
    )
    var = Variable(np.zeros(4, np.float16), "w:0")
    opt.apply_gradients([(_overflowing(4), var)], captured_grads={"dense_cag": _fine()})
    assert opt.loss_scaling_factor == 2  # only the captured (fine) gradient was counted
    opt.apply_gradients([(_fine(), var)], captured_grads={"dense_cag": [_overflowing(3)]})
    assert opt.loss_scaling_factor == 1


def _overflowing_model(lsf: int) -> tuple[keras.Model, ALSOptimizer]:
    # y = w * x with w = 1, x = 10, target -40: dL/dw = 2 * (10 + 40) * 10 = 1000, so the scaled
    # float16 gradient 1000 * LSF overflows (>= 65504) for every LSF >= 128.
    model = keras.Sequential(
        [keras.layers.Dense(1, use_bias=False, kernel_initializer="ones", dtype="float16")]
    )
    model.build((None, 1))
    opt = ALSOptimizer(
        keras.optimizers.SGD(0.0),
        initial_loss_scaling_factor=lsf,
        update_frequency=1,
        max_loss_scaling_factor=65536,
    )
    model.compile(optimizer=opt, loss="mse")
    return model, opt


def test_fit_recovers_from_a_float16_overflow() -> None:
    model, opt = _overflowing_model(16384)
    x = np.full((1, 1), 10.0, np.float32)
    y = np.full((1, 1), -40.0, np.float32)
    seen = []
    for _ in range(11):
        model.train_on_batch(x, y)
        seen.append(opt.loss_scaling_factor)
    # Halved on every overflowing step down to 64 (64000 < 65504), which then grows to 128 and
    # overflows again: the scale settles at the largest factor that does not overflow.
    assert seen == [8192, 4096, 2048, 1024, 512, 256, 128, 64, 128, 64, 128]
    assert np.isfinite(model.get_weights()[0]).all()


def test_cost_adds_the_statistics_to_the_wrapped_update() -> None:
    inner = keras.optimizers.Adam()
    opt = ALSOptimizer(inner)
    assert opt.update_flops_per_element == inner.update_flops_per_element + 4
    assert opt.slots_per_variable == inner.slots_per_variable


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"initial_loss_scaling_factor": 5}, "initial_loss_scaling_factor must be a power of two"),
        ({"update_frequency": 0}, "update_frequency must be nonzero and positive"),
        ({"increase_factor": 3}, "increase_factor must be a power of two"),
        ({"ratio_threshold": 1.0}, "ratio_threshold must be greater than zero"),
        ({"initial_loss_scaling_factor": 32768}, "must be less than max_loss_scaling_factor"),
        ({"initial_loss_scaling_factor": 16384}, "x increase_factor must be less than"),
    ],
)
def test_invalid_arguments_raise_the_sdk_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ALSOptimizer(keras.optimizers.SGD(0.1), **kwargs)


def test_gradient_accumulation_steps_the_lsf_per_call_and_applies_every_n() -> None:
    als = ALSOptimizer(keras.optimizers.SGD(1.0), initial_loss_scaling_factor=2, update_frequency=1)
    opt = ALSGradientAccumulationOptimizer(als, num_mini_batches=2)
    var = Variable(np.zeros(2, np.float16), "w:0")
    opt.apply_gradients([(np.full(2, 4.0, np.float16), var)])  # 4 / 2 = 2, LSF -> 4
    assert var.numpy().tolist() == [0, 0] and als.loss_scaling_factor == 4
    opt.apply_gradients([(np.full(2, 8.0, np.float16), var)])  # 8 / 4 = 2, LSF -> 8
    assert var.numpy().tolist() == [-4, -4] and als.loss_scaling_factor == 8
    with pytest.raises(ConfigurationError, match="only be used with instances of ALSOptimizer"):
        ALSGradientAccumulationOptimizer(keras.optimizers.SGD(0.1), 2)


def test_config_round_trip() -> None:
    opt = ALSOptimizer(keras.optimizers.Adam(0.01), initial_loss_scaling_factor=8)
    clone = ALSOptimizer.from_config(opt.get_config())
    assert clone.get_config() == opt.get_config()
    assert isinstance(clone.inner_optimizer, keras.optimizers.Adam)


@pytest.mark.parametrize("method, factor", [("sum", 1.0), ("mean", 0.5)])
def test_keras_gradient_accumulation_optimizer(method: str, factor: float) -> None:
    from ipusim.keras.ipu.optimizers import GradientAccumulationOptimizer

    sgd = keras.optimizers.SGD(1.0)
    assert GradientAccumulationOptimizer(sgd, 1) is sgd  # as the SDK's __new__
    opt = GradientAccumulationOptimizer(sgd, 2, reduction_method=method)
    var = Variable(np.zeros(2, np.float32), "w:0")
    opt.apply_gradients([(np.array([1.0, 2.0], np.float32), var)])
    assert var.numpy().tolist() == [0, 0]
    opt.apply_gradients([(np.array([3.0, 4.0], np.float32), var)])
    np.testing.assert_allclose(var.numpy(), [-4.0 * factor, -6.0 * factor])
    assert opt.iterations == 1
    als = ALSOptimizer(keras.optimizers.SGD(0.1))
    assert ALSGradientAccumulationOptimizer(als, 1) is als


def test_ipu_optimizers_deserialize_by_class_name() -> None:
    from ipusim.keras.ipu.optimizers import GradientAccumulationOptimizer

    wrappers = [
        ALSOptimizer(keras.optimizers.Adam(0.01), initial_loss_scaling_factor=8),
        ALSGradientAccumulationOptimizer(ALSOptimizer(keras.optimizers.SGD(0.1)), 4),
        GradientAccumulationOptimizer(keras.optimizers.SGD(0.1), 3, reduction_method="mean"),
        keras.optimizers.LAMBIpuOptimizer(0.1, weight_decay_rate=0.01),
    ]
    for opt in wrappers:
        clone = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
        assert type(clone) is type(opt)
        assert clone.get_config() == opt.get_config()


@pytest.mark.parametrize("accumulate, expected", [(True, 2), (False, 8)])
def test_statistics_outside_the_update_call_count_only_when_accumulated(accumulate, expected):
    opt = ALSOptimizer(
        keras.optimizers.SGD(0.0),
        initial_loss_scaling_factor=4,
        update_frequency=2,
        max_loss_scaling_factor=64,
        accumulate_statistics_over_update_period=accumulate,
        ratio_threshold=0.1,
    )
    var = Variable(np.zeros(4, np.float16), "w:0")
    for grad in (_overflowing(4), _fine(), _fine()):  # the update is due on the third call
        opt.apply_gradients([(grad, var)])
    # Accumulated: 4 of 12 values overflowed -> 4 / 2. Not accumulated: only the third call's
    # (fine) gradients are seen -> 4 * 2.
    assert opt.loss_scaling_factor == expected


def test_tf25_keras_automatic_loss_scaling_optimizer() -> None:
    from ipusim.compat.ipu.keras.optimizers import AutomaticLossScalingOptimizer

    opt = AutomaticLossScalingOptimizer(
        keras.optimizers.SGD(0.0),
        initial_loss_scaling_factor=6.0,  # 2.5 does not require powers of two
        update_frequency=2,
        increase_factor=2.0,
        decrease_factor=0.25,
        max_loss_scaling_factor=100,
        ratio_threshold=0.1,
    )
    var = Variable(np.zeros(4, np.float16), "w:0")
    seen = []
    for grad in [_fine(), _overflowing(2)] + [_fine()] * 6:
        opt.apply_gradients([(grad, var)])
        seen.append(opt.loss_scaling_factor)
    # Counter from 1: updates on calls 2, 4, 6, 8. Call 2: 2 of 8 values overflowed (0.25 >
    # 0.1) -> x0.25; then no overflow: x2 per update.
    assert seen == [6, 1.5, 1.5, 3, 3, 6, 6, 12]
    # reset() as IPU TensorFlow 2.5's: the initial LSF, no statistics and the counter at 0 (not
    # the 1 it starts at), so the next call is due an update at once.
    opt.reset()
    assert opt.update_counter == 0 and opt.loss_scaling_factor == 6
    after = []
    for grad in [_fine()] * 3:
        opt.apply_gradients([(grad, var)])
        after.append(opt.loss_scaling_factor)
    assert after == [12, 12, 24]
    with pytest.raises(ValueError, match="decrease_factor must be less than increase_factor"):
        AutomaticLossScalingOptimizer(keras.optimizers.SGD(0.1), decrease_factor=2.0)
