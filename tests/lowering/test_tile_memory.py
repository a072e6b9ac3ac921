"""Per-tile memory and liveness: matmul outputs mapped by their plan, a model that fits in total
but not on its busiest tile, the liveness table of a small pipeline, categories against totals."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.cost import amp
from ipusim.hardware import get_chip
from ipusim.lowering import OutOfMemoryError
from ipusim.lowering.tile_mapping import Placement, linear, planned_output
from ipusim.pipelining import PipelineSchedule


def _naive_matmul_output(plan: amp.ConvPlan, element_bytes: int) -> np.ndarray:
    """Bytes per tile of a matmul's output, element by element: the element of output channel
    c and field position j belongs to the block (channel split, field split) that holds it;
    block b's elements go to its ks*ics tiles, the first ones getting one more when they do
    not divide evenly; tiles are numbered block-major."""
    p = plan.problem
    bs, hs, ws, ks, ics, ocs, gs = plan.splits
    assert (p.batch, p.out_h, bs, hs, gs, p.groups) == (1, 1, 1, 1, 1, 1)  # a matmul
    field_step = -(-p.out_w // ws)
    group = plan.out_chans_per_group
    chan_groups = -(-p.cout // group)
    chan_step = -(-chan_groups // ocs) * group
    counts = np.zeros(ocs * ws, dtype=np.int64)
    for c in range(p.cout):
        for j in range(p.out_w):
            counts[(c // chan_step) * ws + j // field_step] += 1
    depth = ks * ics
    out = []
    for n in counts:
        out += [n // depth + (1 if k < n % depth else 0) for k in range(depth)]
    return np.array(out, dtype=np.int64) * element_bytes


@pytest.mark.parametrize(("m", "n", "k"), [(64, 100, 32), (512, 1024, 256), (3, 2000, 70)], ids=str)
def test_matmul_output_per_tile_follows_its_plan(m: int, n: int, k: int) -> None:
    target = amp.AmpTarget.for_chip(get_chip("GC200"), "fp16.16")
    plan = amp.plan_matmul(m, n, k, target)
    per_tile = planned_output(plan, 2)
    assert len(per_tile) == plan.tiles == int(np.prod(plan.splits))
    assert per_tile.sum() == m * n * 2  # every output element once
    np.testing.assert_array_equal(per_tile, _naive_matmul_output(plan, 2))


def test_linear_mapping_and_rotated_placement() -> None:
    # 1000 B in 128 B grains = 8 grains over 1472 tiles: one grain per tile, the last partial.
    assert linear(1000, 1472)[:9].tolist() == [128] * 7 + [104, 0]
    # 40 grains over 16 tiles: 3 grains per tile from tile 0 (poputil mapTensorLinearly).
    assert linear(40 * 128, 16).tolist() == [384] * 13 + [128, 0, 0]
    live = np.zeros(8, dtype=np.int64)
    Placement(6, np.array([1, 2, 3])).add_to(live)  # wraps past the last tile
    assert live.tolist() == [3, 0, 0, 0, 0, 0, 1, 2]


def _dense_fit(proportion: str | None = None, stages: int = 1):
    keras.backend.clear_session()  # layer names as in a fresh process
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = stages
    cfg.ipusim.numerics = False
    if proportion is not None:
        cfg.matmuls.poplar_options = {"availableMemoryProportion": proportion}
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [keras.Input((3584,))] + [keras.layers.Dense(3584, use_bias=False) for _ in range(2)]
        )
        if stages > 1:
            model.set_pipeline_stage_assignment([0, 1])
            # Sequential: one micro-batch in flight, so the stage holds one stash, not three.
            model.set_pipelining_options(
                gradient_accumulation_steps_per_replica=4,
                pipeline_schedule=ipusim.pipelining.PipelineSchedule.Sequential,
            )
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=4 if stages > 1 else 1)
        # One execution: one step, or one step of 4 accumulated micro-batches when pipelined.
        data = np.zeros((3072 * (4 if stages > 1 else 1), 3584), np.float32)
        model.fit(data, data, batch_size=3072, epochs=1, verbose=0)
    return model.last_simulation


def test_fits_in_total_but_not_on_the_busiest_tile_then_fits_with_less_temporary_memory() -> None:
    with pytest.raises(OutOfMemoryError) as info:
        _dense_fit()
    message = str(info.value)
    # The tile, the program point, the largest items on the tile and what to change.
    assert "IPU 0, tile 0: at program point dense" in message
    assert "although the IPU as a whole needs only" in message
    assert "dense_1/matmul" in message and "temporaries" in message and "dense/kernel:0" in message
    assert "availableMemoryProportion" in message
    lower = _dense_fit("0.1").memory.iloc[0]
    assert lower.max_tile_bytes <= lower.tile_budget_bytes
    staged = _dense_fit(stages=2).memory
    assert (staged.max_tile_bytes <= staged.tile_budget_bytes).all()


def test_available_memory_proportion_shows_in_memory_and_time() -> None:
    low, high = _dense_fit("0.1"), _dense_fit("0.3")
    temporaries = [r.liveness.temporaries_bytes.max() for r in (low, high)]
    assert temporaries[0] < temporaries[1]

    def matmul_seconds(report, track: str) -> float:
        df = report.trace.to_dataframe()
        df = df[(df.op == "matmul") & (df.track == track)]
        return float((df.end_ps - df.start_ps).sum()) / 1e12

    # Smaller operand slices per tile: the plans exchange more (the planner's trade).
    assert matmul_seconds(low, "exchange") > matmul_seconds(high, "exchange")
    assert matmul_seconds(low, "compute") != matmul_seconds(high, "compute")


def _small_pipeline(device_mapping: tuple[int, ...] = (0, 1)):
    keras.backend.clear_session()
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = max(device_mapping) + 1
    cfg.ipusim.numerics = False
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [
                keras.Input((8,)),
                keras.layers.Dense(4, use_bias=False),
                keras.layers.Dense(2, use_bias=False),
            ]
        )
        model.set_pipeline_stage_assignment([0, 1])
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=4,
            pipeline_schedule=PipelineSchedule.Sequential,
            device_mapping=list(device_mapping),
        )
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
        model.fit(np.zeros((8, 8), np.float32), np.zeros((8, 2), np.float32), batch_size=2)
    return model.last_simulation


def test_liveness_of_a_small_pipeline_equals_the_hand_table() -> None:
    report = _small_pipeline()
    live = report.liveness
    ipu1 = live[live.ipu == 1]
    # Stage 1 (fp32, micro-batch 2). Its forward block keeps nothing for its backward block: the
    # values the backward block reads (h [2,4] 32 B from stage 0 and d [2,2] 16 B) wait in the
    # stash and are received back where the backward block reads them.
    # Forward: y = h W2 16 B with h received (48); d = y - t over y (y's last reader) with the
    # targets t 16 B received (32); s = d^2 over d, whose last forward reader it is (16); the
    # mean over the last axis [2] 8 B (24); the loss 4 B, kept to the end of the block, as the
    # mean dies (12).
    # Backward: the mean's gradient [2] 8 B (8); broadcast [2,2] 16 B (24); square_grad dy over
    # the dying broadcast, with d received (32); dh = dy W2^T [2,4] 32 B (48); dW2 = h^T dy
    # [4,2] 32 B with h received (80; dh has no reader here: it is sent to stage 0).
    assert ipu1.activations_bytes.tolist() == [48, 32, 16, 24, 12, 8, 24, 32, 48, 80]
    # The stash holds h and d for the one micro-batch in flight (Sequential) at every step.
    assert set(ipu1.stash_bytes) == {32 + 16}
    # Stage 0: the infeed's x [2,8] 64 B received and h = x W1 [2,4] 32 B (sent on); then x
    # back from the stash, dh [2,4] 32 B received and dW1 = x^T dh [8,4] 128 B.
    ipu0 = live[live.ipu == 0]
    assert ipu0.activations_bytes.tolist() == [64 + 32, 64 + 32 + 128]
    assert set(ipu0.stash_bytes) == {64}
    # Always live: the kernels (8x4 and 4x2 fp32) and their accumulators, at every step.
    assert set(ipu0.weights_bytes) == {128} and set(ipu0.gradient_accumulators_bytes) == {128}
    assert set(ipu1.weights_bytes) == {32} and set(ipu1.gradient_accumulators_bytes) == {32}
    # Temporaries only while a matmul runs.
    assert (ipu1.temporaries_bytes > 0).tolist() == [True] + [False] * 7 + [True, True]


def test_sequential_stashes_live_from_their_stage_on_when_stages_share_an_ipu() -> None:
    # Both stages on IPU 0. Sequential: one micro-batch runs forward through stages 0 and 1, then
    # backward through 1 and 0. Stage 0's stash (x, 64 B) lives from stage 0's forward pass to
    # its backward pass, i.e. over everything stage 1 does; stage 1's (h and d, 48 B) only
    # while stage 1 runs. This timeline runs stage 0's steps, then stage 1's.
    report = _small_pipeline((0, 0))
    live = report.liveness
    assert set(live.ipu) == {0}
    stage0, stage1 = live[live.stage == 0], live[live.stage == 1]
    assert set(stage0.stash_bytes) == {64}
    assert set(stage1.stash_bytes) == {64 + 48}
    # The plan holds what is live at the worst step: the liveness's own peak.
    peak = int(live.total_bytes.max())
    assert int(report.memory.total_bytes.iloc[0]) == peak
    # Both stashes count only if the peak is in stage 1; in stage 0 only stage 0's does.
    stash_items = [i for i in report.memory_plans[0].items if " stash " in i.name]
    at_peak = live[live.total_bytes == peak]
    expected = {64, 64 + 48} & set(at_peak.stash_bytes)
    assert {sum(i.bytes for i in stash_items)} == expected


def test_memory_categories_and_liveness_sum_to_the_totals() -> None:
    report = _small_pipeline()
    memory = report.memory
    categories = [c for c in memory.columns if c.endswith("_bytes")]
    categories = [
        c
        for c in categories
        if c not in ("total_bytes", "budget_bytes", "max_tile_bytes", "tile_budget_bytes")
    ]
    assert (memory[categories].sum(axis=1) == memory.total_bytes).all()
    live = report.liveness
    parts = [
        c
        for c in live.columns
        if c.endswith("_bytes")
        and c not in ("always_live_bytes", "not_always_live_bytes", "total_bytes")
    ]
    assert (live[parts].sum(axis=1) == live.total_bytes).all()
    assert (live.always_live_bytes + live.not_always_live_bytes == live.total_bytes).all()
    peaks = live[live.peak].set_index("ipu").total_bytes
    assert peaks.to_dict() == memory.set_index("ipu").total_bytes.to_dict()
    # The per-tile map at the worst step holds the same bytes as the liveness there.
    for plan in report.memory_plans:
        step = plan.liveness.tile_peak_step
        row = live[(live.ipu == plan.ipu) & (live.step == step)]
        assert sum(plan.tile_bytes) == int(row.total_bytes.iloc[0])


def _four_dense_on_two_ipus(recompute: bool) -> None:
    keras.backend.clear_session()
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.ipusim.numerics = False
    cfg.allow_recompute = recompute
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [keras.Input((4096,))] + [keras.layers.Dense(4096, use_bias=False) for _ in range(4)]
        )
        model.set_pipeline_stage_assignment([0, 0, 0, 1])
        model.set_pipelining_options(gradient_accumulation_steps_per_replica=4)
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
        data = np.zeros((2048, 4096), np.float32)
        model.fit(data, data, batch_size=512, verbose=0)


def test_over_budget_only_by_a_recomputing_stage_working_set_is_a_warning() -> None:
    from ipusim.errors import OutOfMemoryWarning

    with pytest.raises(OutOfMemoryError, match="Out of memory on IPU 0"):
        _four_dense_on_two_ipus(recompute=False)
    # The working set of a recomputing stage (graph order, declared checkpoints only) is an
    # upper bound, and what is resident fits, so the program may fit.
    with pytest.warns(OutOfMemoryWarning, match="upper bound"):
        _four_dense_on_two_ipus(recompute=True)


def test_liveness_survives_save_and_load(tmp_path) -> None:
    import pandas as pd

    from ipusim.trace import Report

    report = _small_pipeline()
    loaded = Report.load(report.save(tmp_path / "run"))
    pd.testing.assert_frame_equal(loaded.liveness, report.liveness)


def test_convolution_output_per_tile_follows_its_field_and_channel_splits() -> None:
    target = amp.AmpTarget.for_chip(get_chip("GC200"), "fp16.16")
    problem = amp.ConvProblem(8, 28, 28, 30, 30, 3, 3, 1, 64, 96)
    plan = amp.plan_conv(problem, target)
    bs, hs, ws, ks, ics, ocs, gs = plan.splits
    assert bs * hs * ws > 1 and gs == 1  # the field is split
    steps = [-(-n // k) for n, k in ((8, bs), (28, hs), (28, ws))]
    channel_groups = -(-96 // plan.out_chans_per_group)
    chans = -(-channel_groups // ocs) * plan.out_chans_per_group
    counts = np.zeros((ocs, bs, hs, ws), dtype=np.int64)
    for b in range(8):
        for y in range(28):
            for x in range(28):
                for c in range(96):
                    counts[c // chans, b // steps[0], y // steps[1], x // steps[2]] += 1
    depth = ks * ics
    expected = [n // depth + (k < n % depth) for n in counts.ravel() for k in range(depth)]
    np.testing.assert_array_equal(planned_output(plan, 2), np.array(expected) * 2)
