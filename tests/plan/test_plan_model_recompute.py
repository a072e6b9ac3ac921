"""Recomputation checkpoints of a user's Keras model (ipusim/plan/space_model_recompute.py):
the planner's best against every one-IPU configuration simulated one by one, each checkpoint
plan's estimate against the simulator, best.py of a checkpoint plan run as an IPU TensorFlow 2
script, and the measurement that keeps RecomputeAndBackpropagateInterleaved out of the
search."""

from __future__ import annotations

import itertools
import json
import math
import tomllib

import pytest

import ipusim
from ipusim.compat.runner import run_script
from ipusim.plan.output import best_py
from ipusim.plan.search import measure, simulate
from ipusim.plan.space_model import layer_names, model_candidates
from tests.plan.test_model_options import _script

#: One GC200 (no Streaming Memory: Adam's state stays on chip) and a global batch that needs
#: gradient accumulation at every micro-batch the planner tries (up to 64).
WIDER, SYSTEM, BATCH = "tests.plan._models:wider", "IPU", 128
PROPORTIONS = ({}, {"memory-proportion": 0.15}, {"memory-proportion": 0.3})


def _exhaustive() -> list[dict]:
    """Every configuration of one IPU: every micro-batch dividing the batch (up to 64), I/O
    tiles or not without checkpoints; 2, 3 or 4 recomputation stages on IPU 0 (Sequential)
    at every cut of the layers; every proportion of :data:`PROPORTIONS`."""
    names = layer_names(WIDER)
    out = []
    for mb in [m for m in range(1, 65) if BATCH % m == 0]:
        acc = BATCH // mb
        base = {"system": SYSTEM, "model": WIDER, "precision": "fp16.16", "replicas": 1}
        base |= {"micro-batch": mb, "accumulation": acc, "steps": acc * max(1, 16 // acc)}
        base |= {"stages": 1, "offload": "off"}
        settings = [{}, {"io-tiles": 32}]
        for stages in (2, 3, 4):
            for cut in itertools.combinations(range(1, len(names)), stages - 1):
                settings.append(
                    {"stages": stages, "split": [names[c - 1] for c in cut]}
                    | {"device-mapping": [0] * stages, "schedule": "sequential"}
                    | {"recompute": True}
                )
        out += [base | s | p for s in settings for p in PROPORTIONS]
    return out


def test_the_planners_best_is_the_best_one_ipu_configuration(tmp_path):
    result = ipusim.plan(WIDER, SYSTEM, BATCH, budget_s=math.inf, progress=False, output=tmp_path)
    space = _exhaustive()
    measured = [measure("keras_model", args) for args in space]
    # out of memory: refused by the memory plan (an error) or over the budget
    fitting = [
        (m["throughput"], a) for m, a in zip(measured, space) if not m["error"] and m["fits"]
    ]
    top, top_args = max(fitting, key=lambda f: f[0])
    assert result.table["fits"].iloc[0]
    assert result.table["throughput"].iloc[0] == pytest.approx(top, rel=1e-9)
    # Recomputation checkpoints are what makes this model fit: no plan without them does
    assert all(a["stages"] > 1 for _, a in fitting) and top_args["stages"] > 1
    assert result.table["args"].iloc[0]["device-mapping"] == [0] * top_args["stages"]
    # the checkpoints reach the table's text, best.toml and best.py
    gives = f"recomputes activations between {top_args['stages'] - 1} checkpoint(s) on one IPU"
    assert gives in result.table["gives_up"].iloc[0]
    best = tomllib.loads((tmp_path / "best.toml").read_text())["args"]
    assert best == dict(result.table["args"].iloc[0])
    assert f"device_mapping={best['device-mapping']}" in (tmp_path / "best.py").read_text()


@pytest.fixture(scope="module")
def checkpoint_plans():
    cands = model_candidates({"system": SYSTEM, "model": WIDER}, 1, BATCH, "fp16.16")
    return [c for c in cands if c.args["stages"] > 1]


def test_checkpoint_plans_are_estimated_as_the_simulator_runs_them(checkpoint_plans):
    """One plan per stage count and micro-batch (1 to 64: profiled at 4, 16 and 64, the others
    interpolated piecewise) and per optimizer-state setting. Bounds: the worst errors measured
    over all 168 plans at the profiled proportions, rounded up (throughput 0.8% low at
    micro-batch 8, bytes within 0.6%; before the step was split into costs per micro-batch, per
    update and per run, throughput was up to 3.1x high at 32 with the state on chip)."""
    assert {c.args["stages"] for c in checkpoint_plans} == {2, 3}
    picked: dict[tuple, object] = {}
    for c in checkpoint_plans:
        if c.args.get("memory-proportion") != 0.3:  # 0.3 is interpolated, not profiled
            key = (c.args["stages"], c.args["micro-batch"], c.args.get("offload"))
            picked.setdefault(key, c)
    assert {k[1] for k in picked} == {1, 2, 4, 8, 16, 32, 64}
    for cand in picked.values():
        sim = measure("keras_model", cand.args)
        assert sim["error"] == ""
        assert cand.speed == pytest.approx(sim["throughput"], rel=0.015), cand.args
        assert cand.ipu_bytes == pytest.approx(sim["ipu_bytes"], rel=0.01), cand.args


def test_best_py_of_a_checkpoint_plan_runs_to_the_planners_throughput(checkpoint_plans, tmp_path):
    args = max((c for c in checkpoint_plans if c.memory <= 1.0), key=lambda c: c.speed).args
    code = best_py(args)
    assert "config.allow_recompute = True" in code
    assert f"device_mapping={[0] * args['stages']}" in code
    assert "PipelineSchedule.Sequential" in code
    path, out = tmp_path / "best_script.py", tmp_path / "throughput.json"
    path.write_text(_script(args, str(out)).replace("import wide", "import wider as wide"))
    result = run_script(path, output=tmp_path / "run", system=SYSTEM, quiet=True, reports=False)
    assert result.exit_code == 0
    planned = measure("keras_model", args)["throughput"]
    assert json.loads(out.read_text()) == pytest.approx(planned, rel=1e-9)


@pytest.mark.parametrize("model", ["tests.plan._models:mlp", "tests.plan._models:wide"])
def test_the_interleaved_recomputation_mode_is_no_better_here(model):
    """Why the search leaves RecomputeAndBackpropagateInterleaved out for Grouped pipelines
    (space_model_recompute's docstring): on the test models it runs as fast as Auto's
    RecomputeThenBackpropagate and takes no less memory."""
    names = layer_names(model)
    args = {"system": "M2000", "model": model, "precision": "fp16.16", "replicas": 2}
    args |= {"micro-batch": 2, "accumulation": 4, "steps": 16, "offload": "off", "stages": 2}
    args |= {"split": [names[1]], "schedule": "grouped", "recompute": True}
    auto = simulate("keras_model", args)
    interleaved = simulate("keras_model", args | {"recomputation-mode": "interleaved"})
    assert interleaved.predicted == pytest.approx(auto.predicted, rel=1e-9)
    assert interleaved.memory_used >= auto.memory_used


@pytest.mark.parametrize("schedule", ["grouped", "sequential"])
def test_checkpoint_stages_inside_a_pipeline_are_no_better_here(schedule):
    """Why the search leaves several contiguous stages on one IPU of a multi-IPU pipeline out
    (space_model_recompute's docstring): one stage per layer on 2 IPUs (``[0, 0, 1, 1]``, a
    recomputation checkpoint between the two stages of each IPU) runs slower than the same
    layers as one stage per IPU and takes no less memory."""
    model = "tests.plan._models:mlp"
    names = layer_names(model)
    args = {"system": "M2000", "model": model, "precision": "fp16.16", "replicas": 2}
    args |= {"micro-batch": 2, "accumulation": 8, "steps": 16, "offload": "off"}
    args |= {"schedule": schedule, "recompute": True}
    pair = simulate("keras_model", args | {"stages": 2, "split": [names[1]]})
    cut = {"stages": 4, "split": names[:3], "device-mapping": [0, 0, 1, 1]}
    checkpoints = simulate("keras_model", args | cut)
    assert checkpoints.predicted < pair.predicted  # samples/s
    assert checkpoints.ipu_bytes >= pair.ipu_bytes
