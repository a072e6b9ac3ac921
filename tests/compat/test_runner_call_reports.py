"""``ipusim run`` keeps one report per compiled program: every call of a step function (or every
``fit`` of one model) on one timeline, one row per call, samples counted from the batch."""

from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest

from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration
from ipusim.trace import Report

CALLS, BATCH, FEATURES = 7, 8, 4
RECORD_BUDGET = 150

SCRIPT = textwrap.dedent(
    f"""
    import json, sys, time

    import numpy as np
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.python import ipu

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipusim.trace_records = {RECORD_BUDGET}
    cfg.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(6, activation="relu"), keras.layers.Dense(2)])
        model.build((None, {FEATURES}))
        opt = keras.optimizers.SGD(0.01)

        @tf.function(experimental_compile=True)
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        @tf.function(experimental_compile=True)
        def predict_step(x):
            return model(x)

        x = np.ones(({BATCH}, {FEATURES}), np.float32)
        y = np.zeros(({BATCH}, 2), np.float32)
        one_call = []
        start_ns = time.perf_counter_ns()
        for i in range({CALLS}):
            strategy.run(train_step, args=(x, y))
            report = strategy.last_simulation
            one_call.append([report.seconds, len(report.trace), report.trace.detail.records])
        loop_ns = time.perf_counter_ns() - start_ns
        strategy.run(train_step, args=(x[:4], y[:4]))  # another batch: another program
        strategy.run(predict_step, args=(x[:3],))
        with open(sys.argv[1], "w") as out:
            json.dump({{"calls": one_call, "loop_ns": loop_ns}}, out)

        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
        xs = np.ones((16, {FEATURES}), np.float32)
        ys = np.zeros((16, 2), np.float32)
        model.fit(xs, ys, batch_size=4, epochs=1, verbose=0)
        model.fit(xs, ys, batch_size=4, epochs=2, verbose=0)
    """
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calls")
    script = folder / "calls_script.py"
    script.write_text(SCRIPT)
    reset_ipu_configuration()
    try:
        result = run_script(
            script, [str(folder / "one_call.json")], output=folder / "out", quiet=True
        )
    finally:
        reset_ipu_configuration()
    written = json.loads((folder / "one_call.json").read_text())
    return result, written["calls"], written["loop_ns"]


def test_one_report_per_program_in_the_order_they_first_ran(run):
    result, _, _ = run
    names = ["01-function", "02-function", "03-function", "04-fit"]
    assert [p.name for p in result.reports] == names
    # nothing else: no per-call folders, no temporary folders left
    assert sorted(p.name for p in result.output.iterdir()) == names


def test_calls_table_has_one_row_per_call_end_to_end(run):
    result, one_call, _ = run
    table = pd.read_csv(result.reports[0] / "calls.csv")
    assert list(table["call"]) == list(range(1, CALLS + 1))
    seconds = [s for s, _, _ in one_call]
    assert table["seconds"].to_numpy() == pytest.approx(seconds, rel=1e-9)
    ends = pd.Series(seconds).cumsum().to_numpy()
    assert table["end_s"].to_numpy() == pytest.approx(ends, rel=1e-9)
    assert table["start_s"].iloc[0] == 0.0
    assert table["start_s"].iloc[1:].to_numpy() == pytest.approx(ends[:-1], rel=1e-9)
    # strategy.run(step, args=(x, y)) with x of 8 rows: 8 samples per call, not 1
    assert list(table["samples"]) == [BATCH] * CALLS
    assert list(table["steps"]) == [1] * CALLS


def test_joined_report_figures_are_the_sums_over_the_calls(run):
    result, one_call, _ = run
    report = Report.load(result.reports[0])
    assert report.samples == CALLS * BATCH
    assert report.steps == CALLS
    assert report.seconds == pytest.approx(sum(s for s, _, _ in one_call), rel=1e-9)
    assert report.extra["calls"] == CALLS and report.extra["executions"] == CALLS
    detail = report.trace.detail
    assert detail.executions == CALLS
    assert detail.records == sum(r for _, _, r in one_call)
    # the first calls are kept while their records stay within trace_records
    kept_records = [k for _, k, _ in one_call]
    kept = 1
    while kept < CALLS and sum(kept_records[: kept + 1]) <= RECORD_BUDGET:
        kept += 1
    assert 1 <= kept < CALLS  # the budget really cuts the series
    assert detail.kept_executions == kept
    assert len(report.trace) == sum(kept_records[:kept])
    assert report.trace.execution_end_ps[-1] == report.end_ps
    smaller = Report.load(result.reports[1])
    assert smaller.kind == "train" and smaller.samples == 4 and smaller.steps == 1
    other = Report.load(result.reports[2])
    assert other.kind == "predict" and other.samples == 3  # the other function: its batch


def test_fits_of_one_model_join_one_report(run):
    result, _, _ = run
    report = Report.load(result.reports[3])
    table = pd.read_csv(result.reports[3] / "calls.csv")
    # 16 samples / batch 4 = 4 steps per epoch, 2 executions of 2 steps; fits of 1 and 2 epochs
    assert list(table["steps"]) == [4, 8]
    assert list(table["executions"]) == [2, 4]
    assert list(table["samples"]) == [16, 32]
    assert report.steps == 12 and report.samples == 48
    assert report.extra["calls"] == 2


def test_the_scripts_clock_reads_the_joined_timeline(run):
    result, _, loop_ns = run
    table = pd.read_csv(result.reports[0] / "calls.csv")
    # perf_counter_ns around the loop of calls: the simulated seconds of the calls, no host time
    assert loop_ns / 1e9 == pytest.approx(table["end_s"].iloc[-1], abs=1e-9 * CALLS)
