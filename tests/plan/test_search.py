"""The planner on a small BERT: every returned plan fits and runs, and its best re-runs as a
validation row; on a small ResNet-50 an exhaustive search (every candidate simulated) finds the
same best throughput. (tests/plan/test_profile.py searches a small BERT's whole space.)"""

from __future__ import annotations

import pytest

from ipusim.errors import ConfigurationError
from ipusim.plan.search import plan, simulate
from validation.rows import load_rows
from validation.run import run_row

MODEL = {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}
SYSTEM, BATCH = "M2000", 64


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan")
    out = plan("bert", SYSTEM, BATCH, MODEL, candidates=4, output=folder, progress=False)
    return out, folder


def test_every_returned_plan_fits_and_runs(result):
    out, folder = result
    fitting = out.table[out.table["fits"]]
    assert len(fitting) >= 1
    assert (fitting["throughput"] > 0).all()
    assert (fitting["memory_used"] <= 1.0).all()
    # The best plan written as a validation row re-runs through validation.run and fits.
    (row,) = load_rows(folder)
    again = run_row(row)
    assert again.memory_fits
    assert again.predicted == pytest.approx(fitting["throughput"].iloc[0], rel=1e-9)
    assert row.args["micro-batch"] * row.args["accumulation"] * row.args["replicas"] == BATCH


def test_unknown_workload_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="workloads"):
        plan("gpt", SYSTEM, BATCH, progress=False)


def test_resnet_exhaustive_search_agrees_with_planner(monkeypatch):
    from ipusim.plan import options, space_resnet
    from ipusim.plan.space_resnet import resnet_candidates

    monkeypatch.setattr(space_resnet, "MEMORY_PROPORTIONS", (0.6,))
    # Offloaded or not, with or without I/O tiles; sharded over the 4 replicas only (the
    # unsharded sibling is as fast with more memory: tests/plan/test_options.py).
    whole = options.state_options
    monkeypatch.setattr(
        options,
        "state_options",
        lambda r, fixed=None: [s for s in whole(r, fixed) if s[1] or fixed or r == 1],
    )
    model = {"image-size": 32, "optimizer": "momentum"}
    out = plan("resnet50", SYSTEM, 16, model, budget_s=1e9, progress=False)
    fitting = out.table[out.table["fits"]]
    assert len(fitting) >= 1 and (fitting["memory_used"] <= 1.0).all()
    # Every candidate, those the planner drops as dominated too.
    monkeypatch.setattr(options, "undominated", lambda cands: cands)
    every = resnet_candidates({"system": SYSTEM, **model}, 4, 16, "fp16.16")
    assert {(c.args["offload"], c.args.get("io-tiles")) for c in every} == {
        (o, io) for o in ("on", "off") for io in (None, options.IO_TILES)
    }
    best = 0.0
    for cand in every:
        try:
            o = simulate("resnet50", cand.args)
        except Exception:  # refused or out of memory: not a plan
            continue
        if o.memory_fits:
            best = max(best, o.predicted)
    assert fitting["throughput"].iloc[0] == pytest.approx(best, rel=1e-12)
