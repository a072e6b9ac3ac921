"""Adadelta, Adamax, Nadam, Ftrl and every learning-rate schedule against tf-keras 2.

The references are bench/tf_parity/fixtures/optimizers2.npz, written by
bench/tf_parity/generate_optimizers2.py in the TensorFlow environment (Keras 2 ``optimizer_v2``,
``keras.optimizers.legacy``, as IPU TensorFlow's Keras); nothing here imports TensorFlow.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tf_parity_cases as parity

from ipusim import keras
from ipusim.graph.variable import Variable

FIXTURE = Path(parity.FIXTURES) / "optimizers2.npz"
#: As test_tf_parity's optimizer group: float32 updates in a different operation order.
TOLERANCE = 1e-5
#: Schedules are float32 in TensorFlow and float64 in ipusim.
SCHEDULE_TOLERANCE = 1e-6


def _load() -> list[parity.Case]:
    with np.load(FIXTURE) as data:
        grouped: dict[str, dict[str, np.ndarray]] = {}
        for key in data.files:
            name, _, field = key.rpartition("/")
            grouped.setdefault(name, {})[field] = data[key]
    return [
        parity.Case("optimizers2", name, json.loads(bytes(a.pop("meta")).decode()), a)
        for name, a in grouped.items()
    ]


CASES = _load()
OPTIMIZERS = [pytest.param(c, id=c.name) for c in CASES if not c.name.startswith("schedule_")]
SCHEDULES = [pytest.param(c, id=c.name) for c in CASES if c.name.startswith("schedule_")]


def _optimizer(case: parity.Case) -> keras.optimizers.Optimizer:
    meta = case.meta
    config = dict(meta["config"])
    if "schedule" in meta:
        cls, schedule_config = meta["schedule"]
        config["learning_rate"] = getattr(keras.optimizers.schedules, cls)(**schedule_config)
    return getattr(keras.optimizers, meta["class"])(**config)


@pytest.mark.parametrize("case", OPTIMIZERS)
def test_optimizer_trajectory_matches_tensorflow(case: parity.Case) -> None:
    a = case.arrays
    optimizer = _optimizer(case)
    # float16 variables (one rounding per operation, as TensorFlow's half kernels): bit-exact.
    bound = 0.0 if case.meta.get("dtype") == "float16" else TOLERANCE
    variables = [Variable(a[f"init{i}"].copy(), f"v{i}:0") for i in range(2)]
    assert variables[0].value.dtype == a["values0"].dtype
    for step in range(a["grads0"].shape[0]):
        optimizer.apply_gradients((a[f"grads{i}"][step], v) for i, v in enumerate(variables))
        for i, v in enumerate(variables):
            error = parity.relative_error(v.numpy(), a[f"values{i}"][step])
            assert error <= bound, f"v{i} after update {step + 1}: relative error {error:.2e}"
    if "weights" not in a:  # the new optimizers order their variables differently
        return
    # The optimizer's weights in Keras' order ([iterations, (momentum_cache), slots...]).
    weights = np.concatenate(
        [np.asarray(w, np.float64).reshape(-1) for w in optimizer.get_weights()]
    )
    assert parity.relative_error(weights, a["weights"]) <= bound


@pytest.mark.parametrize("case", SCHEDULES)
def test_schedule_matches_tensorflow(case: parity.Case) -> None:
    schedule = getattr(keras.optimizers.schedules, case.meta["class"])(**case.meta["config"])
    want = case.arrays["rates"]
    got = np.array([schedule(step) for step in range(want.size)])
    assert parity.relative_error(got, want) <= SCHEDULE_TOLERANCE
    clone = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert [clone(s) for s in range(want.size)] == list(got)


def test_every_tf_keras_schedule_and_legacy_optimizer_has_a_case() -> None:
    # The tf-keras 2.21 names (keras.optimizers.legacy and keras.optimizers.schedules).
    legacy = {"Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "RMSprop", "SGD"}
    schedule_names = {
        "CosineDecay",
        "CosineDecayRestarts",
        "ExponentialDecay",
        "InverseTimeDecay",
        "PiecewiseConstantDecay",
        "PolynomialDecay",
    }
    for name in legacy:
        assert getattr(keras.optimizers.legacy, name) is getattr(keras.optimizers, name)
        assert isinstance(keras.optimizers.get(name.lower()), getattr(keras.optimizers, name))
    new = {c.meta["class"] for c in CASES if c.meta.get("new")}
    assert new == {"AdamW", "Lion", "Adafactor"}
    assert {c.meta["class"] for c in CASES if c.name.startswith("schedule_")} == schedule_names


def test_nadam_refuses_a_schedule_and_reads_schedule_decay() -> None:
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    with pytest.raises(ValueError, match="does not support"):
        keras.optimizers.Nadam(schedule)
    assert keras.optimizers.Nadam(schedule_decay=0.01).get_config()["decay"] == 0.01


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"learning_rate_power": 0.5}, "learning_rate_power"),
        ({"initial_accumulator_value": -1.0}, "initial_accumulator_value"),
        ({"l1_regularization_strength": -0.1}, "l1_regularization_strength"),
        ({"l2_shrinkage_regularization_strength": -0.1}, "l2_shrinkage"),
    ],
)
def test_ftrl_rejects_invalid_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        keras.optimizers.Ftrl(**kwargs)


def test_config_round_trip_rebuilds_the_same_optimizer() -> None:
    for cls in (keras.optimizers.Adadelta, keras.optimizers.Adamax, keras.optimizers.Ftrl):
        opt = cls(learning_rate=0.3)
        clone = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
        assert type(clone) is cls and clone.get_config() == opt.get_config()


def test_new_optimizers_refuse_what_they_do_not_have() -> None:
    with pytest.raises(NotImplementedError, match="use_ema"):
        keras.optimizers.AdamW(use_ema=True)
    with pytest.raises(ValueError, match="decay"):
        keras.optimizers.Lion(decay=0.1)
    with pytest.raises(ValueError, match="beta_1"):
        keras.optimizers.Lion(beta_1=0.0)
    adamw = keras.optimizers.AdamW()
    assert adamw.update_flops_per_element == keras.optimizers.Adam().update_flops_per_element + 3
