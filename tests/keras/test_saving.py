"""save / load of architecture and weights: round trips, atomic writes, corrupt files."""

from __future__ import annotations

import os
import zipfile

import numpy as np
import pytest

from ipusim import keras
from ipusim.keras.models import ModelFileError


def _functional() -> keras.Model:
    inp = keras.Input((6,), name="x")
    h = keras.layers.Dense(5, activation="relu", name="h")(inp)
    a = keras.layers.Dense(3, name="a")(h)
    b = keras.layers.Dense(3, name="b")(h)
    out = keras.layers.Add(name="sum")([a, b * 0.5])
    return keras.Model(inp, out, name="f")


def test_sequential_save_load_round_trip(tmp_path) -> None:
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((4, 4, 1)),
            keras.layers.Conv2D(2, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(3),
        ]
    )
    model.compile(optimizer="adam", loss="mse", metrics=["mae"], steps_per_execution=2)
    path = tmp_path / "seq.npz"
    model.save(path)
    loaded = keras.models.load_model(path)
    x = np.random.default_rng(0).normal(size=(2, 4, 4, 1)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in model.layers]
    assert loaded.steps_per_execution == 2
    with np.load(path, allow_pickle=False) as data:  # readable without pickle
        assert "__ipusim_model__" in data.files


def test_functional_save_load_round_trip(tmp_path) -> None:
    model = _functional()
    path = tmp_path / "f.npz"
    model.save(path)
    loaded = keras.models.load_model(path)
    x = np.random.default_rng(1).normal(size=(3, 6)).astype(np.float32)
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)
    assert loaded.name == "f"


class _Sub(keras.Model):
    def __init__(self, units: int = 4, **kwargs) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.d = keras.layers.Dense(units)

    def call(self, inputs):
        return self.d(inputs) * 2.0

    def get_config(self):
        return {"units": self.units, "name": self.name}


def test_subclassed_save_load_needs_custom_objects(tmp_path) -> None:
    model = _Sub()
    model.build((None, 3))
    path = tmp_path / "sub.npz"
    model.save(path)
    with pytest.raises(ModelFileError, match="custom_objects"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, custom_objects={"_Sub": _Sub})
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))


def test_weights_round_trip_and_mismatch_leaves_model_unchanged(tmp_path) -> None:
    model = _functional()
    path = tmp_path / "w.npz"
    model.save_weights(path)
    other = _functional()
    other.load_weights(path)
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    small = keras.Sequential([keras.layers.Dense(2)])
    small.build((None, 6))
    before = small.get_weights()
    with pytest.raises(ModelFileError, match="does not match"):
        small.load_weights(path)
    for a, b in zip(before, small.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_corrupt_and_foreign_files_give_clear_errors(tmp_path) -> None:
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file at all")
    with pytest.raises(ModelFileError, match="not a readable"):
        keras.models.load_model(junk)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.zeros(3))
    with pytest.raises(ModelFileError, match="no ipusim header"):
        keras.models.load_model(foreign)
    with pytest.raises(ModelFileError, match="no file"):
        keras.models.load_model(tmp_path / "missing.npz")
    truncated = tmp_path / "trunc.npz"
    model = _functional()
    model.save(truncated)
    truncated.write_bytes(truncated.read_bytes()[:200])
    with pytest.raises(ModelFileError):
        keras.models.load_model(truncated)


def test_save_is_atomic_when_writing_fails(tmp_path, monkeypatch) -> None:
    model = _functional()
    path = tmp_path / "m.npz"
    model.save(path)
    original = path.read_bytes()

    def failing_savez(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", failing_savez)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    assert path.read_bytes() == original  # the old file is intact
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary left behind
    assert zipfile.is_zipfile(path) and os.path.getsize(path) > 0


def _adam_model() -> keras.Model:
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(2)]
    )
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    return model


@pytest.mark.parametrize("include_optimizer", [True, False])
def test_saved_optimizer_state_resumes_training_as_if_never_saved(
    tmp_path, include_optimizer: bool
) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(16, 4)).astype(np.float32)
    y = rng.normal(size=(16, 2)).astype(np.float32)
    keras.utils.set_random_seed(2)
    model = _adam_model()
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    path = tmp_path / "adam.npz"
    model.save(path, include_optimizer=include_optimizer)
    loaded = keras.models.load_model(path)
    # The original keeps training: its Adam moments and step count carry on.
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    loaded.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    same = all(np.array_equal(a, b) for a, b in zip(model.get_weights(), loaded.get_weights()))
    # With the optimizer state the loaded model continues exactly; without it Adam starts over
    # (step 1, zero moments) and takes different steps.
    assert same is include_optimizer
    assert loaded.optimizer.iterations == (12 if include_optimizer else 4)


def test_optimizer_state_that_does_not_fit_is_a_clear_error(tmp_path) -> None:
    model = _adam_model()
    x = np.ones((4, 4), np.float32)
    model.fit(x, np.ones((4, 2), np.float32), batch_size=4, verbose=0)
    path = tmp_path / "adam.npz"
    model.save(path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["o00000"] = np.zeros((9, 9), np.float32)  # a slot of the wrong shape
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError, match="optimizer state does not fit"):
        keras.models.load_model(path)
    assert keras.models.load_model(path, compile=False).optimizer is None
