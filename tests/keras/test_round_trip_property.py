"""Property: a model saved and loaded is the model it was (issue 24, deliverable 1).

For every drawn model (Sequential, functional, subclassed; Embedding ids above 2048, Dense,
BatchNormalization; every optimizer with slots; no / dynamic / fixed loss scaling; the
mixed_float16 policy; fp32 / fp16 precision), trained 0-3 steps, then ``model.save`` and
``keras.models.load_model`` in the same session (so every layer of the copy has a new name):

- the copy predicts exactly what the original predicts;
- its optimizer has the same step count, the same slots (values, in the same order) and, for
  a LossScaleOptimizer, the same current scale and growth counter;
- one more training step on the same batch gives both the same loss and the same weights.

CI runs ``IPUSIM_ROUNDTRIP_EXAMPLES`` (default 300) derandomized examples; the 10,000-example run
is ``IPUSIM_ROUNDTRIP_EXAMPLES=10000 pytest tests/keras/test_round_trip_property.py``
(``python bench/round_trip.py`` runs it with the serving property and the fuzz).
"""

from __future__ import annotations

import os
from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import ipusim
from ipusim import keras
from ipusim.config import reset_ipu_configuration
from ipusim.errors import NonFiniteLossError
from tests.keras.round_trip_models import Case, Stack, build_model, cases, data, make_optimizer

EXAMPLES = int(os.environ.get("IPUSIM_ROUNDTRIP_EXAMPLES", "300"))


@pytest.fixture(autouse=True, scope="module")
def _restore_policy():
    yield
    keras.mixed_precision.set_global_policy(None)
    reset_ipu_configuration()


def _configure(c: Case) -> None:
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipusim.precision = c.precision
    cfg.ipusim.trace_detail = "summary"  # the simulation is not under test here
    cfg.configure_ipu_system()
    keras.mixed_precision.set_global_policy("mixed_float16" if c.mixed else None)


def _optimizer_state(model: keras.Model) -> dict:
    optimizer = model.optimizer
    state = {
        "iterations": optimizer.iterations,
        "variables": [v.numpy() for v in optimizer.variables()],
        "slots": [v.name.split("/")[-1] for v in optimizer.variables()[1:]],
    }
    if isinstance(optimizer, keras.mixed_precision.LossScaleOptimizer):
        state["loss_scale"] = (optimizer.loss_scale, optimizer.dynamic_counter)
    return state


def _assert_same_state(got: dict, want: dict) -> None:
    assert got["iterations"] == want["iterations"]
    assert got["slots"] == want["slots"]
    assert got.get("loss_scale") == want.get("loss_scale")
    assert len(got["variables"]) == len(want["variables"])
    for a, b in zip(got["variables"], want["variables"], strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def _train(model: keras.Model, x: np.ndarray, y: np.ndarray, batch: int) -> object:
    """The epoch's loss, or the NonFiniteLossError's message (a model that diverges must
    diverge alike after a round trip; the step is then not applied)."""
    try:
        history = model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    except NonFiniteLossError as error:
        return str(error)
    return history.history["loss"][-1]


def round_trip(c: Case, tmp_path) -> None:
    _configure(c)
    keras.utils.set_random_seed(3)
    model = build_model(c)
    model.compile(
        optimizer=make_optimizer(c),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = data(c, samples=c.batch * max(c.steps, 1))
    if c.steps:
        _train(model, x, y, c.batch)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"Stack": Stack})
    assert type(loaded) is type(model)

    predictions = model.predict(x, batch_size=c.batch)
    np.testing.assert_array_equal(loaded.predict(x, batch_size=c.batch), predictions)
    _assert_same_state(_optimizer_state(loaded), _optimizer_state(model))

    step_x, step_y = x[: c.batch], y[: c.batch]
    assert _train(loaded, step_x, step_y, c.batch) == _train(model, step_x, step_y, c.batch)
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    _assert_same_state(_optimizer_state(loaded), _optimizer_state(model))


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(c=cases())
def test_a_saved_and_loaded_model_predicts_and_trains_as_the_original(c: Case, tmp_path) -> None:
    try:
        round_trip(c, tmp_path)
    except Exception as error:  # show the drawn case with the failure
        raise AssertionError(f"{type(error).__name__}: {error}\n{asdict(c)}") from error
