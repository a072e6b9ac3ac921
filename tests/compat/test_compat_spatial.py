"""An IPU TensorFlow 2 program with 1-D, 3-D and transposed spatial layers runs under
``ipusim run`` unmodified (tests/compat/programs/keras_spatial_layers.py): both models train
(their loss falls on labels that depend on the inputs) and each fit writes its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipusim.compat import keras
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

SCRIPT = Path(__file__).resolve().parent / "programs"


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


def _losses(out: str, tag: str) -> list[float]:
    line = next(line for line in out.splitlines() if line.startswith(tag))
    return [float(v) for v in line.split()[1:]]


def test_spatial_layer_program_trains_under_ipusim_run(tmp_path, capsys) -> None:
    result = run_script(SCRIPT / "keras_spatial_layers.py", output=tmp_path / "r", quiet=True)
    assert result.exit_code == 0
    assert [p.name for p in result.reports] == ["01-fit", "02-fit"]
    for folder in result.reports:
        figures = json.loads((folder / "report.json").read_text())
        assert figures["kind"] == "train"
    out = capsys.readouterr().out
    for tag in ("CONV1D_LOSS", "CONV3D_LOSS"):
        losses = _losses(out, tag)
        assert len(losses) == 4
        assert losses[-1] < 0.95 * losses[0], f"{tag}: the loss did not fall: {losses}"
