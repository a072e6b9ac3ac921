"""The saving and serving defects issue 24 reports, each reproduced as it was found."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import ipusim
from ipusim import keras, serving
from ipusim.config import reset_ipu_configuration
from ipusim.errors import ModelFileError
from tests.keras.round_trip_models import Stack


@pytest.fixture(autouse=True)
def _fresh():
    yield
    keras.mixed_precision.set_global_policy(None)
    reset_ipu_configuration()


def _configure(precision: str = "fp32", detail: str = "auto", records: int = 1_000_000) -> None:
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipusim.precision = precision
    cfg.ipusim.trace_detail = detail
    cfg.ipusim.trace_records = records
    cfg.configure_ipu_system()


@pytest.mark.parametrize("half", ["fp16.16", "mixed_float16"])
def test_embedding_ids_above_2048_survive_a_round_trip_of_a_model_built_from_a_shape(
    tmp_path, half: str
):
    _configure("fp16.16" if half == "fp16.16" else "fp32")
    if half == "mixed_float16":
        keras.mixed_precision.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.layers.Embedding(5000, 4)])
    model.build((None, 3))  # no keras.Input: the ids are not cast to the model's input dtype
    ids = np.array([[2049, 2051, 4999]], np.int32)  # not representable in fp16
    model.save(tmp_path / "m.npz")
    loaded = keras.models.load_model(tmp_path / "m.npz")
    table = model.get_weights()[0]
    want = table[ids].astype(np.float16)  # the rows of those ids, in half precision
    np.testing.assert_array_equal(loaded.predict(ids), want)
    np.testing.assert_array_equal(model.predict(ids), want)


def test_a_loss_scale_optimizers_scale_and_counter_survive_a_round_trip(tmp_path):
    _configure()
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    inner = keras.optimizers.SGD(0.01, momentum=0.9)
    model.compile(keras.mixed_precision.LossScaleOptimizer(inner, dynamic_growth_steps=2), "mse")
    x, y = np.ones((6, 3), np.float32), np.zeros((6, 2), np.float32)
    model.fit(x, y, batch_size=2, verbose=0)  # 3 finite steps: doubled after 2, then 1 more
    assert (model.optimizer.loss_scale, model.optimizer.dynamic_counter) == (2.0**16, 1)
    model.save(tmp_path / "m.npz")
    loaded = keras.models.load_model(tmp_path / "m.npz")
    assert (loaded.optimizer.loss_scale, loaded.optimizer.dynamic_counter) == (2.0**16, 1)
    for m in (model, loaded):
        m.fit(x[:2], y[:2], batch_size=2, verbose=0)  # the 2nd finite step since the doubling
        assert (m.optimizer.loss_scale, m.optimizer.dynamic_counter) == (2.0**17, 0)
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_subclassed_model_reloaded_in_the_same_session_keeps_its_adam_state(tmp_path):
    _configure()
    model = Stack(False, [4], False)
    model.build((None, 3))
    model.compile(keras.optimizers.Adam(0.01), "mse")
    x, y = np.linspace(0, 1, 12, dtype=np.float32).reshape(4, 3), np.ones((4, 3), np.float32)
    model.fit(x, y, batch_size=2, verbose=0)
    model.save(tmp_path / "m.npz")
    loaded = keras.models.load_model(tmp_path / "m.npz", custom_objects={"Stack": Stack})
    assert [w.name for w in loaded.weights] != [w.name for w in model.weights]  # new names
    assert loaded.optimizer.iterations == 2
    for var, same in zip(model.trainable_variables, loaded.trainable_variables, strict=True):
        for slot in ("m", "v"):
            want = model.optimizer.get_slot(var, slot).numpy()
            assert np.any(want != 0)
            np.testing.assert_array_equal(loaded.optimizer.get_slot(same, slot).numpy(), want)


def _export(folder, detail: str, records: int) -> serving.ServedModel:
    _configure(detail=detail, records=records)
    keras.utils.set_random_seed(0)
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3)])
        model.compile(steps_per_execution=3)
    return model.export_for_ipu_serving(str(folder), batch_size=2)


@pytest.mark.parametrize(("detail", "records"), [("summary", 1_000_000), ("auto", 1)])
def test_an_export_keeping_no_records_has_the_timing_of_a_full_one(tmp_path, detail, records):
    full = _export(tmp_path / "full", "full", 1_000_000)
    lean = _export(tmp_path / "lean", detail, records)
    assert len(full.timing.request_latency_s) == 3
    assert lean.timing == full.timing


def _flip_compression_method(data: bytes, signature: bytes, offset: int) -> bytes:
    at = data.index(signature) + offset
    return data[:at] + bytes([99, 0]) + data[at + 2 :]


def test_a_flipped_compression_method_in_a_zip_header_is_a_model_file_error(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.npz")
    intact = (tmp_path / "m.npz").read_bytes()
    damaged = tmp_path / "damaged.npz"
    # The central directory's entry is the one readers trust (it was a NotImplementedError).
    damaged.write_bytes(_flip_compression_method(intact, b"PK\x01\x02", 10))
    with pytest.raises(ModelFileError, match="damaged.npz.*compressed or encrypted"):
        keras.models.load_model(damaged)
    # The local header's copy is not read: the file loads as it was.
    damaged.write_bytes(_flip_compression_method(intact, b"PK\x03\x04", 8))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(keras.models.load_model(damaged).predict(x), model.predict(x))


@pytest.mark.parametrize(
    ("file", "damage", "field"),
    [
        ("program.npz", lambda b: b"not a zip", "not a readable"),
        ("serving.json", lambda b: b[: len(b) // 2], "not valid JSON"),
        ("serving.json", lambda b: b.replace(b'"timing"', b'"timings"'), "field 'timing'"),
        ("serving.json", lambda b: b.replace(b'"batch_size": 2', b'"batch_size": -2'),
         "field 'batch_size'"),
    ],
)  # fmt: skip
def test_serving_load_of_a_damaged_export_names_the_file_and_field(tmp_path, file, damage, field):
    _export(tmp_path / "intact", "auto", 1_000_000)
    shutil.copytree(tmp_path / "intact", tmp_path / "damaged")
    path = tmp_path / "damaged" / file
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ModelFileError, match=field) as caught:
        serving.load(tmp_path / "damaged")
    assert file in str(caught.value)
    json.loads((tmp_path / "intact" / "serving.json").read_text())  # the intact one is fine


def test_saving_over_a_file_with_overwrite_false_is_an_ipusim_file_exists_error(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    (tmp_path / "m.npz").write_bytes(b"keep")
    for save in (model.save, model.save_weights):
        with pytest.raises(FileExistsError, match="overwrite=False") as caught:
            save(tmp_path / "m.npz", overwrite=False)
        assert isinstance(caught.value, ModelFileError)
    assert (tmp_path / "m.npz").read_bytes() == b"keep"
