"""Fuzz: a damaged model or weights file loads, or fails with an IPUSimError (issue 24, 2).

Model files (``model.save`` of a functional model with an Embedding, BatchNormalization and a
LossScaleOptimizer(Adam) after two steps, and of a subclassed model with RMSprop) and a weights
file (``save_weights``) are damaged by byte flips (anywhere, and in zip's headers), truncations,
edits of one JSON header field and edits of one array. Loading each damaged file, then
predicting (and taking a training step when it loads compiled), must either work or raise an
:class:`~ipusim.errors.IPUSimError`; any other exception is counted and fails the test with the
damage that caused it. ``IPUSIM_FUZZ_CASES`` (default 100) sets the cases per file and damage.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import numpy as np
import pytest

from ipusim import keras
from ipusim.config import reset_ipu_configuration
from ipusim.errors import IPUSimError
from tests.keras.file_fuzz import (
    edit_arrays,
    edit_json,
    flip_bytes,
    npz_bytes,
    read_npz_bytes,
    truncate,
)
from tests.keras.round_trip_models import Stack

CASES = int(os.environ.get("IPUSIM_FUZZ_CASES", "100"))
HEADER = "__ipusim_model__"


def _functional() -> keras.Model:
    inputs = keras.Input((3,), dtype="int32")
    x = keras.layers.Embedding(50, 4)(inputs)
    x = keras.layers.Flatten()(x)
    x = keras.layers.BatchNormalization()(x)
    outputs = keras.layers.Dense(2)(x)
    return keras.Model(inputs, outputs)


def _subclassed() -> keras.Model:
    model = Stack(False, [4], False)
    model.build((None, 3))
    return model


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, tuple[bytes, np.ndarray]]:
    """The intact files and the inputs to predict with."""
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    folder = tmp_path_factory.mktemp("intact")
    ids = np.arange(12, dtype=np.int32).reshape(4, 3) % 50
    floats = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    labels = np.array([0, 1, 1, 0], np.int32)
    out = {}
    for name, model, x, optimizer in (
        ("functional", _functional(), ids, keras.mixed_precision.LossScaleOptimizer(
            keras.optimizers.Adam(0.01), dynamic_growth_steps=1)),
        ("subclassed", _subclassed(), floats, keras.optimizers.RMSprop(0.01, momentum=0.5)),
    ):  # fmt: skip
        model.compile(
            optimizer,
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        model.fit(x, labels, batch_size=2, verbose=0)
        model.save(folder / f"{name}.npz")
        out[name] = ((folder / f"{name}.npz").read_bytes(), x)
    weights = _subclassed()
    weights.save_weights(folder / "weights.npz")
    out["weights"] = ((folder / "weights.npz").read_bytes(), floats)
    return out


def _damage(data: bytes, how: str, rng: np.random.Generator) -> tuple[bytes, str]:
    if how == "flip":
        return flip_bytes(data, rng), "byte flip"
    if how == "truncate":
        cut = truncate(data, rng)
        return cut, f"truncated to {len(cut)} of {len(data)} bytes"
    arrays = read_npz_bytes(data)
    if how == "arrays":
        arrays, what = edit_arrays(arrays, rng)
        return npz_bytes(arrays), what
    header = json.loads(arrays[HEADER].tobytes())
    header, what = edit_json(header, rng)
    text = json.dumps(header).encode()
    arrays[HEADER] = np.frombuffer(text, np.uint8)
    return npz_bytes(arrays), what


def _use(name: str, path, x: np.ndarray) -> str:
    """Load the damaged file as its kind is loaded, and use what loads.

    A loaded model whose inputs differ from the intact one's (an edited ``batch_input_shape``
    or dtype: a plausible model of another interface) is not fed the intact model's data; how
    a model refuses data that does not fit it is not what this test is about.
    """
    if name == "weights":
        model = _subclassed()
        model.load_weights(path)
        model.predict(x, verbose=0)
        return "loaded"
    model = keras.models.load_model(path, custom_objects={"Stack": Stack})
    spec = model.input_spec_structure
    if (tuple(spec.shape), spec.dtype) != ((None, 3), x.dtype.name):
        return "loaded with other inputs"
    model.predict(x, verbose=0)
    if model.optimizer is not None:
        model.fit(x, np.zeros(len(x), np.int32), batch_size=2, verbose=0)
    return "loaded"


@pytest.mark.parametrize("how", ["flip", "truncate", "header", "arrays"])
@pytest.mark.parametrize("name", ["functional", "subclassed", "weights"])
def test_damaged_files_load_or_raise_an_ipusim_error(files, tmp_path, name: str, how: str):
    data, x = files[name]
    outcomes: Counter[str] = Counter()
    others = []
    for seed in range(CASES):
        rng = np.random.default_rng([seed, len(name), len(how)])
        damaged, what = _damage(data, how, rng)
        path = tmp_path / f"{seed}.npz"
        path.write_bytes(damaged)
        try:
            outcomes[_use(name, path, x)] += 1
        except IPUSimError as error:
            outcomes[type(error).__name__] += 1
            assert len(str(error)) > 30, str(error)
        except Exception as error:  # noqa: BLE001 - what the test counts
            others.append(f"seed {seed}, {what}: {type(error).__name__}: {error}"[:300])
    print(f"{name} {how}: {dict(outcomes)}")  # shown with pytest -s
    assert not others, f"{len(others)} non-IPUSimError exceptions:\n" + "\n".join(others)
    if how in ("flip", "truncate"):
        assert outcomes["ModelFileError"] > CASES // 2, outcomes  # damage is noticed
