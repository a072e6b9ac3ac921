"""The Keras ``TensorBoard`` callback writes the runs, tags and steps Keras writes (issue 22,
item 4), checked against the files tf-keras wrote for the same fit
(``bench/tf_summary/fixtures/keras``, from ``bench/tf_summary/generate.py``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from ipusim._events_read import read_events
from ipusim._summary_values import histogram_buckets
from ipusim.compat import ipu, keras
from ipusim.config import reset_ipu_configuration
from ipusim.errors import ConfigurationError

FIXTURES = Path(__file__).resolve().parents[2] / "bench" / "tf_summary" / "fixtures" / "keras"


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    keras.backend.clear_session()  # layer names dense, dense_1 as in the fixture's fresh process
    yield
    reset_ipu_configuration()


def _data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    return x, y


def _fit(log_dir: Path, steps_per_execution: int = 1, **options):
    """The fixture's fit, written as an IPU program: in an IPUStrategy, with a TensorBoard."""
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    x, y = _data()
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = keras.Sequential(
            [keras.layers.Dense(3, activation="relu", input_shape=(4,)), keras.layers.Dense(1)]
        )
        model.compile(
            optimizer="sgd", loss="mse", metrics=["mae"], steps_per_execution=steps_per_execution
        )
        callback = keras.callbacks.TensorBoard(log_dir=str(log_dir), **options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            history = model.fit(
                x,
                y,
                batch_size=8,
                epochs=2,
                validation_data=(x[:8], y[:8]),
                verbose=0,
                callbacks=[callback],
            )
    return model, history


def _events(folder: Path) -> list[dict]:
    (path,) = folder.glob("events.out.tfevents.*.v2")
    return read_events(path)[1:]


def _shape(event: dict) -> tuple:
    value = event["summary"]["value"][0]
    tensor = value["tensor"]
    dims = tuple(d.get("size", 0) for d in tensor.get("tensor_shape", {}).get("dim", []))
    plugin = value["metadata"]["plugin_data"]["plugin_name"]
    return event.get("step", 0), value["tag"], plugin, tensor["dtype"], dims


@pytest.mark.parametrize("run", ["train", "validation"])
def test_runs_tags_steps_and_tensors_are_keras_own(tmp_path, run):
    _fit(tmp_path, histogram_freq=1, update_freq=2, write_graph=False)
    ours = [_shape(e) for e in _events(tmp_path / run)]
    theirs = [_shape(e) for e in _events(FIXTURES / run)]
    assert ours == theirs and len(ours) >= 8


def test_values_are_the_fits_own(tmp_path):
    model, history = _fit(tmp_path, histogram_freq=1, update_freq="epoch", write_graph=False)
    train = _events(tmp_path / "train")
    val = _events(tmp_path / "validation")
    assert not any(e["summary"]["value"][0]["tag"].startswith("batch_") for e in train)

    def scalars(events, tag):
        return [
            np.frombuffer(e["summary"]["value"][0]["tensor"]["tensor_content"], "<f4")[0]
            for e in events
            if e["summary"]["value"][0]["tag"] == tag
        ]

    np.testing.assert_allclose(scalars(train, "epoch_loss"), history.history["loss"], rtol=1e-6)
    np.testing.assert_allclose(scalars(val, "epoch_mae"), history.history["val_mae"], rtol=1e-6)
    last_kernel = [
        e for e in train if e["summary"]["value"][0]["tag"] == "dense_1/kernel_0/histogram"
    ][-1]
    content = last_kernel["summary"]["value"][0]["tensor"]["tensor_content"]
    expected = histogram_buckets(model.layers[1].get_weights()[0])
    np.testing.assert_array_equal(np.frombuffer(content, "<f8").reshape(-1, 3), expected)


def test_batch_summaries_once_per_execution_that_crosses_a_multiple(tmp_path):
    # 2 steps per epoch, executions of 2 steps, update_freq 3: the counts 2, 4 cross 3 at 4.
    _fit(tmp_path, steps_per_execution=2, update_freq=3, write_graph=False, profile_batch=0)
    steps = [
        e.get("step", 0)
        for e in _events(tmp_path / "train")
        if e["summary"]["value"][0]["tag"] == "batch_loss"
    ]
    assert steps == [4]


def test_arguments_keras_rejects_and_what_is_not_simulated_is_said(tmp_path):
    with pytest.raises(ConfigurationError, match="Unrecognized arguments"):
        keras.callbacks.TensorBoard(log_dir=str(tmp_path), no_such_option=1)
    with pytest.raises(ConfigurationError, match="update_freq"):
        keras.callbacks.TensorBoard(log_dir=str(tmp_path), update_freq="sometimes")
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    callback = keras.callbacks.TensorBoard(log_dir=str(tmp_path), profile_batch=2)
    with pytest.warns(UserWarning, match="profile_batch .*write_graph|write_graph.*profile_batch"):
        callback.set_model(model)
