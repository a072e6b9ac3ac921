"""Simulated time in the program's own logs (docs/simulated_time.md): under ``ipusim run`` a
callback timing epochs with ``time.time()`` and the Keras bar's time per step agree with the
report; host Python costs no simulated time; ``--wall-time`` and the end of the run restore the
CPU's clock."""

from __future__ import annotations

import datetime
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ipusim.cli import build_parser
from ipusim.compat.runner import _split_options, run_script
from ipusim.config import reset_ipu_configuration
from ipusim.trace import Report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import blocks  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulated_time.md"

# A callback as IPU programs write it: images/s per epoch from time.time().
_CALLBACK = """
class Throughput(keras.callbacks.Callback):
    def __init__(self, images):
        super().__init__()
        self.images = images

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        print(f"THROUGHPUT {self.images / (time.time() - self.start):.4f} images/s")
"""

SEED_MLP = (
    textwrap.dedent(
        """
    import time

    import numpy as np
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.python import ipu
    """
    )
    + _CALLBACK
    + textwrap.dedent(
        """
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    rng = np.random.default_rng(0)
    x = rng.random((1920, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 1920).astype(np.int32)
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        model = keras.Sequential([
            keras.layers.Flatten(),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ])
        model.compile(
            optimizer="sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=20,
        )
        t0 = time.time()
        sum(i * i for i in range(200_000))  # host Python between device runs
        print("HOST_PYTHON", time.time() - t0, time.perf_counter_ns() - time.perf_counter_ns())
        model.fit(x, y, batch_size=32, epochs=3, verbose=1, callbacks=[Throughput(len(x))])
    print("CLOCK", type(time.time).__name__)
    """
    )
)

PIPELINED = (
    textwrap.dedent(
        """
    import datetime
    import time

    import numpy as np
    import tensorflow as tf
    from tensorflow.python import ipu

    import keras
    """
    )
    + _CALLBACK
    + textwrap.dedent(
        """
    config = ipu.config.IPUConfig()
    config.auto_select_ipus = 2
    config.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        inputs = keras.layers.Input((28, 28))
        with keras.ipu.PipelineStage(0):
            x = keras.layers.Flatten()(inputs)
            x = keras.layers.Dense(256, activation="relu")(x)
        with keras.ipu.PipelineStage(1):
            x = keras.layers.Dense(128, activation="relu")(x)
            x = keras.layers.Dense(10)(x)
        model = keras.Model(inputs, x)
        model.set_pipelining_options(gradient_accumulation_steps_per_replica=8)
        model.compile(
            optimizer=keras.optimizers.SGD(0.01),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=32,
        )
        rng = np.random.default_rng(1)
        images = rng.random((2048, 28, 28)).astype(np.float32)
        labels = rng.integers(0, 10, 2048).astype(np.int32)
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(16, drop_remainder=True)
        before = datetime.datetime.now()
        wall_before = time.time()
        model.fit(dataset, epochs=2, verbose=1, callbacks=[Throughput(len(images))])
        print("DATETIME", (datetime.datetime.now() - before).total_seconds(),
              time.time() - wall_before, isinstance(before, datetime.datetime))
    """
    )
)

_BAR = re.compile(r"(\d+)/(\d+) \[=+\] - \d+s (\d+)(us|ms|s)/step")
_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()


def _run(tmp_path: Path, text: str, capsys, **options) -> tuple[Report, str]:
    script = tmp_path / "timed_script.py"
    script.write_text(text)
    result = run_script(script, output=tmp_path / "out", quiet=True, **options)
    assert result.exit_code == 0
    fits = [p for p in result.reports if p.name.endswith("-fit")]
    assert len(fits) == 1
    return Report.load(fits[0]), capsys.readouterr().out


def _check_logs_agree_with_report(report: Report, out: str, epochs: int) -> None:
    throughput = report.throughput_samples_per_s
    printed = [float(v) for v in re.findall(r"THROUGHPUT ([0-9.]+) images/s", out)]
    assert len(printed) == epochs
    for value in printed:
        assert value == pytest.approx(throughput, rel=0.01)
    seconds_per_step = report.seconds / report.steps
    bars = _BAR.findall(out)
    assert len(bars) == epochs
    for _, _, value, unit in bars:
        shown = int(value) * _UNIT[unit]
        assert shown >= 50 * _UNIT[unit]  # the integer shown resolves 1%
        assert shown == pytest.approx(seconds_per_step, rel=0.01)


def test_seed_mlp_callback_and_bar_read_the_simulated_clock(tmp_path, capsys):
    report, out = _run(tmp_path, SEED_MLP, capsys)
    _check_logs_agree_with_report(report, out, epochs=3)
    host_seconds, perf_ns = out.split("HOST_PYTHON ")[1].split()[:2]
    assert float(host_seconds) == 0.0 and int(perf_ns) == 0  # host Python: the clock stands still
    assert "CLOCK function" in out  # patched during the run
    assert type(time.time).__name__ == "builtin_function_or_method"  # restored after it
    assert datetime.datetime.__name__ == "datetime" and type(datetime.datetime) is type


def test_pipelined_model_callback_and_bar_read_the_simulated_clock(tmp_path, capsys):
    report, out = _run(tmp_path, PIPELINED, capsys)
    assert report.extra["pipelined"] is True
    _check_logs_agree_with_report(report, out, epochs=2)
    delta_datetime, delta_time, instance = out.split("DATETIME ")[1].split()[:3]
    # the whole fit in datetime.now() and time.time(): the report's simulated seconds
    assert float(delta_time) == pytest.approx(report.seconds, abs=5e-7)  # double rounding
    assert float(delta_datetime) == pytest.approx(report.seconds, abs=2e-6)
    assert instance == "True"


def test_wall_time_leaves_the_cpu_clock(tmp_path, capsys):
    _, out = _run(tmp_path, SEED_MLP, capsys, wall_time=True)
    assert "CLOCK builtin_function_or_method" in out
    # the command line: before or after SCRIPT, as the other run options
    assert _split_options(["train.py", "--wall-time", "--", "--wall-time"]) == (
        {"wall_time": "1"},
        ["train.py", "--wall-time"],
    )
    args = build_parser(("run",)).parse_args(["run", "--wall-time", "train.py"])
    assert args.wall_time is True


@pytest.mark.parametrize("block", [b for b in blocks(DOC) if b.language == "python"])
def test_docs_example_runs(block):
    exec(compile(block.text, str(DOC), "exec"), {"__name__": "docs_example"})
