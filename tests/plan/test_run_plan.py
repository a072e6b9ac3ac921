"""``ipusim run --plan SCRIPT``: the script stops at its first fit and its model is planned."""

from __future__ import annotations

import csv

import pytest

from ipusim.cli import main
from ipusim.errors import ConfigurationError

SCRIPT = """
import pathlib
import numpy as np
import tensorflow as tf
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 2
cfg.configure_ipu_system()
with ipu.ipu_strategy.IPUStrategy().scope():
    inputs = tf.keras.Input((32,))
    x = inputs
    for i in range(3):
        x = tf.keras.layers.Dense(64, activation="relu")(x)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(10)(x))
    assignments = model.get_pipeline_stage_assignment()
    for i, assignment in enumerate(assignments):
        assignment.pipeline_stage = 0 if i < 2 else 1
    model.set_pipeline_stage_assignment(assignments)
    model.set_pipelining_options(gradient_accumulation_steps_per_replica=4)
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=4,
    )
    data = tf.data.Dataset.from_tensor_slices(
        (np.zeros((64, 32), np.float32), np.zeros(64, np.int32))
    )
    model.fit(data.batch(4, drop_remainder=True).repeat(), steps_per_epoch=8)
pathlib.Path(MARKER).write_text("trained")
"""


def test_run_plan_plans_the_scripts_model_without_training_it(tmp_path, capsys):
    marker = tmp_path / "trained.txt"
    script = tmp_path / "train.py"
    script.write_text(f"MARKER = {str(marker)!r}\n{SCRIPT}")
    out = tmp_path / "plan"
    argv = ["run", "--plan", "--system", "M2000", "--global-batch", "16", "--candidates", "3"]
    assert main([*argv, "-o", str(out), str(script)]) == 0
    assert not marker.exists()  # the script stopped at fit
    with open(out / "plans.csv") as f:
        table = list(csv.DictReader(f))
    assert 1 <= len(table) <= 3 and table[0]["fits"] == "True"
    for row in table:  # every plan spends the global batch asked for
        assert int(row["micro_batch"]) * int(row["accumulation"]) * int(row["replicas"]) == 16
    assert "candidates estimated" in capsys.readouterr().out


def test_run_plan_of_a_script_without_fit_says_so(tmp_path, capsys):
    script = tmp_path / "nothing.py"
    script.write_text("print('no model here')\n")
    argv = ["run", "--plan", "--system", "M2000", "--global-batch", "16"]
    assert main([*argv, "-o", str(tmp_path / "plan"), str(script)]) == 2
    assert "ended without calling fit()" in capsys.readouterr().err
    assert not (tmp_path / "plan").exists()


def test_the_planner_says_what_it_needs():
    from ipusim.plan.script import script_model

    with pytest.raises(ConfigurationError, match="without calling fit"):
        script_model(__file__.replace("test_run_plan.py", "_models.py"))
