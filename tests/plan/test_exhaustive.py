"""The planner's best BERT plan against an exhaustive search of the same space, with every
schedule, recomputation setting and availableMemoryProportion the planner searches.

The model is BERT-Base cut to 3 encoder layers (the workload's and the planner's size tables
patched for the test), so that the space is small: 2 replicas of 2-IPU pipelines, each of the 5
splits at a layer or half-layer boundary with the head in a stage of its own on IPU 0 or with the
last stage, micro-batch 1 (accumulation 4), the optimizer state on chip sharded over the
replicas, no I/O tiles, recomputation with a checkpoint after every layer, without checkpoints
(RecomputationMode Auto, with the head in the last stage and with the Interleaved schedule) or
none: 150 configurations. test_profile.py searches data parallelism and the
optimizer-state settings exhaustively (Grouped), test_search.py I/O tiles (ResNet-50)."""

from __future__ import annotations

import pytest

import workloads.bert
from ipusim.plan import bert_costs, options, search, space
from ipusim.plan.search import plan
from ipusim.plan.space import _bert_args, _pipeline_options

LAYERS = 3
#: Layers, hidden, heads, intermediate of the cut-down model (BERT-Base's layers).
SIZE = (LAYERS, 768, 12, 3072)
SIZE_KEYS = ("layers", "hidden", "heads", "intermediate")
# A vocabulary of its own keeps this model's profiles apart from 12-layer BERT-Base's in the
# process-wide profile cache (keyed by the workload's arguments).
MODEL = {"size": "base", "sequence": 32, "masked": 4, "vocab": 512}
SYSTEM = "M2000"  # 4 IPUs: 2 replicas of 2-IPU pipelines
BATCH = 8


@pytest.fixture
def reduced(monkeypatch):
    monkeypatch.setitem(workloads.bert.SIZES, "base", dict(zip(SIZE_KEYS, SIZE)))
    monkeypatch.setitem(bert_costs.SIZES, "base", SIZE)
    monkeypatch.setattr(space, "IPUS_PER_REPLICA", (2,))
    monkeypatch.setattr(space, "MICRO_BATCHES", (1,))
    monkeypatch.setattr(options, "state_options", lambda r, fixed=None: [("off", True)])
    monkeypatch.setattr(options, "io_options", lambda overlapping: (0,))


def _space() -> list[dict]:
    """Every configuration of the reduced space, built without the planner's estimates: for
    each option set the planner's rules allow, every split of the 2 * LAYERS halves over 2
    IPUs (a stage boundary between layers, or inside one after its attention half)."""
    out = []
    for stages in (3, 2):
        ipr, replicas = 2, 2
        for opt in _pipeline_options(replicas, BATCH, stages, ipr):
            for cut in range(1, 2 * LAYERS):
                spans = [(0, cut), (cut, 2 * LAYERS)]
                attention = [sum(1 - u % 2 for u in range(a, b)) for a, b in spans]
                ffn = [b - a - n for (a, b), n in zip(spans, attention)]
                base = {"system": SYSTEM, **MODEL}
                args = _bert_args(base, ipr, replicas, stages, opt, "fp16.16", attention)
                if attention != ffn:
                    args["ffn-per-ipu"] = ffn
                out.append(options.setting_args(args, ("off", True), 0))
    return out


def _recomputation(args: dict) -> str:
    if not args.get("recompute"):
        return "off"
    assert args["recomputation-mode"] == (
        "interleaved" if "checkpoint-every-layer" in args else "auto"
    )
    return "every layer" if args.get("checkpoint-every-layer") else "auto"


def _key(args: dict) -> str:
    return repr(sorted(args.items()))


def test_every_schedule_recomputation_and_proportion_exhaustively(reduced, monkeypatch):
    """Every configuration simulated; the planner (no budget, no candidate limit), which
    simulates only the finalists its estimates rank first and at most half the space, returns
    a fitting plan with exactly the best simulated throughput (its finalists' figures are the
    exhaustive run's, so equal means it found a best plan, not a near one)."""
    every = _space()
    kinds = {(a["stages"], a["schedule"], _recomputation(a), a["memory-proportion"]) for a in every}
    # At acc 4: Grouped on 2 stages (a multiple of 2 S), Interleaved (2 distinct IPUs; its
    # recomputation Auto, without checkpoints), Sequential; each at the 3 proportions. Without
    # checkpoints only when the last stage holds encoder layers (it then recomputes nothing).
    assert {k[:3] for k in kinds} == {
        *((2, s, r) for s in ("grouped", "sequential") for r in ("every layer", "auto", "off")),
        *((2, "interleaved", r) for r in ("auto", "off")),
        *((3, "sequential", r) for r in ("every layer", "off")),
    }
    assert {k[3] for k in kinds} == {0.2, 0.4, 0.6}
    assert len(every) == (2 * LAYERS - 1) * (9 + 6 + 9 + 6)
    simulated = {_key(a): search.measure("bert", a) for a in every}
    best = max(r["throughput"] for r in simulated.values() if r["fits"])
    # The planner's finalists are configurations of the space: their figures are the ones
    # just simulated (a finalist outside the space fails the test).
    monkeypatch.setattr(search, "measure", lambda workload, args: simulated[_key(args)])
    result = plan("bert", SYSTEM, BATCH, MODEL, budget_s=1e9, progress=False)
    assert result.simulated <= len(every) // 2
    top = result.table[result.table["fits"]].iloc[0]
    print(
        result.simulated,
        len(every),
        result.table[["throughput", "fits", "summary"]].head(8).to_string(),
    )
    assert top["throughput"] == best, top["args"]
    # Recomputing plans only (here slower than plain ones, which the planner would not
    # simulate): the best of the recomputation modes, as exhaustively simulated.
    modes = space._recomputations
    monkeypatch.setattr(
        space, "_recomputations", lambda *a: [m for m in modes(*a) if m != (False, False)]
    )
    result = plan("bert", SYSTEM, BATCH, MODEL, budget_s=1e9, progress=False)
    outs = [simulated[_key(a)] for a in every if a.get("recompute")]
    recomputing = [r["throughput"] for r in outs if r["fits"]]
    top = result.table[result.table["fits"]].iloc[0]
    assert top["args"]["recompute"] and top["throughput"] == max(recomputing), top["args"]
