"""``ipusim run --plan``'s ``best.toml`` names the script (and the fit) whose model it plans, so
``ipusim validate --folder`` re-runs the script up to that fit in a process that never saw the
model, and gets the planner's throughput; ``--plan-fit N`` plans another fit's model."""

from __future__ import annotations

import csv
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from ipusim.cli import main
from ipusim.errors import ConfigurationError
from ipusim.plan.script import parse_reference, script_model, script_reference
from tests.plan.test_plan_cli import _sweep_reruns_the_fitting_plans
from workloads import keras_model

#: An IPU TensorFlow 2 script with two fits: an auto-named pipelined MLP ("first"), then a
#: wider one ("second"). Every time it builds a model it appends the model's name to BUILT.
SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 2
cfg.configure_ipu_system()


def build(name, width):
    with open(BUILT, "a") as f:
        f.write(name + " " + " ".join(sys.argv[1:]) + "\\n")
    inputs = tf.keras.Input((width,))
    x = inputs
    for _ in range(3):
        x = tf.keras.layers.Dense(64, activation="relu")(x)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(10)(x), name=name)
    if COMPILE:
        model.compile(
            optimizer="adam",
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=4,
        )
    return model


def data(width):
    x, y = np.zeros((64, width), np.float32), np.zeros(64, np.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True).repeat()


with ipu.ipu_strategy.IPUStrategy().scope():
    first = build("first", 32)
    assignments = first.get_pipeline_stage_assignment()
    for i, assignment in enumerate(assignments):
        assignment.pipeline_stage = 0 if i < 2 else 1
    first.set_pipeline_stage_assignment(assignments)
    first.set_pipelining_options(gradient_accumulation_steps_per_replica=4)
    first.fit(data(32), steps_per_epoch=8, verbose=0)
    second = build("second", 48)
    second.fit(data(48), steps_per_epoch=8, verbose=0)
"""


def _script(tmp_path, compile_=True):
    built = tmp_path / "built.txt"
    path = tmp_path / "train.py"
    path.write_text(f"BUILT = {str(built)!r}\nCOMPILE = {compile_}\n{SCRIPT}")
    return path, built


def test_validate_reruns_the_best_plan_of_run_plan_in_a_fresh_registry(
    tmp_path, capsys, monkeypatch
):
    path, built = _script(tmp_path)
    out = tmp_path / "plan"
    argv = ["run", "--plan", "--system", "M2000", "--global-batch", "16", "--candidates", "3"]
    assert main([*argv, "-o", str(out), str(path), "--quick"]) == 0
    assert "planning the model 'first' of fit() number 1" in capsys.readouterr().err
    best = tomllib.loads((out / "best.toml").read_text())
    assert best["args"]["model"] == f"script:{path.resolve()} --quick"
    assert "fit() number 1 of" in best["notes"]
    assert built.read_text() == "first --quick\n"  # captured once, at its first fit
    # A new process knows no model by name: the row must rebuild it from the script alone.
    monkeypatch.setattr(keras_model, "_BUILDERS", {})
    table = tmp_path / "validate.json"
    assert main(["validate", "--folder", str(out), "--no-crossval", "--output", str(table)]) == 0
    assert built.read_text() == "first --quick\nfirst --quick\n"  # the script ran again
    (row,) = json.loads(table.read_text())["rows"]
    assert row["id"] == "PLAN"
    assert row["predicted"] == pytest.approx(best["measured"], rel=1e-9)
    monkeypatch.setattr(keras_model, "_BUILDERS", {})  # the study re-runs every fitting plan
    with open(out / "plans.csv") as f:
        _sweep_reruns_the_fitting_plans(out, list(csv.DictReader(f)))


def test_plan_fit_plans_the_model_of_a_later_fit(tmp_path, capsys):
    path, built = _script(tmp_path)
    out = tmp_path / "plan"
    argv = ["run", "--plan", "--plan-fit", "2", "--system", "M2000", "--global-batch", "16"]
    assert main([*argv, "--candidates", "1", "-o", str(out), str(path)]) == 0
    assert "planning the model 'second' of fit() number 2" in capsys.readouterr().err
    assert built.read_text() == "first \nsecond \n"  # the first fit ran; nothing after the second
    best = tomllib.loads((out / "best.toml").read_text())
    assert best["args"]["model"] == f"script@2:{path.resolve()}"
    assert "# for the model of fit() number 2 of" in (out / "best.py").read_text()


def test_a_fit_the_script_never_reaches_is_refused_with_the_fits_it_has(tmp_path, capsys):
    path, _ = _script(tmp_path)
    argv = ["run", "--plan", "--plan-fit", "3", "--system", "M2000", "--global-batch", "16"]
    assert main([*argv, "-o", str(tmp_path / "plan"), str(path)]) == 2
    assert "ended after 2 fit() call(s)" in capsys.readouterr().err
    with pytest.raises(ConfigurationError, match="positive int"):
        script_model(path, fit=0)


def test_a_script_fitting_an_uncompiled_model_is_told_to_compile_it(tmp_path):
    path, _ = _script(tmp_path, compile_=False)
    with pytest.raises(ConfigurationError, match=r"not compiled with a loss.*model\.compile"):
        script_model(path)


def test_script_references_round_trip_and_leave_module_functions_alone(tmp_path):
    path = tmp_path / "my dir" / "train.py"
    ref = script_reference(path, ["--epochs", "3", "a b"], fit=4)
    assert ref.startswith("script@4:")
    assert parse_reference(ref) == (str(path.resolve()), ["--epochs", "3", "a b"], 4, "fit")
    assert parse_reference(script_reference(path)) == (str(path.resolve()), [], 1, "fit")
    predict = script_reference(path, ["a b"], fit=2, call="predict")
    assert predict.startswith("script@predict2:")
    assert parse_reference(predict) == (str(path.resolve()), ["a b"], 2, "predict")
    assert parse_reference(script_reference(path, call="evaluate")).call == "evaluate"
    assert parse_reference("script:build") is None  # a module named script, its function
    assert parse_reference("tests.plan._models:mlp") is None
    for bad in ("script: ", "script:'train.py"):
        with pytest.raises(ConfigurationError, match="script:PATH ARG"):
            parse_reference(bad)


def test_the_docs_script_example_runs_as_shown(tmp_path, monkeypatch, capsys):
    """docs/planning.md's "The model of a script": its train.py, then its commands in order,
    each (as in a new process) knowing no model by name."""
    text = (Path(__file__).parents[2] / "docs" / "planning.md").read_text(encoding="utf-8")
    section = text.split("### The model of a script", 1)[1].split("\n## ", 1)[0]
    script = re.search(r"```text\n(.*?)```", section, re.S)
    prose = re.sub(r"```.*?```", "", section, flags=re.S)
    spans = re.findall(r"`([^`]+)`", prose.replace("\n", " "))
    commands = [
        c for c in spans if c.startswith("ipusim ") and ("train.py" in c or "--folder" in c)
    ]
    assert script is not None and [c.split()[1] for c in commands] == ["run", "validate"]
    (tmp_path / "train.py").write_text(script.group(1))
    monkeypatch.chdir(tmp_path)
    for command in commands:
        monkeypatch.setattr(keras_model, "_BUILDERS", {})
        assert main(shlex.split(command)[1:]) == 0, command
    best = tomllib.loads((tmp_path / "plan" / "best.toml").read_text())
    assert best["args"]["model"] == f"script:{(tmp_path / 'train.py').resolve()}"
    assert "+0.0%" in capsys.readouterr().out


def test_best_toml_says_how_its_model_is_rebuilt(tmp_path):
    from ipusim.plan.output import best_toml

    def notes(model):
        row = tomllib.loads(best_toml("keras_model", {"model": model}, 1.0))
        return row.get("notes", "")

    assert notes("tests.plan._models:mlp") == ""  # importable anywhere: nothing to say
    assert "as module:function" in notes("plan-7f3a")  # a process-local name
    script = script_reference(tmp_path / "train.py", ["--epochs", "2"], fit=3)
    assert notes(script).startswith(f"the model of fit() number 3 of {tmp_path.resolve()}")
    assert "train.py --epochs 2" in notes(script)


def test_ipusim_plan_takes_a_script_reference(tmp_path):
    import ipusim

    path, built = _script(tmp_path)
    reference = script_reference(path, fit=2)
    result = ipusim.plan(reference, "M2000", 16, candidates=1, progress=False)
    assert result.best["model"] == reference
    assert built.read_text() == "first \nsecond \n"  # run once, up to its second fit
