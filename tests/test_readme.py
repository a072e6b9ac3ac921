"""Every command and snippet of README.md runs as the README shows it.

The commands and snippets are read from README.md (see ``readme_blocks``), never copied here, so
the README cannot show something that fails: a new block or command without a test here fails
:func:`test_every_block_and_command_of_the_readme_is_exercised`.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from readme_blocks import README, blocks, commands, inline_commands, python_block

ROOT = README.parent
MNIST_DIR = os.environ.get("IPUSIM_DATA_DIR", "")

#: The test that runs each kind of command (by its first words).
EXERCISED_BY = {
    ("pip", "install"): "test_pip_install_gives_the_command_and_the_extras",
    ("pytest",): "test_pytest_command_collects_the_suite",
    ("ipusim", "demo"): "test_demo_plot_and_report_commands",
    ("ipusim", "plot"): "test_demo_plot_and_report_commands",
    ("ipusim", "report"): "test_demo_plot_and_report_commands",
    ("ipusim", "view"): "test_demo_plot_and_report_commands",
    ("ipusim", "systems"): "test_systems_command",
    ("ipusim", "run"): "test_run_commands_on_ipu_scripts",
    ("ipusim", "sweep"): "tests/sweep/test_sweep_readme.py (the sweep example)",
    ("python", "workloads/bert.py"): "test_bert_large_command",
    ("python", "-m"): "test_study_command",
    ("ipusim", "validate"): "test_validate_command",
}
#: The test that runs each python snippet (by its section).
SNIPPETS = {
    "Quick tour: an IPU script": "test_ipu_quick_tour",
    "Quick tour: plain Keras": "test_plain_keras_quick_tour",
    "Pipelining": "test_pipelining_snippet",
}
#: Blocks run by the tests of the feature they show: (language, section) -> that test file.
DELEGATED = {
    ("python", "Serving and keras.applications"): "tests/serving/test_readme_serving.py",
    ("toml", "Timelines, studies and sweeps"): "tests/sweep/test_sweep_readme.py",
}


def _kind(argv: list[str]) -> tuple[str, ...]:
    for length in (2, 1):
        if tuple(argv[:length]) in EXERCISED_BY:
            return tuple(argv[:length])
    raise KeyError(f"no test runs the README command {' '.join(argv)!r}")


def _all_commands() -> list[list[str]]:
    found = [argv for b in blocks() if b.language == "bash" for argv in commands(b)]
    return found + [s.split() for s in inline_commands()]


def _readme_commands(*kind: str) -> list[list[str]]:
    chosen = [argv for argv in _all_commands() if _kind(argv) == kind]
    assert chosen, f"the README has no {' '.join(kind)!r} command any more; update EXERCISED_BY"
    return chosen


def test_every_block_and_command_of_the_readme_is_exercised():
    for block in blocks():
        if block.language == "bash":
            for argv in commands(block):
                _kind(argv)  # raises for a command no test runs
        elif (block.language, block.section) not in DELEGATED:
            assert block.language == "python", f"no test runs the {block.language} block {block}"
            assert block.section in SNIPPETS, f"no test runs the python block in {block.section!r}"
    for span in inline_commands():
        _kind(span.split())


def _executable(argv: list[str]) -> list[str]:
    """The README's argv with its program resolved in this environment."""
    program, rest = argv[0], argv[1:]
    if program == "ipusim":
        script = Path(sys.executable).with_name("ipusim")
        return [str(script), *rest] if script.is_file() else [sys.executable, "-m", "ipusim", *rest]
    if program in ("python", "python3"):
        return [sys.executable, *rest]
    if program == "pytest":
        return [sys.executable, "-m", "pytest", *rest]
    raise KeyError(program)


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 600):
    result = subprocess.run(
        _executable(argv),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, f"{' '.join(argv)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _offline_home(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "IPUSIM_DATA_DIR": str(tmp_path / "no_mnist")}


# ---------------------------------------------------------------------- install and tests
def test_pip_install_gives_the_command_and_the_extras():
    """`pip install -e .` and `pip install -e ".[test,dask]"`: the installed distribution is
    this checkout, provides the `ipusim` command and the extras the README names."""
    distribution = importlib.metadata.distribution("ipusim")
    extras = set(distribution.metadata.get_all("Provides-Extra") or [])
    scripts = {e.name: e.value for e in distribution.entry_points if e.group == "console_scripts"}
    assert scripts.get("ipusim") == "ipusim.cli:main"
    for argv in _readme_commands("pip", "install"):
        assert argv[2] == "-e", argv
        target = argv[3]
        path, _, wanted = target.partition("[")
        assert Path(ROOT, path).resolve() == ROOT
        assert set(filter(None, wanted.rstrip("]").split(","))) <= extras, (target, extras)
    import ipusim

    assert Path(ipusim.__file__).resolve().is_relative_to(ROOT)  # editable: this checkout


def test_pytest_command_collects_the_suite():
    for argv in _readme_commands("pytest"):
        result = _run([*argv, "--collect-only", "-p", "no:cacheprovider", __file__], ROOT)
        assert "test_pytest_command_collects_the_suite" in result.stdout


# ---------------------------------------------------------------------- python snippets
def _needs_mnist() -> Path:
    folder = Path(MNIST_DIR) if MNIST_DIR else None
    if (
        folder is None
        or not any(folder.glob("t10k-images*"))
        and not (folder / "mnist.npz").exists()
    ):
        pytest.skip("IPUSIM_DATA_DIR does not hold MNIST: the README's quick tours read it")
    return folder


def _run_snippet(code: str, cwd: Path, epilogue: str = "") -> subprocess.CompletedProcess:
    script = cwd / "snippet.py"
    script.write_text(code + textwrap.dedent(epilogue))
    return _run(["python", str(script)], cwd)


def test_ipu_quick_tour(tmp_path):
    _needs_mnist()
    code = python_block("Quick tour: an IPU script")
    result = _run_snippet(
        code,
        tmp_path,
        """
        assert history.history["accuracy"][-1] > 0.85, history.history
        assert report.throughput_samples_per_s > 0
        print("TOUR-OK", len(report.trace))
        """,
    )
    assert "TOUR-OK" in result.stdout and "Utilisation" in result.stdout
    assert (tmp_path / "trace.json").stat().st_size > 0


def test_plain_keras_quick_tour(tmp_path):
    _needs_mnist()
    code = python_block("Quick tour: plain Keras")
    result = _run_snippet(
        code,
        tmp_path,
        """
        import numpy as np
        reloaded = keras.models.load_model("mlp.npz")  # the README's saved model reloads
        a = model.evaluate(x[8000:], y[8000:], verbose=0)
        b = reloaded.evaluate(x[8000:], y[8000:], verbose=0)
        np.testing.assert_allclose(a, b, rtol=1e-6)
        assert a[1] > 0.9, a
        print("TOUR-OK", a)
        """,
    )
    assert "TOUR-OK" in result.stdout


def test_pipelining_snippet(tmp_path):
    """The pipelining snippet trains two IPUs with four stages (0 and 3 on IPU 0): both IPUs
    compute and copy over the IPU-Links, each keeps a stash; Interleaved refuses that mapping."""
    code = python_block("Pipelining")
    assert "PipelineSchedule.Grouped" in code and "device_mapping=[0, 1, 1, 0]" in code
    result = _run_snippet(
        code,
        tmp_path,
        """
        import json
        trace = report.trace.to_dataframe()
        busy = {ipu: sorted(set(trace[trace.ipu == ipu].track)) for ipu in (0, 1)}
        stash = report.memory_items
        stash = stash[stash.name.str.contains("stash")]
        interleaved = code_text.replace("PipelineSchedule.Grouped", "PipelineSchedule.Interleaved")
        try:
            exec(interleaved, {})
            refused = ""
        except ipusim.errors.UnsupportedError as error:
            refused = str(error)
        print("PIPE", json.dumps({"busy": busy, "stash_ipus": sorted(set(stash.ipu.tolist())),
                                  "refused": refused}))
        """.replace("code_text", repr(code)),
    )
    found = json.loads(result.stdout.split("PIPE ", 1)[1])
    for ipu in ("0", "1"):
        assert {"compute", "link"} <= set(found["busy"][ipu]), found
    assert found["stash_ipus"] == [0, 1], found
    assert "Interleaved" in found["refused"] and "[0, 1, 1, 0]" in found["refused"], found


# ---------------------------------------------------------------------- commands
def test_systems_command(tmp_path):
    for argv in _readme_commands("ipusim", "systems"):
        out = _run(argv, tmp_path).stdout
        for name in ("C2", "IPU", "M2000", "POD16", "POD64"):
            assert name in out


def test_demo_plot_and_report_commands(tmp_path):
    env = {"IPUSIM_DATA_DIR": MNIST_DIR} if MNIST_DIR else _offline_home(tmp_path)
    demo = _readme_commands("ipusim", "demo")[0]
    out = _run(demo, tmp_path, env).stdout
    assert "held-out accuracy" in out
    assert (tmp_path / "ipusim_demo" / "trace.json").is_file()
    for argv in _readme_commands("ipusim", "plot"):
        _run(argv, tmp_path)
        image = tmp_path / argv[argv.index("-o") + 1]
        assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for argv in _readme_commands("ipusim", "report"):
        out = _run(argv, tmp_path).stdout
        assert "Utilisation" in out
        if "--top-ops" in argv:
            assert "Top compute sets by compute time" in out
    for argv in _readme_commands("ipusim", "view"):
        _run(argv, tmp_path)
        assert (tmp_path / argv[2] / "view.html").read_text().startswith("<!DOCTYPE html>")


_IPU_SCRIPT = """
import os
import sys
import numpy as np
from tensorflow.python import ipu
import tensorflow as tf
print("SCRIPT-ARGS", sys.argv[1:])
print("TIMING-ONLY", repr(os.environ.get("IPUSIM_TIMING_ONLY")))
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()
with ipu.ipu_strategy.IPUStrategy().scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
    model.fit(np.ones((64, 4), np.float32), np.ones((64, 2), np.float32), batch_size=8, verbose=0)
"""


def test_run_commands_on_ipu_scripts(tmp_path):
    for argv in _readme_commands("ipusim", "run"):
        script = next(a for a in argv[2:] if a.endswith(".py"))
        (tmp_path / script).write_text(_IPU_SCRIPT)
        result = _run(argv, tmp_path)
        tail = argv[argv.index(script) + 1 :]
        assert f"SCRIPT-ARGS {tail!r}" in result.stdout
        stem = Path(script).stem
        assert (tmp_path / "ipusim_run" / stem / "01-fit" / "trace.json").is_file()
        timing_only = "1" if "--timing-only" in argv else None
        assert f"TIMING-ONLY {timing_only!r}" in result.stdout


@pytest.mark.slow
def test_bert_large_command():
    for argv in _readme_commands("python", "workloads/bert.py"):
        out = _run(argv, ROOT).stdout
        assert "throughput" in out and "replicas: 4" in out


@pytest.mark.slow
def test_study_command(tmp_path):
    for argv in _readme_commands("python", "-m"):
        module = argv[2]
        assert module.startswith("analysis.studies."), argv
        _run(argv, tmp_path, timeout=900)
        folder = tmp_path / argv[argv.index("-o") + 1]
        assert any(folder.glob("results.*")), sorted(p.name for p in folder.iterdir())


def test_validate_command(tmp_path):
    for argv in _readme_commands("ipusim", "validate"):
        out = _run(argv, tmp_path).stdout
        ids = [a for a in argv[2:] if not a.startswith("-")]
        table = {line.split()[0] for line in out.splitlines() if line.strip()}
        assert set(ids) <= table, out
        assert "median |error|" in out


@pytest.mark.parametrize(("language", "section"), sorted(DELEGATED))
def test_delegated_blocks_are_run_by_their_features_tests(language, section):
    assert any(b.language == language and b.section == section for b in blocks()), (
        f"the README has no {language} block in {section!r} any more; update DELEGATED"
    )
    test_file = ROOT / DELEGATED[(language, section)]
    if not test_file.is_file():
        pytest.skip(f"{DELEGATED[(language, section)]} (its feature's README test) is not here yet")
    text = test_file.read_text(encoding="utf-8")
    assert "README" in text and section in text  # it reads the block from the README
