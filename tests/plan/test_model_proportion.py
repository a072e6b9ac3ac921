"""availableMemoryProportion in a user model's search: the interpolated proportion's estimate
against the simulator, and an exhaustive simulation of a tiny model's space agreeing with the
planner's best."""

from __future__ import annotations

import pytest

from ipusim.plan.search import measure
from ipusim.plan.space_model import model_candidates
from ipusim.plan.space_resnet import EXTRA_PROPORTIONS, MEMORY_PROPORTIONS

MODEL, SYSTEM, BATCH = "tests.plan._models:mlp", "M2000", 8


@pytest.fixture(scope="module")
def cands():
    return model_candidates({"system": SYSTEM, "model": MODEL}, 1, BATCH, "fp16.16")


def test_every_proportion_is_searched(cands):
    seen = {c.args.get("memory-proportion") for c in cands}
    assert seen == {*MEMORY_PROPORTIONS, *EXTRA_PROPORTIONS}


def test_interpolated_proportion_is_estimated_as_the_simulator_runs_it(cands):
    """The proportion between the profiled ones (never run while planning) against a run."""
    cand = next(c for c in cands if c.args["memory-proportion"] in EXTRA_PROPORTIONS)
    sim = measure("keras_model", cand.args)
    assert sim["error"] == "" and sim["fits"]
    assert cand.speed == pytest.approx(sim["throughput"], rel=0.1)
    assert cand.ipu_bytes == pytest.approx(sim["ipu_bytes"], rel=0.1)


def test_exhaustive_simulation_agrees_with_the_planners_best(cands):
    """Simulate every candidate (all proportions, micro-batches, options): the simulator's
    fastest is within 5% of the throughput of the planner's first choice, simulated."""
    sims = [measure("keras_model", c.args) for c in cands]
    fastest = max(s["throughput"] for s in sims if s["fits"] and s["error"] == "")
    assert sims[0]["fits"] and sims[0]["throughput"] >= 0.95 * fastest
