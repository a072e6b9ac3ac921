"""The IPU extension through template hooks: a model's class never changes, its extension's
methods are bound to it, a run's settings are never left on the model, and serving's seam
simulates a predict step."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.errors import ConfigurationError
from ipusim.keras.extensions import (
    FunctionalExtension,
    KerasExtensionBase,
    ModelExtension,
    SequentialExtension,
)
from ipusim.keras.extensions.serving import simulate_predict_execution


class _Subclassed(keras.Model):
    def __init__(self) -> None:
        super().__init__()
        self.dense = keras.layers.Dense(3)

    def call(self, inputs: object) -> object:
        return self.dense(inputs)


def _sequential(name: str | None = None) -> keras.Sequential:
    dense = keras.layers.Dense(3, name=None if name is None else f"{name}_dense")
    return keras.Sequential([keras.Input((4,)), dense], name=name)


def _functional() -> keras.Model:
    x = keras.Input((4,))
    return keras.Model(x, keras.layers.Dense(3)(x))


@pytest.fixture(autouse=True)
def _one_ipu() -> None:
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()


def test_models_keep_their_class_and_gain_the_extension() -> None:
    with ipusim.IPUStrategy().scope():
        seq, fun, sub = _sequential(), _functional(), _Subclassed()
    assert type(seq) is keras.Sequential and type(sub) is _Subclassed
    assert type(fun) is type(_functional())  # the same class as outside the scope
    for model, kind in (
        (seq, SequentialExtension),
        (fun, FunctionalExtension),
        (sub, ModelExtension),
    ):
        assert isinstance(model, kind) and isinstance(model, KerasExtensionBase)
        others = {SequentialExtension, FunctionalExtension, ModelExtension} - {kind}
        assert not any(isinstance(model, other) for other in others)
        assert model.set_pipelining_options.__self__ is model
    plain = _sequential()
    assert not isinstance(plain, KerasExtensionBase)
    assert not hasattr(plain, "set_pipelining_options")
    with pytest.raises(AttributeError, match="no_such_method"):
        seq.no_such_method  # noqa: B018 - the lookup is the test
    with ipusim.IPUStrategy().scope():
        extended = _sequential("same")
    assert extended.get_config() == _sequential("same").get_config()


def test_a_run_leaves_no_settings_on_the_model() -> None:
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    y = np.zeros((16, 3), np.float32)
    with ipusim.IPUStrategy().scope():
        model = _sequential()
        model.compile("sgd", "mse", steps_per_execution=8)
    before = set(vars(model))
    # 16 samples of 4: an epoch of 4 steps, so the run uses 4 steps per execution, not 8.
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert model.steps_per_execution == 8
    assert history.simulation.steps == 8  # 2 epochs of 4 steps were simulated
    added = set(vars(model)) - before
    assert not added & {"_replicas", "_norm_group", "_ipusim_run_clocks"}


def test_serving_seam_lowers_and_simulates_one_predict_execution() -> None:
    with ipusim.IPUStrategy().scope():
        model = _sequential()
    specs = model.input_spec_structure
    concrete = type(specs)((2, 4), specs.dtype, specs.name)
    execution = simulate_predict_execution(model, concrete, iterations=3)
    assert execution.report.kind == "predict" and execution.report.steps == 3
    assert model.last_simulation is execution.report
    assert execution.lowered.program is model.last_program
    with pytest.raises(ConfigurationError, match="IPUStrategy"):
        simulate_predict_execution(_sequential(), concrete, iterations=3)
