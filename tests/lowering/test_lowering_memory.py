"""Memory planning: liveness peak by hand, the tile map, and the out-of-memory check."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim.graph.graph import Graph
from ipusim.graph.ops import math as m
from ipusim.graph.spec import TensorSpec
from ipusim.kernels.tilemap import spread_over_tiles
from ipusim.lowering.liveness import peak_live_bytes
from ipusim.lowering.memory import OutOfMemoryError, build_plan, check_fits
from ipusim.lowering.program import MemoryItem


def test_peak_live_bytes_by_hand() -> None:
    g = Graph()
    x = g.placeholder(TensorSpec((100,), "float32"))  # 400 B, read last by b
    a = m.relu(x)  # 400 B: x is read again later, so a new buffer -> x, a = 800
    b = m.exp(x)  # x's last reader: exp writes over x in place -> still 800
    c = m.add(a, b)  # a's last reader: add writes over a -> still 800
    nodes = g.nodes_between([c])
    sizes = {(n.id, s.index): s.spec.nbytes for n in nodes for s in n.outputs}
    peak, at = peak_live_bytes(nodes, [c], sizes)
    assert peak == 800
    assert nodes[at].op.name == "relu"


def test_tile_map_spreads_and_conserves_bytes() -> None:
    sizes = np.array([1000, 64, 10, 0, 5000])
    per_tile = spread_over_tiles(sizes, tiles=8, grain_bytes=64)
    assert per_tile.sum() == sizes.sum()
    # 1000 B = 16 grains -> all 8 tiles get 125; 64 B -> one tile; 10 B -> one tile; 5000 B
    # -> 8 tiles of 625.
    assert sorted(per_tile.tolist()) == sorted([125 + 625 + 64, 125 + 625 + 10] + [750] * 6)
    with pytest.raises(ValueError, match="positive"):
        spread_over_tiles(sizes, tiles=0, grain_bytes=64)


def test_out_of_memory_names_ipu_total_budget_and_largest_items() -> None:
    items = [MemoryItem("big/kernel:0", "weights", 3000), MemoryItem("acts", "activations", 500)]
    plan = build_plan(2, items, tiles=4, sram_bytes_per_tile=512)
    assert plan.by_category()["weights"] == 3000 and plan.total_bytes == 3500
    with pytest.raises(OutOfMemoryError, match=r"IPU 2.*big/kernel:0 \(weights"):
        check_fits(plan)
    check_fits(build_plan(0, items, tiles=8, sram_bytes_per_tile=1024))  # fits: no error


def _pipelined_plans(device_mapping: list[int]):
    import ipusim
    from ipusim import keras
    from ipusim.pipelining import PipelineSchedule

    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = max(device_mapping) + 1
    cfg.ipusim.numerics = False
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [keras.Input((64,))] + [keras.layers.Dense(32 * (s + 1)) for s in range(4)]
        )
        model.set_pipeline_stage_assignment([0, 1, 2, 3])
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=4,
            device_mapping=device_mapping,
            pipeline_schedule=PipelineSchedule.Sequential,
        )
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
        model.fit(np.zeros((16, 64), np.float32), np.zeros((16, 128), np.float32), batch_size=4)
    return model.last_simulation.memory_items


def test_stages_sharing_an_ipu_need_their_largest_working_set_not_the_sum() -> None:
    spread = _pipelined_plans([0, 1, 2, 3])
    shared = _pipelined_plans([0, 0, 0, 0])
    working = spread[spread.name.str.endswith("working activations")]
    buffers = spread[spread.name.str.endswith("exchange buffers")]
    assert len(working) == 4 and working.bytes.nunique() > 1
    on_one = shared[shared.ipu == 0]
    assert on_one[on_one.name.str.endswith("working activations")].bytes.tolist() == [
        working.bytes.max()
    ]
    assert on_one[on_one.name.str.endswith("exchange buffers")].bytes.tolist() == [
        buffers.bytes.max()
    ]
    # Code and stashes stay resident for the whole run: they add up.
    code = lambda frame: frame[frame.category == "code"].bytes.sum()  # noqa: E731
    assert code(on_one) == code(spread)


def test_views_share_their_input_and_dying_operands_are_overwritten_in_place() -> None:
    from ipusim.graph.ops import shape as sh

    g = Graph()
    x = g.placeholder(TensorSpec((10, 10), "float32"))  # 400 B
    t = sh.transpose(x, (1, 0))  # a view of x: no bytes of its own
    u = m.exp(t)  # x is read again below, so u gets a new buffer -> 800
    v = m.relu(u)  # u's last reader: relu writes over u in place
    w = m.add(v, x)  # v's last reader: add writes over v in place
    nodes = g.nodes_between([w])
    sizes = {(n.id, s.index): s.spec.nbytes for n in nodes for s in n.outputs}
    peak, _ = peak_live_bytes(nodes, [w], sizes)
    # x (400) and u's buffer (400, reused by v and w): never more than two buffers.
    assert peak == 800
