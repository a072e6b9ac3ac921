"""Fuzz: a damaged serving export loads, or fails with an IPUSimError (issue 24, deliverable 2).

An export of a functional model (integer ids into an Embedding, BatchNormalization, Dense) is
damaged in one of its files: ``serving.json`` (byte flips, truncations, edits of one JSON field),
``program.npz`` (byte flips, truncations, edits of one array) or ``trace.npz`` (byte flips,
truncations), or a file is removed. ``serving.load``, then serving a request, reading the timing
summary and the trace, must either work or raise an :class:`~ipusim.errors.IPUSimError`; any
other exception fails the test with the damage that caused it. ``IPUSIM_FUZZ_CASES`` (default
100) sets the cases per file and damage.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter

import numpy as np
import pytest

import ipusim
from ipusim import keras, serving
from ipusim.config import reset_ipu_configuration
from ipusim.errors import IPUSimError, ModelFileError
from tests.keras.file_fuzz import (
    edit_arrays,
    edit_json,
    flip_bytes,
    npz_bytes,
    read_npz_bytes,
    truncate,
)

CASES = int(os.environ.get("IPUSIM_FUZZ_CASES", "100"))


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """The intact export's folder and one request."""
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    keras.utils.set_random_seed(0)
    with ipusim.IPUStrategy().scope():
        inputs = keras.Input((3,), dtype="int32")
        x = keras.layers.Embedding(50, 4)(inputs)
        x = keras.layers.Flatten()(x)
        x = keras.layers.BatchNormalization()(x)
        model = keras.Model(inputs, keras.layers.Dense(2)(x))
        model.compile(steps_per_execution=2)
    folder = tmp_path_factory.mktemp("intact") / "export"
    model.export_for_ipu_serving(str(folder), batch_size=2)
    yield folder, np.array([[1, 2, 3], [4, 5, 49]], np.int32)
    reset_ipu_configuration()


def _damage(data: bytes, name: str, how: str, rng: np.random.Generator) -> tuple[bytes, str]:
    if how == "flip":
        return flip_bytes(data, rng), "byte flip"
    if how == "truncate":
        cut = truncate(data, rng)
        return cut, f"truncated to {len(cut)} of {len(data)} bytes"
    if name == "serving.json":
        edited, what = edit_json(json.loads(data), rng)
        return json.dumps(edited).encode(), what
    edited, what = edit_arrays(read_npz_bytes(data), rng)
    return npz_bytes(edited), what


def _use(folder, request: np.ndarray) -> None:
    served = serving.load(folder)
    served(request)
    served.timing.summary()
    assert served.trace.end_ps > 0


@pytest.mark.parametrize(
    ("name", "how"),
    [
        ("serving.json", "flip"),
        ("serving.json", "truncate"),
        ("serving.json", "edit"),
        ("program.npz", "flip"),
        ("program.npz", "truncate"),
        ("program.npz", "edit"),
        ("trace.npz", "flip"),
        ("trace.npz", "truncate"),
    ],
)
def test_damaged_exports_load_or_raise_an_ipusim_error(export, tmp_path, name: str, how: str):
    intact, request = export
    data = (intact / name).read_bytes()
    outcomes: Counter[str] = Counter()
    others = []
    for seed in range(CASES):
        rng = np.random.default_rng([seed, len(name), len(how)])
        damaged, what = _damage(data, name, how, rng)
        folder = tmp_path / str(seed)
        shutil.copytree(intact, folder)
        (folder / name).write_bytes(damaged)
        try:
            _use(folder, request)
            outcomes["loaded"] += 1
        except IPUSimError as error:
            outcomes[type(error).__name__] += 1
            assert len(str(error)) > 30, str(error)
        except Exception as error:  # noqa: BLE001 - what the test counts
            others.append(f"seed {seed}, {what}: {type(error).__name__}: {error}"[:300])
        shutil.rmtree(folder)
    print(f"{name} {how}: {dict(outcomes)}")  # shown with pytest -s
    assert not others, f"{len(others)} non-IPUSimError exceptions:\n" + "\n".join(others)
    if how in ("flip", "truncate"):
        assert outcomes["loaded"] < CASES, outcomes  # damage is noticed


@pytest.mark.parametrize("name", ["serving.json", "program.npz", "trace.npz"])
def test_an_export_missing_a_file_is_a_model_file_error(export, tmp_path, name: str):
    intact, request = export
    folder = tmp_path / "export"
    shutil.copytree(intact, folder)
    (folder / name).unlink()
    with pytest.raises(ModelFileError, match=r"serving export|no file|missing") as caught:
        _use(folder, request)
    assert isinstance(caught.value, FileNotFoundError) == (name == "serving.json")
