"""The planner's options beyond stages and micro-batches (ipusim/plan/options.py): offloading
and sharding of the optimizer state, I/O tiles, the schedules and an interpolated
availableMemoryProportion, against closed forms and against the simulator."""

from __future__ import annotations

import pytest

from ipusim.hardware import load_system
from ipusim.plan import options, space
from ipusim.plan.search import measure
from ipusim.plan.space import bert_candidates
from tests.plan._candidates import pick

MODEL = {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}
SYSTEM = "M2000"


def test_schedule_seconds_closed_forms():
    passes, overhead = [(1.0, 2.0), (2.0, 3.0), (1.5, 2.5)], 0.5  # (forward, backward) s
    # Grouped: M + S - 1 = 8 forward and 8 backward steps, half the overhead each. Full
    # steps (4 of each): 2 + 3. Ramp up: F of stage 0 (1), of 0..1 (2); B of stage 2 (2.5),
    # of 1..2 (3). Ramp down: F of 1..2 (2), of 2 (1.5); B of 0..1 (3), of 0 (2).
    ramp = (1 + 2) + (2.5 + 3) + (2 + 1.5) + (3 + 2)
    assert options.schedule_seconds("grouped", 6, passes, overhead) == 4 * 5 + ramp + 8 * 0.5
    # Two IPUs holding 3 stages: 8 steps a pass again; the ramp's step beyond the IPUs at the
    # slowest IPU's passes (F 2, B 3).
    two = passes[:2]
    ramp = (1 + 2 + 2 * 2) + (2 + 3 + 2 * 3)
    assert options.schedule_seconds("grouped", 6, two, overhead, 3) == 4 * 5 + ramp + 8 * 0.5
    # Interleaved: 2 (M + S - 1) = 16 steps, half the overhead each. Full steps (8): stages
    # 0 and 2 forward while 1 runs its backward (max(1, 1.5, 3) = 3), then the other way
    # round (max(2, 2.5, 2) = 2.5). Ramp up: F0 of stage 0 (1), of 1 (2), F1 of 0 with F0 of 2
    # (1.5), F1 of 1 with B0 of 2 (2.5); ramp down: B4 of 1 with F5 of 2 (3), B4 of 0 with B5
    # of 2 (2.5), B5 of 1 (3), B5 of 0 (2).
    ramp = (1 + 2 + 1.5 + 2.5) + (3 + 2.5 + 3 + 2)
    want = 4 * (3 + 2.5) + ramp + 16 * 0.25
    assert options.schedule_seconds("interleaved", 6, passes, overhead) == pytest.approx(want)
    # Sequential: every stage in turn, M times.
    assert options.schedule_seconds("sequential", 6, passes, overhead) == 6 * (12 + 1.5)


@pytest.mark.parametrize("stages, acc", [(2, 4), (3, 6), (5, 10), (4, 40)])
def test_grouped_seconds_follow_the_lowerings_time_steps(stages, acc):
    """Each step of the lowering's Grouped schedule lasts as long as its slowest item."""
    from ipusim.lowering.schedules import time_steps

    passes = [(1.0 + 0.3 * s * (-1) ** s, 2.0 + 0.7 * (s % 3)) for s in range(stages)]
    steps = time_steps("grouped", stages, acc, True)
    naive = sum(max(passes[s][p == "B"] for s, p, _ in step) + 0.25 for step in steps)
    assert options.schedule_seconds("grouped", acc, passes, 0.5) == pytest.approx(naive)


def test_state_bytes_and_settings():
    # Adam keeps 2 fp32 slots per element: 8 bytes, a quarter of it per replica of 4 sharded.
    assert options.optimizer_slots("adam") == 2 and options.optimizer_slots("sgd") == 0
    assert options.state_bytes(1000, 2, "off", False, 4) == 8000
    assert options.state_bytes(1000, 2, "off", True, 4) == 2000
    assert options.state_bytes(1000, 2, "on", True, 4) == 0
    assert options.state_options(1) == [("on", False), ("off", False)]
    assert len(options.state_options(2)) == 4
    assert options.schedules(3, 2) == ("grouped", "sequential")  # two stages on IPU 0
    assert options.accumulation_ok("grouped", 3, 2, 12) and not options.accumulation_ok(
        "grouped", 3, 2, 9
    )


def test_offloaded_update_moves_the_state_twice_over_streaming_memory():
    """One replica, offloaded: a load and a store of slots x 4 bytes per element at the
    Streaming Memory bandwidth (no collective)."""
    memory = load_system(SYSTEM).streaming_memory
    elements = 10_000_000
    seconds = options.update_transfer_s(SYSTEM, 1, 1, ("on", False), elements, (2, 2))
    bandwidth = min(
        memory.bandwidth_bytes_per_s_per_ipu, memory.shared_gateway_bandwidth_bytes_per_s
    )
    one_way = 8 * elements / bandwidth + memory.latency_s
    assert seconds == pytest.approx(2 * one_way, rel=1e-6)
    assert options.update_transfer_s(SYSTEM, 1, 1, ("off", False), elements, (2, 2)) == 0.0


@pytest.fixture(scope="module")
def cands():
    return bert_candidates({"system": SYSTEM, **MODEL}, 4, 80, "fp16.16", prune=False)


# One candidate per new option (a small BERT, 4 IPUs). Bounds: the worst errors of these cases,
# rounded up: throughput up to 9% high (5-stage Grouped pipelines; up to 22% high on 2-IPU
# pipelines with the state on chip before the stages' seconds included their syncs, the step
# the host's per-execution work once and the Grouped schedule its ramp steps), bytes within 2%
# (above the profiled micro-batches: tests/plan/test_bert_estimates.py).
CASES = [
    {"offload": "off", "replicas": 1, "stages": 5, "micro-batch": 2},
    {"offload": "off", "sharded-optimizer-state": True, "replicas": 2, "stages": 3},
    {"io-tiles": options.IO_TILES, "replicas": 2, "stages": 2, "micro-batch": 2},
    {"io-tiles": options.IO_TILES, "replicas": 4, "stages": 1, "micro-batch": 2},
    {"schedule": "sequential", "replicas": 1, "stages": 4, "micro-batch": 4},
    {"schedule": "interleaved", "replicas": 2, "stages": 2, "micro-batch": 4},
    {"memory-proportion": 0.4, "replicas": 1, "stages": 5, "micro-batch": 4},
]


@pytest.mark.parametrize("want", CASES, ids=lambda w: "-".join(f"{k}={v}" for k, v in w.items()))
def test_new_options_track_the_simulator(cands, want):
    cand = pick(cands, **want)
    out = measure("bert", cand.args)
    assert out["fits"], out
    assert cand.speed == pytest.approx(out["throughput"], rel=0.10), cand.args
    assert cand.ipu_bytes == pytest.approx(out["ipu_bytes"], rel=0.03), cand.args


def test_state_on_chip_costs_memory_and_saves_the_update_as_simulated(cands):
    """The same plan with the optimizer state offloaded and on chip (sharded over the 2
    replicas): the estimates order bytes and speed as the simulator does. The unsharded
    on-chip sibling the planner drops as dominated is, simulated, as fast with more memory."""
    same = {"replicas": 2, "stages": 3, "micro-batch": 4, "schedule": "sequential"}
    chip = pick(cands, **same, offload="off")
    assert chip.args.get("sharded-optimizer-state")
    layout = {k: chip.args.get(k) for k in ("layers-per-ipu", "recompute", "memory-proportion")}
    off = pick(cands, **same, **layout, offload="on")
    outs = [measure("bert", c.args) for c in (off, chip)]
    assert (off.ipu_bytes < chip.ipu_bytes) == (outs[0]["ipu_bytes"] < outs[1]["ipu_bytes"])
    assert (off.speed < chip.speed) == (outs[0]["throughput"] < outs[1]["throughput"])
    whole = measure("bert", options.setting_args(chip.args, ("off", False), 0))
    assert whole["throughput"] == pytest.approx(outs[1]["throughput"], rel=1e-9)
    assert whole["ipu_bytes"] > outs[1]["ipu_bytes"]


def test_every_candidate_estimated_is_counted(cands):
    kept = bert_candidates({"system": SYSTEM, **MODEL}, 4, 80, "fp16.16")
    assert kept.evaluated == cands.evaluated > len(cands) >= len(kept)
    assert {c.args["schedule"] for c in cands} == {"grouped", "sequential", "interleaved"}
    assert {c.args["memory-proportion"] for c in cands} == {0.2, 0.4, 0.6}
    assert space.EXTRA_PROPORTIONS == (0.4,)


def test_recomputation_without_checkpoints_tracks_the_simulator(cands):
    """The same 2-IPU Sequential plan recomputing with a checkpoint after every layer
    (RecomputeAndBackpropagateInterleaved) and without (Auto): without, the last stage
    recomputes nothing (faster) and a stage holds every layer's activations at once (more
    bytes). Each estimate within the bounds of CASES, and they order as the simulator."""
    auto = pick(
        cands, schedule="sequential", stages=2, **{"micro-batch": 8, "recomputation-mode": "auto"}
    )
    assert auto.args["recompute"] and "checkpoint-every-layer" not in auto.args
    every = {**auto.args, "recomputation-mode": "interleaved", "checkpoint-every-layer": True}
    (layer,) = [c for c in cands if c.args == every]
    outs = [measure("bert", c.args) for c in (auto, layer)]
    for cand, out in zip((auto, layer), outs):
        assert out["fits"], out
        assert cand.speed == pytest.approx(out["throughput"], rel=0.10), cand.args
        assert cand.ipu_bytes == pytest.approx(out["ipu_bytes"], rel=0.04), cand.args
    assert outs[0]["throughput"] > outs[1]["throughput"] and auto.speed > layer.speed
    assert outs[0]["ipu_bytes"] > outs[1]["ipu_bytes"] and auto.ipu_bytes > layer.ipu_bytes


def test_interleaved_schedule_recomputes_without_checkpoints(cands):
    """Interleaved refuses RecomputeAndBackpropagateInterleaved: its recomputing plans are
    Auto (RecomputeThenBackpropagate) without checkpoints, estimated as the simulator runs
    them."""
    want = {"schedule": "interleaved", "recompute": True, "stages": 2, "micro-batch": 4}
    cand = pick(cands, **want)
    assert cand.args["recomputation-mode"] == "auto"
    assert not any(
        c.args.get("checkpoint-every-layer") for c in cands if c.args["schedule"] == "interleaved"
    )
    out = measure("bert", cand.args)
    assert out["fits"], out
    assert cand.speed == pytest.approx(out["throughput"], rel=0.10), cand.args
    assert cand.ipu_bytes == pytest.approx(out["ipu_bytes"], rel=0.04), cand.args


def test_best_py_table_and_gives_up_carry_the_recomputation(cands):
    """With checkpoints: RecomputeAndBackpropagateInterleaved, the checkpoint layers named and
    stages ending after them; without: Auto, stages ending after the layers' last norm."""
    from ipusim.plan.output import best_py
    from ipusim.plan.search import _describe

    auto = pick(cands, schedule="sequential", stages=2, **{"recomputation-mode": "auto"})
    every = pick(cands, schedule="sequential", stages=2, **{"checkpoint-every-layer": True})
    code = best_py(auto.args)
    assert "RecomputationMode.Auto," in code and "RecomputationCheckpoint" not in code
    assert "_ffn_norm']" in code and "_checkpoint'" not in code
    assert "without checkpoints" in auto.gives_up
    assert " no checkpoints" in _describe(auto)["summary"]
    code = best_py(every.args)
    assert "RecomputationMode.RecomputeAndBackpropagateInterleaved," in code
    assert "RecomputationCheckpoint after every 1 encoder layer(s)" in code
    assert "_checkpoint']" in code
    assert "no checkpoints" not in _describe(every)["summary"]
