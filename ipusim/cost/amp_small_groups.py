"""Cycles of the vertices for few channels per conv group, in half precision: SLIC (the conv units
on 1x4 windows) and VMAC (vertical multiply-accumulate on the workers); see
:mod:`ipusim.cost.amp`."""

from __future__ import annotations

from typing import overload

import numpy as np

from ipusim.cost.amp_problem import WORKERS, AmpTarget, ConvProblem, Count, IntArray, cdiv
from ipusim.cost.amp_vertices import worker_pieces


def vmac_group_sizes(target: AmpTarget) -> tuple[int, ...]:
    """Conv groups one VMAC vertex processes together (poplin ``getConvVertexVMACCandidates``):
    the half vector width, 4, and 8 and 16 with half partials."""
    return (4, 8, 16) if target.half_partials else (4,)


def vmac_applies(problem: ConvProblem, target: AmpTarget) -> bool:
    """Whether the VMAC vertex can run ``problem``: half activations, one output channel per conv
    group (poplin ``ConvVertexType.cpp``; its input channels are processed one at a time)."""
    return target.half_inputs and problem.cout == 1 and problem.groups > 1 and not problem.flat


@overload
def _vmac_dot(size: int, channels: int) -> int: ...
@overload
def _vmac_dot(size: IntArray, channels: int) -> IntArray: ...
def _vmac_dot(size: IntArray | int, channels: int) -> IntArray | int:
    """Worker cycles of one VMAC dot product of ``size`` taps over ``channels`` conv groups
    (poplibs ``getVerticalMacDotProductCycles``)."""
    per_tap, group = (3, 8) if channels >= 8 else (2, 4)
    cycles: IntArray | int = 3 + per_tap * (size - 1) * (channels // group)
    return cycles


def _vmac_worker(
    entries_whole: IntArray,
    entries_part: IntArray,
    kw: int,
    part_size: IntArray,
    cgpg: int,
    float_partials: bool,
) -> IntArray:
    """Cycles of the busiest worker: ``entries_whole`` dot products of ``kw`` taps and
    ``entries_part`` of ``part_size`` (poplibs ``getConvPartialVerticalMacCycleEstimate``)."""
    if cgpg >= 8 and not float_partials:
        per8 = entries_whole * (7 + 15 + _vmac_dot(kw, 8)) + entries_part * (
            7 + 15 + _vmac_dot(part_size, 8)
        )
        return (13 if cgpg == 8 else 25) + per8 * (1 if cgpg == 8 else 2)
    store = 5 if float_partials else 3
    return (
        (19 if float_partials else 18)
        + entries_whole * (7 + store + _vmac_dot(kw, cgpg))
        + entries_part * (7 + store + _vmac_dot(part_size, cgpg))
    )


def vmac_cycles(
    b: IntArray,
    h: IntArray,
    w: IntArray,
    k: IntArray,
    kw: int,
    ig: IntArray,
    cg: IntArray,
    cgpg: int,
    target: AmpTarget,
) -> IntArray:
    """``ConvPartialVerticalMac`` supervisor cycles of one tile (poplibs
    ``estimateConvPartialVerticalMacInnerLoopCycles`` and the supervisor estimates of
    ``PerformanceEstimation.hpp``): the tile's output positions are dealt to the 6 workers
    (positions cut into ``6 / gcd(6, n)`` parts when they do not divide evenly), each worker
    takes one dot product of ``kw`` taps per position and kernel row into its own partials,
    and the workers' partials are then zeroed and summed (every worker's partials span the whole
    tile output)."""
    float_partials = not target.half_partials
    rows = b * h * w
    split = WORKERS // np.gcd(WORKERS, rows)
    max_part_rows = cdiv(rows * split, WORKERS)
    whole, part = max_part_rows // split, max_part_rows % split
    part_size = cdiv(kw, split)
    worker = _vmac_worker(k * whole, k * part, kw, part_size, cgpg, float_partials)
    inner = WORKERS * worker
    out_elems = rows * cgpg
    zero = 4 + cdiv(out_elems, 2 if float_partials else 4)
    fp = 1 if float_partials else 0
    per_worker = cdiv(out_elems, WORKERS)
    reduce = (
        10 - fp + ((7 + 2 * fp + (2 if float_partials else 1) * (WORKERS - 1)) * per_worker) // cgpg
    )
    outer = 32 + ig * (24 + inner)
    return 61 + 14 + 25 + fp + (zero + outer + reduce) * cg


#: SLIC groupings (conv groups per group, channels per group) for half activations (S: poplin
#: ``getConvVertexSLICCandidates``); 8 and 16 conv groups need half partials and 16 conv units.
_SLIC_GROUPINGS = ((1, 4), (2, 2), (4, 1))
_SLIC_WIDE_GROUPINGS = ((8, 1), (16, 1))
#: Kernel taps one SLIC pass applies along a row (S: poplin, the 1x4 window).
SLIC_WINDOW = 4


def slic_vertex_types(target: AmpTarget) -> list[tuple[int, int, int]]:
    """(conv groups per group, channels per group, conv-unit chains) of the SLIC vertices that
    can run at ``target``'s precision (poplin ``getConvVertexSLICCandidates``)."""
    if not target.half_inputs:
        return []
    if target.half_partials:
        chains = ([4] if target.engines == 16 else []) + [2]
        groupings = _SLIC_GROUPINGS + (_SLIC_WIDE_GROUPINGS if target.engines == 16 else ())
    else:
        chains, groupings = [2], _SLIC_GROUPINGS
    return [(g, ch, n) for n in chains for g, ch in groupings]


def slic_applies(problem: ConvProblem) -> bool:
    """Whether a SLIC vertex can run ``problem``: a convolution pass (not a matrix product:
    poplin leaves SLIC out of fully-connected plans) with an output stride of 1 or 2."""
    return not problem.flat and problem.stride <= 2


def _slic_rows(
    n: IntArray, stride: int, zeroing: bool, half8: bool, float_partials: bool
) -> IntArray:
    """Worker cycles of one output row piece of ``n`` positions in one SLIC pass (poplibs
    ``getConvPartialSlicSupervisorInnerLoopCycleEstimateHalfFloat``)."""
    if stride == 1:
        threshold = 6 if half8 else 5
        if zeroing:
            short = 10 + np.where(n > 1, n, 0) + 3
            long = 15 + (n - 5)
        else:
            short = np.where(n == 1, 7 + 6, 7 + 1 + (n - 1) + 2 + (4 - n) + 2 + (3 - (4 - n)) + 3)
            long = 15 + (n - 5) + (3 if half8 else 0)
        cycles = np.where(n < threshold, short, long)
    else:
        cycles = np.where(n < 3, 7 + np.where(n == 1, 3, 5) + 3, 15 + 2 * (n - 3))
    return cycles - (1 if float_partials else 0)


def _slic_inner(
    field: IntArray,
    width: IntArray,
    stride: int,
    cgpg: int,
    chains: int,
    zeroing: bool,
    target: AmpTarget,
) -> IntArray:
    """Tile cycles of all workers' pass over the tile's output for one conv-group stride and
    one sub-kernel: the positions are dealt to the 6 workers in contiguous ranges cut at row
    ends (each worker's pieces are charged at their mean length: E)."""
    float_partials = not target.half_partials
    half8 = chains == 2 and not float_partials
    passes = 1 if chains == 4 else 2
    preamble = 2 + (2 if half8 else 3) + 1 + 2 + 4 + 2 + 2 + 1 + (1 if half8 else 0)
    preamble += 4 if cgpg > 4 else 0
    count, pieces = worker_pieces(field, width)
    mean = np.maximum(count // np.maximum(pieces, 1), 1)
    per_piece = (
        (9 if half8 else 10)
        + (1 if zeroing else 0)
        + (3 if float_partials else 0)
        + passes * _slic_rows(mean, stride, zeroing, half8, float_partials)
    )
    worker = np.where(pieces > 0, preamble + pieces * per_piece + (2 if half8 else 0), 0)
    copy = 2 + 2 * field if half8 and zeroing else 0
    cycles: IntArray = WORKERS * worker.max(axis=1) + copy
    return cycles


def _slic_weight_load(cgpg: int, chans: int) -> int:
    """Supervisor cycles of loading one sub-kernel's weights (poplibs
    ``getConvPartialSlicSupervisorWeightLoadCycleEstimate``)."""
    if chans == 4:
        return 6 + 6 + 6 + 16
    per_worker = (12 if cgpg == 2 else 10) + (1 if cgpg > 4 else 0)
    return 9 + 6 + per_worker * WORKERS + 6 + 16


def slic_cycles(
    field: IntArray,
    width: IntArray,
    k: IntArray,
    kw: int,
    cg: IntArray,
    cgpg: int,
    chans: int,
    chains: int,
    stride: int,
    target: AmpTarget,
) -> IntArray:
    """``ConvPartialSlic`` supervisor cycles of one tile (poplibs
    ``getConvPartialSlicSupervisorOuterLoopCycleEstimateHalfFloat``): the first sub-kernel
    (kernel row x 4-tap window) zeroes the partials as it goes, the others accumulate; 8 and 16
    conv groups run as 2 or 4 strides of 4. As in the estimator, only the accumulating passes
    are charged per stride."""
    float_partials = not target.half_partials
    half8 = chains == 2 and not float_partials
    sub_kernels = k * -(-kw // SLIC_WINDOW)
    zeroing = _slic_inner(field, width, stride, cgpg, chains, True, target)
    inner = _slic_inner(field, width, stride, cgpg, chains, False, target)
    load = _slic_weight_load(cgpg, chans)

    def brnzdec(n: Count) -> Count:
        cycles: Count = 6 * (n - 1) + 1
        return cycles

    group_body = 12 if half8 else 15
    if cgpg <= 4:
        sub_body = load + (0 if half8 else 3) + 2 + (0 if half8 else 1) + 6 + 1 + 6 + 1
    else:
        strides = cgpg // 4
        stride_body = load + 6 + 1 + 6 + 2 + 6
        sub_body = stride_body * strides + brnzdec(strides) + 2 + 2 + 6 + 3 + 2
        group_body += 2 + 6
        inner = inner * strides
    cycles: IntArray = (
        (25 if half8 else 28)
        + group_body * cg
        + brnzdec(cg)
        + sub_body * sub_kernels
        + brnzdec(sub_kernels)
        + cg * zeroing
        + cg * (sub_kernels - 1) * inner
    )
    return cycles
