"""Cycles of the AMP conv-unit vertices, of the reduction of their partials and of rearrangements
(graphcore/poplibs ``PerformanceEstimation.hpp``, ``ConvReducePlan.cpp``; see
:mod:`ipusim.cost.amp`)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ipusim.cost.amp_problem import (
    COEFF_LOAD_BYTES_PER_CYCLE,
    WORKERS,
    AmpTarget,
    IntArray,
    cdiv,
)


def _worker_positions(n: IntArray) -> tuple[IntArray, IntArray]:
    """Positions of the busiest and the idlest worker when ``n`` positions are split in 6."""
    i = np.arange(WORKERS)
    counts = (n[:, None] * (i + 1)) // WORKERS - (n[:, None] * i) // WORKERS
    return counts.max(axis=1), counts.min(axis=1)


def worker_pieces(n: IntArray, width: IntArray) -> tuple[IntArray, ...]:
    """(positions, row pieces) of every worker: ``n`` positions in rows of ``width`` are cut into
    6 contiguous ranges, each cut again at row ends (poplin ``partitionConvPartialByWorker``)."""
    i = np.arange(WORKERS)
    start = (n[:, None] * i) // WORKERS
    end = (n[:, None] * (i + 1)) // WORKERS
    count = end - start
    w = width[:, None]
    pieces = np.where(count > 0, (end - 1) // w - start // w + 1, 0)
    return count, pieces


def amp_1x1_cycles(
    field: IntArray,
    ig: IntArray,
    og: IntArray,
    cg: IntArray,
    units: int,
    ocpg: int,
    target: AmpTarget,
) -> IntArray:
    """``ConvPartial1x1Out`` supervisor cycles (poplibs ``PerformanceEstimation.hpp``)."""
    common = units == 16 or not target.half_partials
    half = target.half_inputs
    ret = 7 if half and common else 0
    pmax, pmin = _worker_positions(field)

    def worker(p: IntArray, zero: int) -> IntArray:
        if not half:  # fp32 activations
            zc = 8 if units == 16 else 4
            big = 46 + zero * (2 + zc * p) + 8 * (p - 3)
            small = np.select(
                [p == 0, p == 1], [24, 47 + zero * (2 + zc)], 46 + zero * (2 + 2 * zc)
            )
        elif common:
            big = (37 if zero else 38) + 4 * (p - 3)
            small = np.select([p == 0, p == 1], [20, 31], 40) + (1 if zero else 2)
        else:
            big = 41 + zero * (2 + 2 * p) + 4 * (p - 3)
            small = np.select([p == 0, p == 1], [24, 39 + 4 * zero], 40 + 6 * zero)
        cycles: IntArray = np.where(p >= 3, big, small) - ret
        return cycles

    def inner(zero: int) -> IntArray:
        busiest = WORKERS * worker(pmax, zero)
        idlest = np.where(field >= WORKERS, WORKERS * worker(pmin, zero), 0) + 14
        slowest: IntArray = np.maximum(busiest, idlest)
        return slowest

    loads = 32 * units // COEFF_LOAD_BYTES_PER_CYCLE
    passes = -(-ocpg // units)
    c = 1 if common else 0
    r2 = 3 if ret else 0
    cycles: IntArray = (
        50
        + WORKERS * (ret + r2 * (ig * cg - 1))
        + cg
        * (
            12
            + c
            + (ig - 1) * (16 - c + og * (19 + passes * (6 + loads + inner(0))))
            + 11
            + og * (19 - c + passes * (7 + loads + inner(1)))
        )
    )
    return cycles


def amp_nx1_cycles(
    b: IntArray,
    h: IntArray,
    w: IntArray,
    k: IntArray,
    kw: int,
    ig: IntArray,
    og: IntArray,
    cg: IntArray,
    units: int,
    ocpg: int,
    weight_height: int,
    target: AmpTarget,
) -> IntArray:
    """``ConvPartialnx1`` supervisor cycles plus zeroing the partials (poplibs
    ``PerformanceEstimation.hpp``); a row piece costs ``16 + 4n`` worker cycles for fp16 inputs
    (``15 + 8n`` for fp32)."""
    float_partials = not target.half_partials
    positions, pieces = worker_pieces(b * h * w, w)
    per_piece, per_position = (16, 4) if target.half_inputs else (15, 8)
    per_worker = 17 + (0 if float_partials else 1) + per_piece * pieces + per_position * positions
    per_worker = np.where(positions > 0, per_worker, 0)
    busiest = per_worker.max(axis=1)
    idlest = np.where((positions > 0).all(axis=1), per_worker.min(axis=1), 0)
    passes = ocpg // units if ocpg >= units else 1
    per_tap = np.maximum(WORKERS * busiest, WORKERS * idlest + 9) * passes
    loads = 32 * units // COEFF_LOAD_BYTES_PER_CYCLE
    innermost = loads + {1: 15, 2: 46, 4: 60}.get(weight_height, 20 * weight_height) + 3
    k_outer = cdiv(k, weight_height)
    inner = k_outer * (14 + kw * (12 + passes * innermost)) + k_outer * kw * per_tap
    zr = 9 if float_partials else 10
    core = (
        109
        + 54
        + WORKERS * zr
        + cg * (og * 17 + (og - 1) * 6 + 1)
        + (cg - 1) * 6
        + 1
        + cg * (16 + ig * (14 + og * (14 + inner)))
    )
    field = b * h * w
    zero = WORKERS * og * cg * (cdiv(cdiv(field * ocpg, WORKERS), 2) + 5)
    cycles: IntArray = core + zero
    return cycles


@lru_cache(maxsize=4096)
def _reduce_plan(depth: int) -> tuple[int, ...]:
    """Partials reduced per stage (poplin ``ConvReducePlan.cpp``): 1 stage below 16, 2 below
    125, else 3, each about depth^(1/stages)."""
    if depth <= 1:
        return ()
    stages = 3 if depth >= 125 else 2 if depth >= 16 else 1
    out = []
    left = depth
    for s in range(stages, 0, -1):
        per = max(2, round(left ** (1 / s))) if s > 1 else left
        per = min(per, left)
        out.append(per)
        left = -(-left // per)
    return tuple(p for p in out if p > 1)


#: Set bits of 0..7: the single loads after a reduce vertex's vectorised ones.
_POPCOUNT = np.array([bin(i).count("1") for i in range(8)], dtype=np.int64)


def _reduce_stage_cycles(outputs: IntArray, partials: int, half: bool) -> IntArray:
    """One reduce stage on a tile (poplibs ``getReduceCycleEstimate``, multi-input path), for
    each candidate."""
    acc = 8 if half else 4
    per_load = 3 if half else 2
    loops = outputs // acc + _POPCOUNT[outputs % acc]
    per_worker = cdiv(loops, WORKERS)
    cycles: IntArray = WORKERS * (32 + (per_load * partials + 8) * per_worker)
    return cycles


def reduction(
    outputs: IntArray, depth: int, half_partials: bool, exchange_bpc: float
) -> tuple[IntArray, IntArray, int]:
    """(cycles, exchange cycles, compute sets) of reducing ``depth`` partials of ``outputs``
    outputs held per tile, for each candidate."""
    cycles = np.zeros(len(outputs), dtype=np.int64)
    exchange = np.zeros(len(outputs), dtype=np.int64)
    held = outputs
    plan = _reduce_plan(depth)
    for stage, partials in enumerate(plan):
        held = cdiv(held, partials)
        cycles += _reduce_stage_cycles(held, partials, half_partials)
        if stage:  # later stages first gather their partials from other tiles
            part_bytes = 2 if half_partials else 4
            exchange += np.ceil(held * partials * part_bytes / exchange_bpc).astype(np.int64)
    return cycles, exchange, len(plan)


def cast_cycles(outputs: IntArray) -> IntArray:
    """fp32 partials to fp16 outputs (poplibs ``estimateCastCycles``): about 0.5 cycle each,
    for each candidate."""
    per = cdiv(outputs, WORKERS)
    cycles: IntArray = WORKERS * (np.maximum(cdiv(per, 2), cdiv(per, 4)) + 26)
    return cycles


def transform_cycles(elements_per_tile: IntArray, element_bytes: int) -> tuple[IntArray, IntArray]:
    """(copy cycles, exchange cycles) of rearranging ``elements_per_tile`` elements on a tile
    (poplin ``addTransformCycleEstimate``: ``bytes × 5 / (min(memcpy 8 B, element) × 4)`` to copy,
    ``bytes / 4`` to exchange), rounded up, for each candidate."""
    num_bytes = elements_per_tile * element_bytes
    return cdiv(num_bytes * 5, min(8, element_bytes) * 4), cdiv(num_bytes, 4)


def amp_vertex_types(target: AmpTarget) -> list[tuple[int, int]]:
    """(engines, partial channels per group) candidates (poplin ``getConvVertexAMPCandidates``)."""
    units = [target.engines] + ([8] if target.engines == 16 else [])
    out = []
    for u in units:
        for ocpg in sorted({u, 16, 8}):
            if ocpg % u == 0:
                out.append((u, ocpg))
    return out
