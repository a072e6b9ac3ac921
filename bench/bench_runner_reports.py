"""``ipusim run`` of a program calling ``strategy.run`` 10,000 times: what its reports cost.

The program (:data:`PROGRAM`) trains a small MLP with a custom step function called from a Python
loop, one ``strategy.run`` per batch of 32, as IPU TensorFlow 2 custom loops often do. It is run
in-process with :func:`ipusim.compat.runner.run_script` twice per repeat, interleaved: writing
its reports (``reports=True``: one joined report per compiled program, written at the end) and
simulating only (``reports=False``). Targets (issue 23): with reports < 1.3x the time without,
one report folder, under 5 MB.

Run: ``python bench/bench_runner_reports.py [--calls N] [--repeats N]`` (writes
bench/results/runner_reports.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import markdown_table  # noqa: E402

#: The IPU TensorFlow 2 program: ``python program.py CALLS``.
PROGRAM = """
import sys

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu

calls = int(sys.argv[1])
config = ipu.config.IPUConfig()
config.auto_select_ipus = 1
config.configure_ipu_system()
strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)])
    model.build((None, 32))
    optimizer = keras.optimizers.SGD(0.01)

    @tf.function(experimental_compile=True)
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 32)).astype(np.float32)
    y = rng.standard_normal((32, 10)).astype(np.float32)
    for _ in range(calls):
        loss = strategy.run(step, args=(x, y))
print("loss", float(np.asarray(loss)))
"""


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _run(script: Path, calls: int, output: Path, reports: bool) -> tuple[float, int, int]:
    """Wall seconds of one in-process run, report folders written, their bytes."""
    from ipusim.compat.runner import run_script
    from ipusim.config import reset_ipu_configuration

    reset_ipu_configuration()
    start = time.perf_counter()
    result = run_script(script, [str(calls)], output=output, quiet=True, reports=reports)
    wall = time.perf_counter() - start
    return wall, len(result.reports), _folder_bytes(output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "program.py"
        script.write_text(PROGRAM)
        _run(script, 20, Path(tmp) / "warmup", True)  # kernels compiled, modules imported
        walls: dict[bool, list[float]] = {True: [], False: []}
        folders, size = 0, 0
        for repeat in range(options.repeats):
            for reports in (False, True):
                output = Path(tmp) / f"out-{repeat}-{reports}"
                wall, count, size_now = _run(script, options.calls, output, reports)
                walls[reports].append(wall)
                if reports:
                    folders, size = count, size_now
    with_reports = statistics.median(walls[True])
    without = statistics.median(walls[False])
    result = {
        "calls": options.calls,
        "repeats": options.repeats,
        "wall_s_with_reports": walls[True],
        "wall_s_without_reports": walls[False],
        "median_with_reports_s": with_reports,
        "median_without_reports_s": without,
        "ratio": with_reports / without,
        "report_folders": folders,
        "report_bytes": size,
    }
    print(
        markdown_table(
            ["calls", "without reports (s)", "with reports (s)", "ratio", "folders", "MB"],
            [
                [
                    options.calls,
                    f"{without:.2f}",
                    f"{with_reports:.2f}",
                    f"{with_reports / without:.3f}",
                    folders,
                    f"{size / 1e6:.2f}",
                ]
            ],
        )
    )
    out = Path(__file__).parent / "results" / "runner_reports.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
