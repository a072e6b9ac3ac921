"""The AMP planner's array code against plain loops: its candidate partitions are every conv-group,
kernel-row, input- and output-channel split that fits the tiles, each with the finest field splits
that fit the tiles left; its reductions cost each candidate as one scalar reduction would."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ipusim.cost.amp_problem import ConvProblem
from ipusim.cost.amp_splits import candidates, split_counts
from ipusim.cost.amp_vertices import reduction

PROBLEMS = [
    ConvProblem(1, 1, 4096, 1, 4096, 1, 1, 1, 64, 64, flat=True),
    ConvProblem(8, 28, 28, 30, 30, 3, 3, 1, 4, 6),
    ConvProblem(2, 14, 14, 20, 20, 7, 7, 1, 1, 1, groups=96),
    ConvProblem(32, 7, 7, 9, 9, 3, 3, 1, 32, 32, groups=4),
]


def _naive_candidates(problem: ConvProblem, tiles: int, icg: int, ocg: int) -> list[tuple]:
    """(batch, rows, columns, kernel rows, in, out, conv-group splits), by nested loops."""
    field = [
        (b, h, w)
        for b in range(1, problem.batch + 1)
        for h in range(1, problem.out_h + 1)
        for w in range(1, problem.out_w + 1)
    ]
    # Distinct per-tile sizes only (the smallest split count giving each), finest first.
    sizes = {}
    for b, h, w in field:
        key = (-(-problem.batch // b), -(-problem.out_h // h), -(-problem.out_w // w))
        sizes.setdefault(key, (b, h, w))
    options = sorted(sizes.values(), key=lambda s: (math.prod(_per_tile(problem, s)), math.prod(s)))
    out = []
    for gs in split_counts(problem.groups):
        for ks in split_counts(problem.kh) if problem.kh > 1 else (1,):
            for ics in split_counts(icg):
                for ocs in split_counts(ocg):
                    used = gs * ks * ics * ocs
                    if used > tiles:
                        continue
                    fits = [s for s in options if math.prod(s) <= tiles // used][:4]
                    out += [(*s, ks, ics, ocs, gs) for s in fits]
    return out


def _per_tile(problem: ConvProblem, split: tuple[int, int, int]) -> tuple[int, int, int]:
    b, h, w = split
    return -(-problem.batch // b), -(-problem.out_h // h), -(-problem.out_w // w)


@pytest.mark.parametrize("problem", PROBLEMS[1:])  # the flat field is too long for the loops
@pytest.mark.parametrize("tiles", [1472, 64, 5])
def test_candidates_are_the_splits_a_plain_loop_finds(problem: ConvProblem, tiles: int) -> None:
    icg, ocg = -(-problem.cin // 4), -(-problem.cout // 2)
    c = candidates(problem, tiles, icg, ocg)
    got = list(zip(*(c[n].tolist() for n in ("bs", "hs", "ws", "ks", "ics", "ocs", "gs"))))
    want = _naive_candidates(problem, tiles, icg, ocg)
    # The same partitions in the same order, up to ties in the field order.
    assert sorted(got) == sorted(want)
    assert [g[3:] for g in got] == [w[3:] for w in want]


def test_candidates_respect_the_tile_count() -> None:
    c = candidates(PROBLEMS[0], 1472, 4, 4)
    used = c["bs"] * c["hs"] * c["ws"] * c["ks"] * c["ics"] * c["ocs"] * c["gs"]
    assert len(used) and used.max() <= 1472


def _naive_reduction(outputs: int, depth: int, half: bool, exb: float) -> tuple[int, int, int]:
    """poplin's reduce plan (1 stage below 16 partials, 2 below 125, else 3) on one tile."""
    stages = 3 if depth >= 125 else 2 if depth >= 16 else 1
    plan, left = [], depth
    for s in range(stages, 0, -1):
        per = min(max(2, round(left ** (1 / s))) if s > 1 else left, left)
        plan.append(per)
        left = -(-left // per)
    cycles = exchange = sets = 0
    held = outputs
    for stage, partials in enumerate(p for p in plan if p > 1):
        held = -(-held // partials)
        acc = 8 if half else 4
        loops = held // acc + bin(held % acc).count("1")
        cycles += 6 * (32 + ((3 if half else 2) * partials + 8) * -(-loops // 6))
        if stage:
            exchange += math.ceil(held * partials * (2 if half else 4) / exb)
        sets += 1
    return cycles, exchange, sets


@pytest.mark.parametrize("depth", [2, 3, 15, 16, 100, 124, 125, 1000])
@pytest.mark.parametrize("half", [True, False])
def test_reduction_of_every_candidate_is_the_scalar_reduction(depth: int, half: bool) -> None:
    outputs = np.array([1, 7, 8, 9, 1000, 12345, 10**7], dtype=np.int64) * depth
    cycles, exchange, sets = reduction(outputs, depth, half, 4.0)
    want = [_naive_reduction(int(o), depth, half, 4.0) for o in outputs]
    assert cycles.tolist() == [w[0] for w in want]
    assert exchange.tolist() == [w[1] for w in want]
    assert {sets} == {w[2] for w in want}
