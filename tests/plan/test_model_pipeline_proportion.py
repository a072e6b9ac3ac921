"""availableMemoryProportion in a user model's pipelines (ipusim/plan/space_model_amp.py): a
reference run per profiled proportion, the proportions between interpolated, and a proportion
whose plans are the default's left out.

The wide model's 4096 x 4096 products plan alike from 0.15 to 0.6 at every micro-batch the
planner tries, so these tests profile 0.05 and 0.6 (0.3 interpolated), where its products at
micro-batches 32 and 64 hold smaller temporaries at 0.05 than at 0.6."""

from __future__ import annotations

import tomllib

import pytest

import ipusim
from ipusim.cost.amp import plan_matmul
from ipusim.cost.amp_problem import AmpTarget
from ipusim.hardware import load_system
from ipusim.plan import space_model_amp
from ipusim.plan.output import best_py, best_toml, sweep_toml
from ipusim.plan.search import measure, simulate
from ipusim.plan.space_model import model_candidates
from tests.plan._candidates import pick

MODEL, SYSTEM, BATCH, WIDTH = "tests.plan._models:wide", "M2000", 256, 4096
#: The proportions profiled here and the one interpolated between them.
LOW, HIGH, MID = 0.05, 0.6, 0.3


@pytest.fixture(scope="module")
def cands():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(space_model_amp, "PROFILED", (LOW, HIGH))
        mp.setattr(space_model_amp, "INTERPOLATED", (MID,))
        return model_candidates({"system": SYSTEM, "model": MODEL}, 4, BATCH, "fp16.16")


def _changes(mb: int) -> bool:
    """Whether the amp planner plans one of a wide layer's three products (forward, weight and
    input gradients) differently at ``LOW`` and ``HIGH`` at micro-batch ``mb``, or the low
    bound caps its temporaries (the lowering holds at most the proportion of a tile)."""
    target = AmpTarget.for_chip(load_system(SYSTEM).ipu, "fp16.16")
    shapes = [(mb, WIDTH, WIDTH), (WIDTH, WIDTH, mb), (mb, WIDTH, WIDTH)]
    for s in shapes:
        low = plan_matmul(*s, target, memory_proportion=LOW)
        if low != plan_matmul(*s, target, memory_proportion=HIGH):
            return True
        if low.temp_bytes > LOW * target.bytes_per_tile:
            return True
    return False


def test_a_proportion_is_searched_where_it_changes_the_layers_plans(cands):
    # pipelines over IPUs (not a one-IPU replica's recomputation stages, all on IPU 0)
    pipelined = [
        c for c in cands if c.args["stages"] > 1 and any(c.args.get("device-mapping", [1]))
    ]
    for mb in sorted({c.args["micro-batch"] for c in pipelined}):
        seen = {c.args["memory-proportion"] for c in pipelined if c.args["micro-batch"] == mb}
        assert seen == ({LOW, MID, HIGH} if _changes(mb) else {HIGH}), mb
    assert any(_changes(c.args["micro-batch"]) for c in pipelined)


@pytest.mark.parametrize("proportion", [LOW, MID, HIGH])
def test_each_proportion_is_estimated_as_the_simulator_runs_it(cands, proportion):
    """The profiled and the interpolated proportions against a run, within the pipelines'
    bounds of tests/plan/test_model_options.py."""
    cand = pick(cands, **{"micro-batch": 64, "memory-proportion": proportion, "stages": 2})
    sim = measure("keras_model", cand.args)
    assert sim["error"] == "" and sim["fits"]
    assert cand.speed == pytest.approx(sim["throughput"], rel=0.13)
    assert cand.ipu_bytes == pytest.approx(sim["ipu_bytes"], rel=0.11)


def test_the_proportions_saving_is_the_simulators(cands):
    """The bytes the low proportion saves over the default, estimated and simulated, for the
    same plan at both (the saving is a few percent of the IPU: the bounds above miss it)."""
    low = pick(cands, **{"micro-batch": 64, "memory-proportion": LOW, "stages": 2})
    args = {**low.args, "memory-proportion": HIGH}
    high = next(c for c in cands if c.args == args)
    saved = high.ipu_bytes - low.ipu_bytes
    sims = [measure("keras_model", c.args)["ipu_bytes"] for c in (high, low)]
    assert saved > 0
    assert saved == pytest.approx(sims[0] - sims[1], rel=0.1)
    # the proportion between them is estimated linearly between them (a run of it: the test
    # above): it saves (HIGH - MID) / (HIGH - LOW) of the low proportion's saving
    mid = next(c for c in cands if c.args == {**low.args, "memory-proportion": MID})
    share = (HIGH - MID) / (HIGH - LOW)
    assert high.ipu_bytes - mid.ipu_bytes == pytest.approx(share * saved, rel=0.01)


def test_the_proportion_reaches_best_py_best_toml_and_the_sweep(cands):
    """A pipelined plan's proportion is in the IPUConfig of best.py (IPU TensorFlow's
    ``matmuls.poplar_options``), best.toml's [args] and the sweep's configurations."""
    low = pick(cands, **{"micro-batch": 64, "memory-proportion": LOW, "stages": 2})
    code = best_py(low.args)
    compile(code, "best.py", "exec")
    assert f"config.matmuls.poplar_options = {{'availableMemoryProportion': '{LOW}'}}" in code
    best = tomllib.loads(best_toml("keras_model", low.args, low.speed))
    assert best["args"]["memory-proportion"] == LOW
    sweep = tomllib.loads(sweep_toml("keras_model", [low.args]))
    assert sweep["configs"][0]["args"]["memory-proportion"] == LOW


def test_the_planners_plans_with_the_proportion_searched_pass_the_memory_check():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(space_model_amp, "PROFILED", (LOW, HIGH))
        mp.setattr(space_model_amp, "INTERPOLATED", (MID,))
        table = ipusim.plan(MODEL, SYSTEM, BATCH, candidates=4, progress=False).table
    fitting = table[table["fits"]]
    assert len(fitting) > 0
    for args in fitting["args"]:
        assert simulate("keras_model", args).memory_fits, args
