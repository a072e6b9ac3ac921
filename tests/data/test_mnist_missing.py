"""Without MNIST on disk (and no network), the README's quick tours say in one line how to get it,
never a long chained traceback (issue 13, item 9); scripts loading it through
``keras.datasets.mnist`` run on synthetic MNIST-shaped data instead, announced on the console
and marked in the report (issue 22, item 5: nothing is downloaded)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from readme_blocks import python_block

ROOT = Path(__file__).resolve().parents[2]

#: Runs argv[1:] (a script, or `-m ipusim ...`) with any MNIST download failing the run.
_OFFLINE = textwrap.dedent(
    """
    import runpy, sys
    import ipusim.data.mnist as mnist

    def offline(*args, **kwargs):
        raise AssertionError("ipusim tried to download MNIST")

    mnist._urlopen = offline
    if sys.argv[1] == "-m":
        sys.argv = sys.argv[2:]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


def _offline(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    empty = tmp_path / "no_mnist"
    empty.mkdir(exist_ok=True)
    env = {
        "HOME": str(tmp_path / "home"),
        "IPUSIM_DATA_DIR": str(empty),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-c", _OFFLINE, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def _says_how_to_get_it(line: str) -> None:
    assert "MNIST is not on disk" in line
    assert "IPUSIM_DATA_DIR" in line and "mnist.npz" in line
    assert "nothing was downloaded" in line and "download=True" in line


@pytest.mark.parametrize("section", ["Quick tour: an IPU script", "Quick tour: plain Keras"])
def test_the_readme_quick_tours_say_in_one_line_how_to_get_mnist(tmp_path, section):
    script = tmp_path / "tour.py"
    script.write_text(python_block(section))
    result = _offline(tmp_path, str(script))
    assert result.returncode == 1
    err = result.stderr
    assert "During handling of the above exception" not in err
    assert "direct cause of the following exception" not in err
    lines = err.strip().splitlines()
    assert len(lines) <= 12, err  # a short traceback, not a 70-line chain
    assert lines[-1].startswith("ipusim.errors.DatasetNotFoundError: ")
    _says_how_to_get_it(lines[-1])


_KERAS_MNIST_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.python import ipu

    (x, y), _ = keras.datasets.mnist.load_data()
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10)])
        model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x[:256] / 255.0, y[:256], batch_size=32, epochs=1, verbose=0)
    """
)


def test_ipusim_run_of_a_keras_mnist_script_runs_on_announced_synthetic_data(tmp_path):
    script = tmp_path / "mnist_script.py"
    script.write_text(_KERAS_MNIST_SCRIPT)
    out = tmp_path / "o"
    result = _offline(tmp_path, "-m", "ipusim", "run", str(script), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "SyntheticDataWarning" in result.stderr and "mnist" in result.stderr
    assert "[data: synthetic (mnist)" in result.stderr  # the run's report line says so
    summary = (out / "01-fit" / "summary.txt").read_text()
    assert "data: synthetic (mnist): timing valid, accuracy not" in summary


def test_the_outfeed_tutorial_runs_on_announced_synthetic_data(tmp_path):
    script = ROOT / "workloads" / "outfeed" / "mnist.py"
    result = _offline(tmp_path, str(script), "--epochs", "1", "--steps-per-epoch", "8")
    assert result.returncode == 0, result.stderr
    assert "SyntheticDataWarning" in result.stderr and "Traceback" not in result.stderr
