"""The planner's I/O-tile estimate (ipusim/plan/options.py) takes the I/O tiles from compute as
the simulator does (tests/session/test_io_tiles.py): closed forms, then against the simulator."""

from __future__ import annotations

import pytest

from ipusim.hardware import load_system
from ipusim.plan import options
from ipusim.plan.search import measure
from ipusim.plan.space import bert_candidates

SYSTEM = "M2000"
MODEL = {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}


def test_compute_share_and_slowdown_closed_forms():
    tiles = load_system(SYSTEM).ipu.tiles  # 1472 on a GC200
    assert options.compute_share(SYSTEM, 0) == 1.0
    assert options.compute_share(SYSTEM, 32) == (tiles - 32) / tiles
    assert options.compute_share(SYSTEM, 31) == (tiles - 32) / tiles  # rounded up to even
    share = (tiles - 32) / tiles
    assert options.io_slowdown(1.0) == 1.0
    assert options.io_slowdown(share) == pytest.approx(1 + 0.03 * (32 / (tiles - 32)))


def test_stage_share_takes_tiles_only_on_the_host_io_ipus():
    """Stage 0 dequeues the infeed and the last stage enqueues the outfeed: only their IPUs
    give tiles to I/O (tests/session/test_io_tiles_ipus.py for the simulator)."""
    share = options.compute_share(SYSTEM, 32)
    assert [options.stage_share(share, s, 4) for s in range(4)] == [share, 1.0, 1.0, share]
    assert [options.stage_share(share, s, 2) for s in range(2)] == [share, share]
    assert options.stage_share(share, 0, 1) == share


def test_data_parallel_variant_with_io_tiles_against_its_sibling():
    """(used bytes, busiest tile / IPU fullness, s per micro-batch, s per update, budget,
    weights, infeed s per micro-batch): I/O tiles take the infeed off each micro-batch and
    slow the rest by io_slowdown; the busiest tile (1.01 times the IPU's fullness) is below
    the IPU's fullness over the compute tiles' budget (1 / share = 1.022), which then binds."""
    figures = (7.0e8, 1.01, 2.0e-3, 1.0e-3, 9.4e8, 1.0e8, 5.0e-5)
    variants = {
        io: (step, held)
        for (setting, io, step, held) in options.data_parallel_variants(
            figures, 10, SYSTEM, 1, ("on", False), (2, 2), fixed=("on", False)
        )
    }
    share = options.compute_share(SYSTEM, options.IO_TILES)
    assert variants[0] == (pytest.approx(10 * 2.0e-3 + 1.0e-3), pytest.approx(7.0e8))
    step, held = variants[options.IO_TILES]
    assert step == pytest.approx(10 * (2.0e-3 - 5.0e-5) * options.io_slowdown(share) + 1.0e-3)
    # Candidate.of reads held / budget * max(1, ratio) as the use: 7e8 / (9.4e8 * share).
    assert held / 9.4e8 * 1.01 == pytest.approx(7.0e8 / (9.4e8 * share))


@pytest.fixture(scope="module")
def cands():
    return bert_candidates({"system": SYSTEM, **MODEL}, 4, 80, "fp16.16", prune=False)


@pytest.mark.parametrize("want", [{"replicas": 4, "stages": 1}, {"replicas": 2, "stages": 2}])
def test_io_tile_candidates_memory_tracks_the_simulator(cands, want):
    """The estimated use of the budget (busiest tile included) of a plan with I/O tiles, on one
    IPU and on a Grouped 2-stage pipeline, within 5% of the simulated (measured: 0.2% and 2.6%),
    and the plan fits as simulated."""
    cand = next(
        c
        for c in cands
        if c.args.get("io-tiles") == options.IO_TILES
        and c.args.get("micro-batch") == 2
        and all(c.args.get(k) == v for k, v in want.items())
    )
    out = measure("bert", cand.args)
    assert out["fits"], out
    assert cand.memory == pytest.approx(out["memory_used"], rel=0.05), cand.args
