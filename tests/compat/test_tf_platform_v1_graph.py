"""``tensorflow.python.platform.test`` (``tf.test``), ``tf.compat.v1.get_default_graph`` and
``tf.compat.v1.ConfigProto``, as IPU TensorFlow 2 programs use them, under ``ipusim run``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).resolve().parent / "programs" / "tf_platform_test_program.py"
RUNNER = REPO / "workloads" / "compat_scripts" / "pre_compile_runner"


def _ipusim_run(script: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "ipusim.cli", "run", str(script), "-o", str(cwd / "out")]
    return subprocess.run(
        [*command, "--", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_platform_test_cases_run_under_unittest(tmp_path):
    run = _ipusim_run(PROGRAM, tmp_path, "SoftmaxTest")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    # 5 tests, and TF1's test_session helper skipped as TensorFlow skips it
    assert "Ran 6 tests" in run.stderr and "OK (skipped=1)" in run.stderr
    # setUp seeds NumPy with TensorFlow's DEFAULT_GRAPH_SEED (87654321)
    expected = np.random.RandomState(87654321).rand()
    draw = float(run.stdout.split("FIRST_DRAW ")[1].split()[0])
    assert draw == expected


def test_a_failing_platform_test_fails_the_run(tmp_path):
    run = _ipusim_run(PROGRAM, tmp_path, "DeliberateFailure")
    assert run.returncode != 0
    assert "FAILED (failures=1" in run.stderr
    assert "Mismatched elements: 1 / 2" in run.stderr


def test_pre_compile_runner_runs_unmodified(tmp_path):
    run = _ipusim_run(RUNNER / "pre_compile_example_runner.py", tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "out" / "01-fit" / "trace.json").is_file()
    assert "TF_POPLAR_FLAGS" not in os.environ  # the patch was undone in the child only


# ------------------------------------------------------------------ in process
def test_get_default_graph_is_the_traced_functions_graph():
    from ipusim.compat import tf

    names = []

    @tf.function
    def step(x):
        names.append(tf.compat.v1.get_default_graph().name)
        return x * 2.0

    np.testing.assert_allclose(np.asarray(step(np.ones(2, np.float32))), [2.0, 2.0])
    assert names == ["step"]  # TensorFlow's FuncGraph carries the function's name
    eager = tf.compat.v1.get_default_graph()
    assert not hasattr(eager, "name")  # TF's global Graph has no name attribute


def test_config_proto_follows_the_protobuf_message():
    from ipusim.compat import tf

    config = tf.compat.v1.ConfigProto(allow_soft_placement=True, intra_op_parallelism_threads=2)
    assert config.allow_soft_placement is True and config.log_device_placement is False
    # protobuf's text format: set fields in field-number order (checked with TensorFlow 2.21)
    assert str(config) == "intra_op_parallelism_threads: 2\nallow_soft_placement: true\n"
    assert str(tf.compat.v1.ConfigProto()) == ""
    with pytest.raises(ValueError, match='Protocol message ConfigProto has no "foo" field.'):
        tf.compat.v1.ConfigProto(foo=1)
    with pytest.raises(TypeError):
        tf.compat.v1.ConfigProto(inter_op_parallelism_threads="4")
    assert tf.compat.v1.ConfigProto(allow_soft_placement=True) == config.__class__(
        allow_soft_placement=True
    )
    # the usual GPU-memory lines of TF2 scripts; text as TensorFlow 2.21 prints it
    other = tf.compat.v1.ConfigProto()
    other.gpu_options.allow_growth = True
    other.gpu_options.per_process_gpu_memory_fraction = 0.5
    other.device_count["GPU"] = 0
    other.allow_soft_placement = True
    assert str(other) == (
        'device_count {\n  key: "GPU"\n  value: 0\n}\ngpu_options {\n'
        "  per_process_gpu_memory_fraction: 0.5\n  allow_growth: true\n}\n"
        "allow_soft_placement: true\n"
    )
    with pytest.raises(ValueError, match='GPUOptions has no "allow_grow" field'):
        other.gpu_options.allow_grow = True
    session = tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions(allow_growth=True))
    assert session.gpu_options.allow_growth is True
