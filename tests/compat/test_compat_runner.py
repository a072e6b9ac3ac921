"""``ipusim run``: import redirection for one process, report collection, a clean process after."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import ipusim
from ipusim.compat import ipu, keras, tf
from ipusim.compat.runner import (
    REDIRECTS,
    _split_options,
    redirect_imports,
    resolve,
    run_script,
)
from ipusim.config import reset_ipu_configuration

REPO = Path(__file__).resolve().parents[2]

# A small IPU script in IPU TensorFlow 2 spelling: fit, evaluate and predict on synthetic data.
TINY = textwrap.dedent(
    """
    import sys

    import numpy as np
    import tensorflow as tf
    from tensorflow import keras as tf_keras
    from tensorflow.python import ipu
    from tensorflow.python.ipu.ops import pipelining_ops
    from keras.layers import Dense

    import keras
    import helper_module

    print("ARGV", sys.argv[1:])
    print("SAME_KERAS", tf.keras is keras and tf_keras is keras and keras.layers.Dense is Dense)
    print("SCHEDULE", pipelining_ops.PipelineSchedule.Grouped.name)
    print("HELPER", helper_module.VALUE)

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    print("SYSTEM", repr(cfg.ipusim.system))
    cfg.configure_ipu_system()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int32)
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = keras.Sequential([Dense(8, activation="relu"), Dense(2)])
        model.compile(
            optimizer="sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=4,
        )
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        model.evaluate(x, y, batch_size=8, verbose=0)
        model.predict(x, batch_size=8)
    if "--fail" in sys.argv:
        raise RuntimeError("the script failed on purpose")
    if "--exit" in sys.argv:
        sys.exit(3)
    """
)


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


@pytest.fixture
def tiny(tmp_path) -> Path:
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "helper_module.py").write_text("VALUE = 42\n")
    script = folder / "tiny_script.py"
    script.write_text(TINY)
    return script


def _owned_modules() -> list[str]:
    roots = ("tensorflow", "keras", "ipu_tensorflow_addons")
    return sorted(m for m in sys.modules if m.split(".")[0] in roots)


# ------------------------------------------------------------------------------ name resolution
def test_resolve_maps_each_root_to_its_compat_module():
    assert resolve("tensorflow") == "ipusim.compat.tf"
    assert resolve("tensorflow.python") == "ipusim.compat.tf.python"
    assert resolve("tensorflow.python.ipu") == "ipusim.compat.ipu"
    assert resolve("tensorflow.python.ipu.ops.pipelining_ops") == (
        "ipusim.compat.ipu.ops.pipelining_ops"
    )
    assert resolve("tensorflow.keras") == "ipusim.compat.keras"
    assert resolve("tensorflow.keras.layers") == "ipusim.compat.keras.layers"
    assert resolve("keras") == "ipusim.compat.keras"
    assert resolve("keras.datasets.mnist") == "ipusim.compat.keras.datasets.mnist"
    assert resolve("keras.engine") == "ipusim.keras.engine"  # falls back to ipusim.keras
    assert resolve("ipu_tensorflow_addons") is None  # an empty package
    assert resolve("ipu_tensorflow_addons.keras.layers") == "ipusim.compat.ipu_addons_layers"
    assert resolve("popdist") == "ipusim.compat.popdist"
    assert resolve("popdist.tensorflow") == "ipusim.compat.popdist.tensorflow"
    assert all(prefix.split(".")[0] in ("tensorflow", "keras", "ipu_tensorflow_addons", "popdist")
               for prefix, _ in REDIRECTS)  # fmt: skip


def test_resolve_refuses_what_ipusim_does_not_provide_and_ignores_other_names():
    with pytest.raises(ModuleNotFoundError, match="tensorflow.python.no_such_module"):
        resolve("tensorflow.python.no_such_module")
    with pytest.raises(ModuleNotFoundError, match="never imports a real TensorFlow"):
        resolve("keras.no_such_module")
    with pytest.raises(KeyError):
        resolve("tensorflow_datasets")  # another top-level name: not ours


# ------------------------------------------------------------------------------ redirection
def test_imports_inside_the_block_resolve_to_compat_modules():
    meta_path = list(sys.meta_path)
    with redirect_imports():
        import keras as ported_keras
        import tensorflow as ported_tf
        import tensorflow.python.ipu.ops.pipelining_ops as ported_ops
        from keras.datasets import mnist
        from tensorflow.keras.layers import Dense
        from tensorflow.python import ipu as ported_ipu

        assert ported_tf is tf and ported_keras is keras and ported_ipu is ipu
        assert ported_tf.keras is ported_keras
        assert ported_ops is ipu.ops.pipelining_ops
        assert Dense is ipusim.keras.layers.Dense
        assert mnist is keras.datasets.mnist
        with pytest.raises(ModuleNotFoundError, match="ipusim"):
            import tensorflow.python.no_such_module  # noqa: F401
    assert _owned_modules() == []
    assert sys.meta_path == meta_path
    assert ipusim.compat.tf.__spec__.name == "ipusim.compat.tf"  # the aliased module is intact


def test_modules_already_loaded_under_the_names_are_hidden_then_restored():
    placeholder = types.ModuleType("keras")
    sys.modules["keras"] = placeholder
    try:
        with redirect_imports():
            import keras as inside

            assert inside is keras
        assert sys.modules["keras"] is placeholder
    finally:
        del sys.modules["keras"]


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is not None, reason="a real TensorFlow is installed"
)
def test_tensorflow_outside_the_runner_is_still_missing():
    with redirect_imports():
        import tensorflow  # noqa: F401
    with pytest.raises(ModuleNotFoundError):
        import tensorflow  # noqa: F401, F811
    # (`import keras` is not checked here: pytest puts tests/ on sys.path, where tests/keras/
    # is importable as a namespace package.)


# ------------------------------------------------------------------------------ run_script
def test_run_saves_one_report_per_simulation_in_order(tiny, tmp_path, capsys):
    out = tmp_path / "reports"
    result = run_script(tiny, ["a", "--b"], output=out)
    assert result.exit_code == 0
    assert [p.name for p in result.reports] == ["01-fit", "02-evaluate", "03-predict"]
    for folder, kind in zip(result.reports, ("train", "test", "predict")):
        figures = json.loads((folder / "report.json").read_text())
        assert figures["kind"] == kind
        trace = json.loads((folder / "trace.json").read_text())
        assert trace["traceEvents"]
    captured = capsys.readouterr()
    assert "ARGV ['a', '--b']" in captured.out
    assert "SAME_KERAS True" in captured.out and "SCHEDULE Grouped" in captured.out
    assert "HELPER 42" in captured.out
    assert str(out / "01-fit" / "trace.json") in captured.err
    assert "3 simulation report(s)" in captured.err


def test_run_leaves_the_process_as_it_found_it(tiny, tmp_path):
    argv, path, meta_path = list(sys.argv), list(sys.path), list(sys.meta_path)
    run_script(tiny, output=tmp_path / "r", quiet=True)
    assert sys.argv == argv and sys.path == path and sys.meta_path == meta_path
    assert _owned_modules() == []
    assert "helper_module" not in sys.modules and "tiny_script" not in sys.modules
    from ipusim.keras.extensions.simulation import ON_REPORT

    assert ON_REPORT == []


def test_run_default_output_is_ipusim_run_slash_stem(tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stale = tmp_path / "ipusim_run" / "tiny_script" / "07-fit"
    stale.mkdir(parents=True)
    (stale / "report.json").write_text("{}")
    keep = tmp_path / "ipusim_run" / "tiny_script" / "notes"
    keep.mkdir()
    result = run_script(tiny, quiet=True)
    assert result.output == Path("ipusim_run") / "tiny_script"
    assert (tmp_path / "ipusim_run" / "tiny_script" / "01-fit" / "trace.json").is_file()
    assert not stale.exists()  # a previous run's report folder is replaced
    assert keep.is_dir()  # anything else is left alone


def test_run_system_option_sets_every_ipuconfigs_system(tiny, tmp_path, capsys):
    result = run_script(tiny, output=tmp_path / "r", system="POD16", quiet=True)
    assert "SYSTEM 'POD16'" in capsys.readouterr().out
    figures = json.loads((result.reports[0] / "report.json").read_text())
    assert figures["system_name"] == ipusim.hardware.load_system("POD16").name
    assert ipusim.IPUConfig().ipusim.system == ""  # the override ends with the run
    with pytest.raises(ValueError, match="NOT_A_SYSTEM"):
        run_script(tiny, output=tmp_path / "r2", system="NOT_A_SYSTEM", quiet=True)


def test_run_returns_the_scripts_exit_code_and_reraises_its_errors(tiny, tmp_path):
    assert run_script(tiny, ["--exit"], output=tmp_path / "a", quiet=True).exit_code == 3
    with pytest.raises(RuntimeError, match="on purpose"):
        run_script(tiny, ["--fail"], output=tmp_path / "b", quiet=True)
    assert (tmp_path / "b" / "03-predict" / "trace.json").is_file()  # saved before the error
    assert _owned_modules() == []
    with pytest.raises(FileNotFoundError, match="no script"):
        run_script(tmp_path / "missing.py")


def test_split_options_keeps_script_arguments_and_honours_double_dash():
    assert _split_options(["-o", "out", "x", "--system=POD16", "--", "-o", "y"]) == (
        {"output": "out", "system": "POD16"},
        ["x", "-o", "y"],
    )
    assert _split_options(["--epochs", "3"]) == ({}, ["--epochs", "3"])


def test_cli_run_in_a_subprocess(tiny, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ipusim.cli",
            "run",
            str(tiny),
            "-o",
            str(tmp_path / "o"),
            "--",
            "--exit",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 3, proc.stderr
    assert "ARGV ['--exit']" in proc.stdout
    assert (tmp_path / "o" / "02-evaluate" / "trace.json").is_file()
    assert "3 simulation report(s)" in proc.stderr


def test_cli_errors_in_its_own_arguments_exit_with_2(tmp_path, capsys):
    from ipusim.compat.runner import main

    assert main(str(tmp_path / "missing.py"), []) == 2
    assert "no script file" in capsys.readouterr().err
    script = tmp_path / "empty.py"
    script.write_text("")
    assert main(str(script), ["--system", "NOT_A_SYSTEM"]) == 2
    assert "ipusim systems" in capsys.readouterr().err
