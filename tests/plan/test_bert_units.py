"""Sub-layer stage boundaries of BERT (ipusim/plan/bert_units.py): the halves' shares from the
model's shape by hand and from the reference run's trace and memory, the workload's placement
of a split, and sub-layer candidates against the simulator."""

from __future__ import annotations

import pytest

from ipusim.plan import profile
from ipusim.plan.bert_costs import BertShape, bert_costs, reference_args, reference_counts
from ipusim.plan.bert_units import halves, whole_layers
from ipusim.plan.search import measure
from ipusim.plan.space import bert_candidates

MODEL = {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}
SYSTEM = "M2000"


def test_halves_shares_of_bert_large_by_hand():
    units = halves(BertShape.of({"size": "large", "sequence": 128}))
    h, i, s, heads = 1024, 4096, 128, 16
    attention_time = 8 * h * h + 4 * s * h  # QKV, output projection, scores and context
    assert units.time[0] == pytest.approx(attention_time / (attention_time + 4 * h * i))
    assert units.var[0] == pytest.approx(4 * h * h / (4 * h * h + 2 * h * i))  # 1/3
    attention_act, ffn_act = 6 * s * h + 2 * heads * s * s, 2 * s * h + 2 * s * i
    assert units.act[1] == pytest.approx(ffn_act / (attention_act + ffn_act))
    assert sum(units.time) == sum(units.var) == pytest.approx(1.0)
    assert units.count == 48


@pytest.mark.parametrize("recompute", [False, True])
def test_halves_shares_come_from_the_reference_run(recompute):
    """The attention halves' share of a layer's variables is their parameters' (closed form);
    their share of the seconds is their compute sets' (compute, exchange and sync records of
    the reference run's trace, summed here from the records)."""
    base, shape = {"system": SYSTEM, **MODEL}, BertShape.of(MODEL)
    setting = (2, 0.6, recompute, "fp16.16")
    costs = bert_costs(base, shape, 4, setting)
    h, i = shape.hidden, shape.intermediate
    attention = 4 * (h * h + h) + 2 * h  # Q, K, V, output projections; the layer norm
    ffn = 2 * h * i + i + h + 2 * h  # intermediate and output dense layers; the layer norm
    assert costs.attention_var == pytest.approx(attention / (attention + ffn), rel=1e-9)
    args = reference_args(base, reference_counts(shape.layers, 4), setting)
    records = profile.workload_report("bert", args).trace.to_dataframe()
    kept = records[
        (records.ipu >= 0)
        & records.track.isin(["compute", "exchange", "sync"])
        & records.layer.fillna("").str.startswith("encoder_")
        & ~records.name.str.startswith("recompute ")
        & (records.op != "weight_update")
    ]
    # Recomputing runs each forward compute set again in the backward pass (the profile
    # counts the forward records twice instead of the recomputed ones).
    seconds = kept.duration_s * (1 + recompute * (kept.phase == "fwd"))
    share = seconds[kept.layer.str.split("_").str[2] == "attention"].sum() / seconds.sum()
    assert costs.attention_s == pytest.approx(share, rel=1e-6)
    # The profile's share differs from the multiply-adds' (the attention's softmax, norms and
    # small matmuls take longer than their multiply-adds say).
    assert abs(costs.attention_s - halves(shape).time[0]) > 0.05


def test_shares_and_placement_of_a_split():
    shape = BertShape.of({"size": "base"})  # 12 layers
    units = halves(shape)
    a, f = units.time
    # Units 3 .. 8: the FFN half of layer 1, layers 2 and 3 whole, the attention half of layer 4.
    assert units.share("time", 3, 9) == pytest.approx(f + 2 + a)
    # Stages of 7, 9 and 8 halves: attention halves 4, 4, 4 and FFN halves 3, 5, 4.
    bounds = (0, 7, 16, 24)
    assert units.is_sub_layer(bounds)
    assert units.placement(bounds) == ([4, 4, 4], [3, 5, 4])
    whole = whole_layers(shape)
    assert whole.placement((0, 5, 12)) == ([5, 7], None)
    assert not whole.is_sub_layer((0, 5, 12)) and not units.is_sub_layer((0, 10, 24))


@pytest.fixture(scope="module")
def sub_layer():
    cands = bert_candidates({"system": SYSTEM, **MODEL}, 4, 80, "fp16.16", prune=False)
    return [c for c in cands if "ffn-per-ipu" in c.args]


def test_sub_layer_splits_are_candidates_that_cut_a_layer(sub_layer):
    assert sub_layer
    for cand in sub_layer:
        attention, ffn = cand.args["layers-per-ipu"], cand.args["ffn-per-ipu"]
        assert sum(attention) == sum(ffn) == 12 and attention != ffn


# Bounds: over a sample of 24 sub-layer candidates the throughput is within -1%..+4% of the
# simulator's and the bytes within 3% (1-21% high before the halves' seconds came from the
# profile with their syncs, and the Grouped schedule's ramp steps were counted).
@pytest.mark.parametrize("stages", [2, 5])
def test_a_sub_layer_split_runs_and_tracks_the_simulator(sub_layer, stages):
    cand = next(c for c in sub_layer if c.args["stages"] == stages)
    out = measure("bert", cand.args)
    assert out["fits"], out
    assert cand.speed == pytest.approx(out["throughput"], rel=0.05), cand.args
    assert cand.ipu_bytes == pytest.approx(out["ipu_bytes"], rel=0.05), cand.args


def test_best_py_names_the_layers_a_sub_layer_split_cuts_after(sub_layer):
    """best.py's stage boundaries are the layer names the workload splits at: after the
    attention half (``encoder_N_attention_norm``) where a stage boundary falls inside layer N."""
    from ipusim.plan.output import best_py

    cand = next(c for c in sub_layer if c.args["stages"] == 2)
    attention, ffn = cand.args["layers-per-ipu"], cand.args["ffn-per-ipu"]
    code = best_py(cand.args)
    # Two stages over 24 halves: the first holds attention[0] + ffn[0] halves.
    first = attention[0] + ffn[0]
    layer = (first - 1) // 2
    name = f"encoder_{layer}_{'attention' if first % 2 else 'ffn'}_norm"
    assert f"split_after = ['{name}']" in code, code
