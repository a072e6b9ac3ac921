"""Optimizers against float64 NumPy references written from the Keras 2 / TF update rules."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from ipusim.graph.variable import Variable
from ipusim.keras import optimizers
from ipusim.keras.optimizers import schedules

SHAPES = [(3, 4), (5,)]
STEPS = 5


# --- float64 references (formulas from the Keras 2 docs and TF's ResourceApply* kernels) ---------


def ref_sgd(var, g, state, step, lr=0.01, momentum=0.0, nesterov=False):
    if momentum == 0.0:
        return var - lr * g
    v = momentum * state.get("momentum", 0.0) - lr * g
    state["momentum"] = v
    return var + (momentum * v - lr * g if nesterov else v)


def ref_rmsprop(var, g, state, step, lr=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    rms = rho * state.get("rms", 0.0) + (1 - rho) * g * g
    state["rms"] = rms
    denom = rms
    if centered:
        mg = rho * state.get("mg", 0.0) + (1 - rho) * g
        state["mg"] = mg
        denom = rms - mg * mg
    if momentum > 0:
        mom = momentum * state.get("momentum", 0.0) + lr * g / np.sqrt(denom + epsilon)
        state["momentum"] = mom
        return var - mom
    return var - lr * g / (np.sqrt(denom) + epsilon)


def ref_adam(var, g, state, step, lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    t = step + 1
    lr_t = lr * math.sqrt(1 - beta_2**t) / (1 - beta_1**t)
    m = beta_1 * state.get("m", 0.0) + (1 - beta_1) * g
    v = beta_2 * state.get("v", 0.0) + (1 - beta_2) * g * g
    state["m"], state["v"] = m, v
    if amsgrad:
        v = np.maximum(state.get("vhat", 0.0), v)
        state["vhat"] = v
    return var - lr_t * m / (np.sqrt(v) + epsilon)


def ref_adagrad(var, g, state, step, lr=0.001, initial_accumulator_value=0.1, epsilon=1e-7):
    acc = state.get("accumulator", initial_accumulator_value) + g * g
    state["accumulator"] = acc
    return var - lr * g / (np.sqrt(acc) + epsilon)


CASES = [
    ("SGD", {}, ref_sgd),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9}, ref_sgd),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}, ref_sgd),
    ("RMSprop", {}, ref_rmsprop),
    ("RMSprop", {"centered": True, "rho": 0.8}, ref_rmsprop),
    ("RMSprop", {"momentum": 0.7}, ref_rmsprop),
    ("RMSprop", {"momentum": 0.7, "centered": True, "learning_rate": 0.01}, ref_rmsprop),
    ("Adam", {}, ref_adam),
    ("Adam", {"amsgrad": True, "learning_rate": 0.01, "beta_2": 0.9}, ref_adam),
    ("Adagrad", {"learning_rate": 0.1}, ref_adagrad),
]
CASE_IDS = [
    f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for name, kw, _ in CASES
]


def _run(name, kwargs, dtype, seed=0, steps=STEPS):
    rng = np.random.default_rng(seed)
    init = [rng.normal(size=s) for s in SHAPES]
    grads = [[rng.normal(size=s) for s in SHAPES] for _ in range(steps)]
    variables = [Variable(v.astype(dtype), f"layer/w{i}:0") for i, v in enumerate(init)]
    opt = getattr(optimizers, name)(**kwargs)
    for step_grads in grads:
        opt.apply_gradients(zip([g.astype(dtype) for g in step_grads], variables, strict=True))
    return opt, variables, init, grads


def _reference(ref, kwargs, init, grads, dtype):
    # Start from the values the optimizer saw (rounded to dtype), compute in float64.
    values = [v.astype(dtype).astype(np.float64) for v in init]
    states = [{} for _ in values]
    kwargs = {("lr" if k == "learning_rate" else k): v for k, v in kwargs.items()}
    for step, step_grads in enumerate(grads):
        for i, g in enumerate(step_grads):
            values[i] = ref(
                values[i], g.astype(dtype).astype(np.float64), states[i], step, **kwargs
            )
    return values, states


@pytest.mark.parametrize(("name", "kwargs", "ref"), CASES, ids=CASE_IDS)
def test_float64_matches_reference_exactly(name, kwargs, ref):
    opt, variables, init, grads = _run(name, kwargs, np.float64)
    expected, states = _reference(ref, kwargs, init, grads, np.float64)
    for var, exp, v0, state in zip(variables, expected, init, states, strict=True):
        # Compare the accumulated update itself, not just the (large) final value.
        np.testing.assert_allclose(var.value - v0, exp - v0, rtol=1e-9, atol=1e-15)
        for slot_name, slot_value in state.items():
            np.testing.assert_allclose(opt.get_slot(var, slot_name).value, slot_value, rtol=1e-12)
    assert opt.iterations == STEPS


@pytest.mark.parametrize(("name", "kwargs", "ref"), CASES, ids=CASE_IDS)
def test_float32_within_1e5_relative(name, kwargs, ref):
    opt, variables, init, grads = _run(name, kwargs, np.float32)
    expected, states = _reference(ref, kwargs, init, grads, np.float32)
    for var, exp, state in zip(variables, expected, states, strict=True):
        assert var.value.dtype == np.float32
        np.testing.assert_allclose(var.value, exp, rtol=1e-5, atol=1e-7)
        for slot_name, slot_value in state.items():
            slot = opt.get_slot(var, slot_name).value
            assert slot.dtype == np.float32
            np.testing.assert_allclose(slot, slot_value, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    ("opt", "slots", "flops", "slot_names"),
    [
        (optimizers.SGD(), 0, 2, []),
        (optimizers.SGD(momentum=0.5), 1, 4, ["momentum"]),
        (optimizers.SGD(momentum=0.5, nesterov=True), 1, 6, ["momentum"]),
        (optimizers.RMSprop(), 1, 9, ["rms"]),
        (optimizers.RMSprop(centered=True), 2, 14, ["rms", "mg"]),
        (optimizers.RMSprop(momentum=0.1), 2, 11, ["rms", "momentum"]),
        (optimizers.RMSprop(momentum=0.1, centered=True), 3, 16, ["rms", "momentum", "mg"]),
        (optimizers.Adam(), 2, 12, ["m", "v"]),
        (optimizers.Adam(amsgrad=True), 3, 13, ["m", "v", "vhat"]),
        (optimizers.Adagrad(), 1, 7, ["accumulator"]),
    ],
)
def test_slot_counts_flops_and_variables_order(opt, slots, flops, slot_names):
    assert opt.slots_per_variable == slots
    assert opt.update_flops_per_element == flops
    a = Variable(np.ones((2, 2), np.float32), "dense/kernel:0")
    b = Variable(np.ones(2, np.float32), "dense/bias:0")
    opt.apply_gradients([(np.ones((2, 2)), a), (np.ones(2), b)])
    assert opt.get_slot_names() == slot_names
    prefix = opt.name
    expected = [f"{prefix}/iter:0"] + [
        f"{prefix}/dense/{v}/{s}:0" for s in slot_names for v in ("kernel", "bias")
    ]
    assert [v.name for v in opt.variables()] == expected
    assert len(opt.get_weights()) == 1 + slots * 2


def test_slots_created_lazily_for_new_variables_and_appended():
    opt = optimizers.Adam()
    a = Variable(np.ones(3), "a:0")
    b = Variable(np.ones(2), "b:0")
    opt.apply_gradients([(np.ones(3), a)])
    opt.apply_gradients([(np.ones(3), a), (np.ones(2), b)])
    assert [v.name for v in opt.variables()] == [
        "Adam/iter:0", "Adam/a/m:0", "Adam/a/v:0", "Adam/b/m:0", "Adam/b/v:0",
    ]  # fmt: skip
    assert opt.iterations == 2


def test_adagrad_initial_accumulator_and_epsilon_defaults():
    opt = optimizers.Adagrad(initial_accumulator_value=0.5, epsilon=None)
    assert opt.epsilon == 1e-7
    v = Variable(np.zeros(2), "v:0")
    opt.apply_gradients([(np.array([1.0, 2.0]), v)])
    np.testing.assert_allclose(opt.get_slot(v, "accumulator").value, [1.5, 4.5])
    # Keras' `epsilon or 1e-7`: 0 means the default for Adam and RMSprop.
    assert optimizers.Adam(epsilon=0).epsilon == 1e-7
    assert optimizers.RMSprop(epsilon=None).epsilon == 1e-7


# --- learning rates ------------------------------------------------------------------------------


def _sgd_trajectory(opt, grads):
    v = Variable(np.zeros(1), "v:0")
    out = []
    for g in grads:
        opt.apply_gradients([(np.array([g]), v)])
        out.append(float(v.value[0]))
    return out


def test_schedule_called_with_step_before_update():
    sched = schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    traj = _sgd_trajectory(optimizers.SGD(sched), [1.0, 1.0, 1.0])
    lrs = [0.1 * 0.5 ** (s / 2) for s in range(3)]
    np.testing.assert_allclose(traj, -np.cumsum(lrs), rtol=1e-12)


def test_callable_learning_rates_with_and_without_step():
    traj = _sgd_trajectory(optimizers.SGD(lambda step: 0.1 * (step + 1)), [1.0, 1.0])
    np.testing.assert_allclose(traj, [-0.1, -0.3])
    traj = _sgd_trajectory(optimizers.SGD(lambda: 0.25), [1.0, 1.0])
    np.testing.assert_allclose(traj, [-0.25, -0.5])


def test_legacy_decay_and_lr_kwargs():
    opt = optimizers.SGD(learning_rate=5.0, lr=0.2, decay=0.5)
    assert opt.learning_rate == 0.2 and opt.lr == 0.2
    traj = _sgd_trajectory(opt, [1.0, 1.0, 1.0])
    lrs = [0.2 / (1 + 0.5 * s) for s in range(3)]
    np.testing.assert_allclose(traj, -np.cumsum(lrs), rtol=1e-12)


def test_learning_rate_settable_between_steps():
    opt = optimizers.SGD(0.1)
    v = Variable(np.zeros(1), "v:0")
    opt.apply_gradients([(np.ones(1), v)])
    opt.learning_rate = 1.0
    opt.apply_gradients([(np.ones(1), v)])
    opt.lr = 0.5
    opt.apply_gradients([(np.ones(1), v)])
    np.testing.assert_allclose(v.value, [-1.6])
    with pytest.raises(TypeError, match="learning_rate"):
        opt.learning_rate = "fast"


@pytest.mark.parametrize(
    ("schedule", "steps", "expected"),
    [
        (schedules.ExponentialDecay(1.0, 10, 0.1, staircase=True), [0, 9, 10, 25], [1, 1, 0.1, 0.01]),
        (schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1]), [0, 10, 11, 20, 21], [1, 1, 0.5, 0.5, 0.1]),
        (schedules.InverseTimeDecay(1.0, 10, 1.0), [0, 10, 30], [1, 0.5, 0.25]),
        (schedules.InverseTimeDecay(1.0, 10, 1.0, staircase=True), [9, 19], [1, 0.5]),
        (schedules.PolynomialDecay(1.0, 10, 0.0, power=2.0), [0, 5, 10, 20], [1, 0.25, 0, 0]),
        (schedules.PolynomialDecay(1.0, 10, 0.0, cycle=True), [0, 5, 15], [1, 0.5, 0.25]),
        (schedules.CosineDecay(2.0, 10, alpha=0.5), [0, 5, 10, 50], [2, 1.5, 1.0, 1.0]),
    ],
)  # fmt: skip
def test_schedules_closed_forms(schedule, steps, expected):
    np.testing.assert_allclose([schedule(s) for s in steps], expected, rtol=1e-12, atol=1e-15)
    again = schedules.deserialize(schedules.serialize(schedule))
    assert type(again) is type(schedule) and again.get_config() == schedule.get_config()


def test_piecewise_constant_decay_validates_lengths():
    with pytest.raises(ValueError, match="1 less than"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0, 2.0])


# --- clipping ------------------------------------------------------------------------------------


def _one_step(grads, **clip):
    variables = [Variable(np.zeros(np.shape(g)), f"v{i}:0") for i, g in enumerate(grads)]
    optimizers.SGD(1.0, **clip).apply_gradients(zip(grads, variables, strict=True))
    return [-v.value for v in variables]  # with lr=1 the update is minus the clipped gradient


def test_clipvalue_clipnorm_global_clipnorm():
    g1, g2 = np.array([3.0, -4.0]), np.array([0.5, 12.0, -0.1])
    out = _one_step([g1, g2], clipvalue=1.0)
    np.testing.assert_allclose(out[0], [1.0, -1.0])
    np.testing.assert_allclose(out[1], [0.5, 1.0, -0.1])
    out = _one_step([g1, g2], clipnorm=1.0)
    np.testing.assert_allclose(out[0], g1 / 5.0)
    np.testing.assert_allclose(out[1], g2 / np.linalg.norm(g2))
    out = _one_step([g1, np.array([0.1, 0.1])], clipnorm=10.0)  # below the norm: unchanged
    np.testing.assert_allclose(out[0], g1)
    global_norm = math.sqrt(25 + np.sum(g2**2))
    out = _one_step([g1, g2], global_clipnorm=2.0)
    np.testing.assert_allclose(out[0], g1 * 2.0 / global_norm)
    np.testing.assert_allclose(out[1], g2 * 2.0 / global_norm)
    out = _one_step([g1, g2], clipvalue=1.0, clipnorm=1.0)  # value first, then norm
    np.testing.assert_allclose(out[0], np.array([1.0, -1.0]) / math.sqrt(2.0))


def test_clipping_does_not_modify_caller_gradients():
    g = np.array([3.0, -4.0])
    _one_step([g], clipnorm=1.0)
    np.testing.assert_array_equal(g, [3.0, -4.0])


# --- errors --------------------------------------------------------------------------------------


def test_none_gradients_skipped_with_warning_all_none_is_error(caplog):
    opt = optimizers.Adam()
    a, b = Variable(np.ones(2), "a:0"), Variable(np.ones(2), "b:0")
    with caplog.at_level(logging.WARNING, logger="ipusim"):
        opt.apply_gradients([(None, a), (np.ones(2), b)])
    assert "b:0" not in caplog.text and "a:0" in caplog.text
    np.testing.assert_array_equal(a.value, [1.0, 1.0])
    assert [v.name for v in opt.variables()] == ["Adam/iter:0", "Adam/b/m:0", "Adam/b/v:0"]
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, a)])
    assert opt.apply_gradients([]) is None and opt.iterations == 1


def test_gradient_errors_name_the_variable():
    opt = optimizers.SGD()
    v = Variable(np.ones((2, 3)), "dense/kernel:0")
    with pytest.raises(ValueError, match=r"dense/kernel:0.*\(3, 2\).*\(2, 3\)"):
        opt.apply_gradients([(np.ones((3, 2)), v)])
    with pytest.raises(TypeError, match="int32"):
        opt.apply_gradients([(np.ones(2), Variable(np.ones(2, np.int32), "steps:0"))])
    with pytest.raises(TypeError, match="Variables"):
        opt.apply_gradients([(np.ones(2), np.ones(2))])
    with pytest.raises(ValueError, match="more than one gradient"):
        opt.apply_gradients([(np.ones((2, 3)), v), (np.ones((2, 3)), v)])
    assert opt.iterations == 0


def test_constructor_errors():
    with pytest.raises(
        TypeError, match=r"'momentom'.*learning_rate.*clipnorm.*Did you mean 'momentum'"
    ):
        optimizers.SGD(momentom=0.9)
    with pytest.raises(ValueError, match="clipnorm >= 0"):
        optimizers.Adam(clipnorm=-1.0)
    with pytest.raises(TypeError, match="clipvalue must be a number"):
        optimizers.Adam(clipvalue="1")
    with pytest.raises(ValueError, match="both clipnorm"):
        optimizers.Adam(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="momentum must be between"):
        optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        optimizers.Adagrad(initial_accumulator_value=-0.1)


# --- config, get, weights ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opt",
    [
        optimizers.SGD(0.2, momentum=0.5, nesterov=True, clipvalue=3.0),
        optimizers.RMSprop(0.01, rho=0.8, momentum=0.1, epsilon=1e-6, centered=True, clipnorm=1.0),
        optimizers.Adam(schedules.ExponentialDecay(0.1, 100, 0.9), amsgrad=True, name="opt"),
        optimizers.Adagrad(0.3, initial_accumulator_value=0.2, global_clipnorm=5.0, decay=0.1),
    ],
)
def test_config_round_trip(opt):
    config = opt.get_config()
    again = type(opt).from_config(config)
    assert again.get_config() == config
    assert optimizers.get(optimizers.serialize(opt)).get_config() == config


def test_keras_config_keys():
    assert optimizers.Adam().get_config() == {
        "name": "Adam", "learning_rate": 0.001, "decay": 0.0, "beta_1": 0.9, "beta_2": 0.999,
        "epsilon": 1e-07, "amsgrad": False,
    }  # fmt: skip
    assert optimizers.SGD(clipnorm=1.0).get_config() == {
        "name": "SGD", "clipnorm": 1.0, "learning_rate": 0.01, "decay": 0.0, "momentum": 0.0,
        "nesterov": False,
    }  # fmt: skip
    config = optimizers.SGD.from_config({"lr": 0.5, "name": "x"}).get_config()
    assert config["learning_rate"] == 0.5 and config["name"] == "x"


def test_get():
    for name, cls in [("sgd", optimizers.SGD), ("RMSprop", optimizers.RMSprop),
                      ("ADAM", optimizers.Adam), ("adagrad", optimizers.Adagrad)]:  # fmt: skip
        opt = optimizers.get(name)
        assert type(opt) is cls
    assert optimizers.get("rmsprop").learning_rate == 0.001
    opt = optimizers.Adam()
    assert optimizers.get(opt) is opt
    got = optimizers.get({"class_name": "SGD", "config": {"learning_rate": 0.3, "momentum": 0.2}})
    assert (got.learning_rate, got.momentum) == (0.3, 0.2)
    with pytest.raises(
        ValueError,
        match=r"'adma'.*adadelta, adafactor, adagrad, adam, adamax, adamw, ftrl, lion, nadam, rmsprop, sgd.*Did you mean 'adam(ax)?'",
    ):
        optimizers.get("adma")
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        optimizers.get(42)


def test_weights_round_trip_continues_identically():
    rng = np.random.default_rng(1)
    grads = [rng.normal(size=4) for _ in range(6)]
    a, b = Variable(np.zeros(4), "w:0"), Variable(np.zeros(4), "w:0")
    opt_a = optimizers.Adam(0.1)
    for g in grads[:3]:
        opt_a.apply_gradients([(g, a)])
    opt_b = optimizers.Adam(0.1)
    opt_b.apply_gradients([(np.zeros(4), Variable(np.zeros(4), "w:0"))])  # create slots
    opt_b.set_weights(opt_a.get_weights())
    b.assign(a.value)
    assert opt_b.iterations == 3
    for g in grads[3:]:
        opt_a.apply_gradients([(g, a)])
        opt_b.apply_gradients([(g, b)])
    np.testing.assert_array_equal(a.value, b.value)
    with pytest.raises(ValueError, match="expecting 3 weights"):
        opt_b.set_weights(opt_a.get_weights()[:2])


def test_iterations_property():
    opt = optimizers.SGD()
    opt.iterations = 7
    assert opt.iterations == 7
    with pytest.raises(ValueError, match="non-negative int"):
        opt.iterations = -1
