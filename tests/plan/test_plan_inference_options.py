"""Inference estimates against the simulator, one new dimension at a time: the schedule
(Grouped, Interleaved, Sequential), I/O tiles, the device iterations (``steps_per_execution``)
and ``evaluate`` beside ``predict``; and a script that only predicts (or evaluates), planned by
``ipusim run --plan --inference`` and re-run from its ``best.toml`` by ``ipusim validate``."""

from __future__ import annotations

import json
import tomllib

import pytest

from ipusim.cli import main
from ipusim.plan.inference import inference_candidates
from ipusim.plan.search import _what, measure
from workloads import keras_model

SYSTEM, BATCH = "M2000", 16
#: How far an inference estimate may be from the simulator's throughput (E: the estimate runs
#: the lowering's own time steps; exchange and syncs are taken per time step from one run).
TOLERANCE = 0.05


def _space(call: bool | str) -> list:
    workload, args = _what("tests.plan._models:mlp", {})
    return inference_candidates(
        workload,
        {"system": SYSTEM, **args},
        4,
        BATCH,
        "fp16.16",
        "predict" if call is True else call,
        samples=8 * BATCH,
    )


def _pick(cands: list, **want) -> list:
    """The candidates whose arguments are ``want`` (``None``: the argument left out)."""
    return [c for c in cands if all(c.args.get(k) == v for k, v in want.items())]


@pytest.mark.parametrize("call", [True, "evaluate"])
@pytest.mark.parametrize(
    "want",
    [
        {"stages": 1, "io-tiles": 32, "steps-per-execution": None},  # the dataset in one run
        {"stages": 1, "io-tiles": 32, "steps-per-execution": 2},
        {"stages": 2, "schedule": None, "io-tiles": 32, "steps-per-execution": 2},
        {"stages": 2, "schedule": "interleaved", "steps-per-execution": 4},
        {"stages": 2, "schedule": "sequential", "steps-per-execution": None},
        {"stages": 4, "schedule": "sequential", "steps-per-execution": 1},
        {"stages": 4, "schedule": None, "io-tiles": 32, "steps-per-execution": 4},
    ],
)
def test_inference_estimates_follow_the_simulator(call, want):
    cands = _pick(_space(call), **want)
    assert cands  # the space has such plans
    for cand in cands:
        out = measure("keras_model", cand.args)
        assert out["fits"] and cand.memory < 1.0
        assert cand.speed == pytest.approx(out["throughput"], rel=TOLERANCE)


def test_each_option_changes_throughput_as_the_simulator_says():
    """From a 2-stage Grouped plan with I/O tiles that runs the dataset in one execution, each
    option's change of throughput (its sign and size) is the simulator's. Interleaved runs
    inference in Grouped's time steps but without the infeed overlapped (ipusim overlaps it
    for Grouped only), so it shows what the I/O tiles give."""
    cands = _space(True)
    base = {"stages": 2, "schedule": None, "io-tiles": 32, "steps-per-execution": None}
    plain = _pick(cands, **base)[0]
    measured = measure("keras_model", plain.args)["throughput"]
    changes = (
        {"schedule": "sequential", "io-tiles": None},
        {"schedule": "interleaved", "io-tiles": None},
        {"steps-per-execution": 2},
    )
    for change in changes:
        other = _pick(cands, **{**base, **change}, split=plain.args["split"])[0]
        simulated = measure("keras_model", other.args)["throughput"] / measured
        assert other.speed / plain.speed == pytest.approx(simulated, rel=0.02)
        assert (other.speed > plain.speed) == (simulated > 1.0)


#: An IPU TensorFlow 2 script that never fits: it evaluates, then predicts 128 samples in
#: batches of 4, then writes MARKER.
SCRIPT = """
import pathlib
import numpy as np
import tensorflow as tf
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()
with ipu.ipu_strategy.IPUStrategy().scope():
    inputs = tf.keras.Input((32,))
    x = inputs
    for i in range(3):
        x = tf.keras.layers.Dense(64, activation="relu")(x)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(10)(x))
    model.compile(
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=4,
    )
    x, y = np.zeros((128, 32), np.float32), np.zeros(128, np.int32)
    labelled = tf.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)
    model.evaluate(labelled.take(8))
    model.predict(tf.data.Dataset.from_tensor_slices(x).batch(4, drop_remainder=True))
pathlib.Path(MARKER).write_text("predicted")
"""


@pytest.mark.parametrize(
    ("flag", "call", "samples"), [("--inference", "predict", 128), ("--evaluate", "evaluate", 32)]
)
def test_a_script_that_never_fits_is_planned_from_its_inference_call_and_reruns(
    tmp_path, capsys, monkeypatch, flag, call, samples
):
    marker = tmp_path / "predicted.txt"
    script = tmp_path / "serve.py"
    script.write_text(f"MARKER = {str(marker)!r}\n{SCRIPT}")
    out = tmp_path / "plan"
    argv = ["run", "--plan", flag, "--system", SYSTEM, "--global-batch", str(BATCH)]
    assert main([*argv, "--candidates", "3", "-o", str(out), str(script)]) == 0
    assert not marker.exists()  # the script stopped at that call
    assert f"of {call}() number 1" in capsys.readouterr().err
    best = tomllib.loads((out / "best.toml").read_text())
    args = best["args"]
    assert args["model"] == f"script@{call}:{script.resolve()}"
    assert args["inference"] == (True if call == "predict" else "evaluate")
    # the call's dataset: its samples in device steps of the global batch
    assert args["steps"] == samples // BATCH
    assert samples // BATCH % args.get("steps-per-execution", args["steps"]) == 0
    assert f"model.{call}(dataset" in (out / "best.py").read_text()
    # A new process knows no model by name: the row re-runs the script up to that call.
    monkeypatch.setattr(keras_model, "_BUILDERS", {})
    table = tmp_path / "validate.json"
    assert main(["validate", "--folder", str(out), "--no-crossval", "--output", str(table)]) == 0
    (row,) = json.loads(table.read_text())["rows"]
    assert row["predicted"] == pytest.approx(best["measured"], rel=1e-9)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("workload", "args"),
    [
        ("bert", {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}),
        ("resnet50", {"image-size": 32}),
    ],
)
def test_bert_and_resnet_inference_estimates_follow_the_simulator(workload, args):
    cands = inference_candidates(workload, {"system": SYSTEM, **args}, 4, BATCH, "fp16.16")
    # the fastest estimate, and the fastest of each other schedule and iteration count
    picked = {(c.args.get("schedule"), c.args.get("steps-per-execution")): c for c in cands[::-1]}
    for cand in sorted(picked.values(), key=lambda c: -c.speed)[:4]:
        out = measure(workload, cand.args)
        assert out["fits"]
        assert cand.speed == pytest.approx(out["throughput"], rel=TOLERANCE)


@pytest.mark.parametrize("n", [10, 1000])
def test_an_executions_seconds_follow_its_schedules_time_steps(n):
    """Stages of 1, 3, 2 and 0.5 s, 0.2 s of infeed on the first and 0.7 s of outfeed on the
    last, 0.1 s of syncs per time step: Grouped runs n + 3 steps (the first 1.2 s, the second
    stage's 3 s from step 1 to step n, then 2 s and 1.2 s as the pipeline drains), Interleaved
    the same in inference, Sequential every stage one after the other n times (hand-computed)."""
    from ipusim.plan.inference import _execution

    fwd, feeds = (1.0, 3.0, 2.0, 0.5), (0.2, 0.7)
    grouped = 1.2 + 3.0 * n + 2.0 + 1.2 + 0.1 * (n + 3)
    assert _execution("grouped", fwd, n, 0.1, feeds) == pytest.approx(grouped, rel=1e-12)
    assert _execution("interleaved", fwd, n, 0.1, feeds) == pytest.approx(grouped, rel=1e-12)
    sequential = n * (1.2 + 3.0 + 2.0 + 1.2 + 4 * 0.1)
    assert _execution("sequential", fwd, n, 0.1, feeds) == pytest.approx(sequential, rel=1e-12)
