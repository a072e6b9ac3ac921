"""Convolutions and matrix products on the AMP units, planned the way Poplar's poplin plans them.

This restates, in our own notation, the cost model of Graphcore's convolution planner
(graphcore/poplibs ``lib/poplin/ConvModel.cpp``, ``ConvPlan.cpp``, ``PerformanceEstimation.hpp``,
``ExchangeEstimator.hpp``; file and line references in ``docs/validation.md``). Every number below
is in tile cycles.

- **Matmul as convolution.** ``A[M, K] @ B[K, N]`` is a 1-D convolution with a field of N output
  positions, K input and M output channels ("swapped operands", what the planner picks for
  matmuls; the unswapped form pays to rearrange inputs, weights and outputs). Batched products
  (attention) are conv groups. A 1×1, stride-1 convolution flattens batch and field into one
  field dimension (the ``ConvPartial1x1Out`` vertex); other kernels use ``ConvPartialnx1``.
- **AMP passes.** A vertex walks (input-channel group × output-channel group × kernel position)
  passes. Each pass loads the AMP's weights (``4 × engines`` cycles with 64-bit coefficient
  loads), pays supervisor and worker start-up, then streams the tile's field positions at 4 cycles
  (fp16 inputs) or 8 cycles (fp32) per position, the positions split over 6 worker threads. The
  engines come from the chip's AMP rate: 16 for fp16 with fp16 partials on a GC200, 8 with fp32
  partials, 8 on a GC2.
- **Partition.** The planner splits batch, field rows and columns, kernel rows, input-channel
  groups, output-channel groups and conv groups over the tiles; the slowest (ceil-sized) tile
  decides. Each channel/kernel split is paired with the field splits that leave the fewest field
  positions per tile on the remaining tiles.
- **Exchange** per tile: the inputs it lacks (shared by the two tiles of a supertile when the
  output channels are split evenly), the weights duplicated over field splits, and the partials,
  at 4 bytes per cycle.
- **Reduction** of partials over input-channel and kernel splits, in 1 to 3 stages, each a compute
  set; a cast when fp32 partials feed fp16 outputs.
- **Temporary memory** per tile (operand slices and partials) must fit in
  ``availableMemoryProportion`` of the tile; the bound is doubled until a plan fits, as Poplar does.
- **SLIC and VMAC.** In half precision a convolution pass with few channels per conv group
  (depthwise) may instead run on SLIC (the conv units on 1x4 windows of 4, 8 or 16 conv groups
  of one channel, 2 of 2 or 1 of 4; each tile holds one input and one output channel group)
  or, with one output channel per group, on the workers' vertical multiply-accumulate vertex
  (VMAC, 4, 8 or 16 conv groups at a time): the planner takes the cheapest.

Approximations (documented in docs/validation.md): the worker split of the field counts row
pieces exactly but charges pieces of 1-2 positions like longer ones (and SLIC charges a
worker's pieces at their mean length); serial splits, the HMAC vertex and expandDims are not
searched; field splits are the few finest for each channel split.

Where it lives: :mod:`~ipusim.cost.amp_problem` (target, problem, plan),
:mod:`~ipusim.cost.amp_splits` (candidate partitions), :mod:`~ipusim.cost.amp_vertices` and
:mod:`~ipusim.cost.amp_small_groups` (vertex, reduction and rearrangement cycles),
:mod:`~ipusim.cost.amp_costing` (each candidate's cost, all candidates at once); this module picks
the plan.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ipusim.cost.amp_costing import Candidates, evaluate_amp, evaluate_slic, evaluate_vmac
from ipusim.cost.amp_problem import DEFAULT_MEMORY_PROPORTION, AmpTarget, ConvPlan, ConvProblem
from ipusim.cost.amp_small_groups import (
    slic_applies,
    slic_vertex_types,
    vmac_applies,
    vmac_group_sizes,
)
from ipusim.cost.amp_vertices import amp_vertex_types

__all__ = [
    "DEFAULT_MEMORY_PROPORTION",
    "AmpTarget",
    "ConvPlan",
    "ConvProblem",
    "matmul_problems",
    "plan_conv",
    "plan_matmul",
    "slic_applies",
    "vmac_applies",
]


def _costed(problem: ConvProblem, target: AmpTarget) -> tuple[list[Candidates], list[str]]:
    """The costed candidates of ``problem`` on each vertex family that can run it, and the family
    of each candidate (``"AMP"``, ``"VMAC"`` or ``"SLIC"``)."""
    results: list[Candidates] = []
    methods: list[str] = []

    def add(method: str, costed: Candidates | None) -> None:
        if costed is not None:
            results.append(costed)
            methods.extend([method] * len(costed.total))

    icpgs = [target.in_group]
    if problem.cin < target.in_group:  # fold kernel rows into the AMP's inputs (weight height)
        icpgs = [g for g in (2, 4, 8, 16) if g < target.in_group and g >= problem.cin][:1] or icpgs
    for units, ocpg in amp_vertex_types(target):
        for icpg in icpgs:
            add("AMP", evaluate_amp(problem, target, units, ocpg, icpg))
    if vmac_applies(problem, target):
        for cgpg in vmac_group_sizes(target):
            add("VMAC", evaluate_vmac(problem, target, cgpg))
    if slic_applies(problem):
        for cgpg, chans, chains in slic_vertex_types(target):
            add("SLIC", evaluate_slic(problem, target, cgpg, chans, chains))
    return results, methods


@lru_cache(maxsize=8192)
def plan_conv(
    problem: ConvProblem, target: AmpTarget, memory_proportion: float = DEFAULT_MEMORY_PROPORTION
) -> ConvPlan:
    """The fastest plan of ``problem`` whose temporary memory fits ``memory_proportion`` of a
    tile (doubling the bound up to twice the tile, then unbounded, as Poplar retries); ties go
    to the plan on fewer tiles."""
    results, methods = _costed(problem, target)
    if not results:
        raise ValueError(f"no AMP plan for {problem}")
    c = Candidates(*(np.concatenate(column) for column in zip(*results, strict=True)))
    bound = memory_proportion * target.bytes_per_tile
    while not (c.temp <= bound).any() and bound < 2 * target.bytes_per_tile:
        bound *= 2
    fits = c.temp <= bound
    if not fits.any():
        fits = np.ones(len(c.total), dtype=bool)
    index = np.flatnonzero(fits)
    best = index[np.lexsort((c.tiles[index], c.total[index]))[0]]
    return ConvPlan(
        splits=tuple(int(x) for x in c.splits[best]),
        tiles=int(c.tiles[best]),
        partial_cycles=int(c.partial[best]),
        exchange_cycles=int(c.exchange[best]),
        exchange_bytes=int(c.exchange_bytes[best]),
        reduce_cycles=int(c.reduce[best]),
        transform_cycles=int(c.transform[best]),
        compute_sets=int(c.sets[best]),
        temp_bytes=int(c.temp[best]),
        field_per_tile=int(c.field[best]),
        problem=problem,
        out_chans_per_group=int(c.out_group[best]),
        method=methods[best],
    )


def matmul_problems(
    m: int, n: int, k: int, groups: int = 1, transform_elements: int = 0
) -> tuple[ConvProblem, ConvProblem]:
    """The two orientations of ``groups`` products ``[m, k] @ [k, n]``: swapped (field n, m
    output channels) and unswapped (field m, n output channels; its operands and output are
    rearranged). ``transform_elements`` are rearranged in both (a weight-update pass's acts and
    gradients)."""
    swapped = ConvProblem(
        1, 1, n, 1, n, 1, 1, 1, k, m, groups, flat=True, transform_elements=transform_elements
    )
    rearranged = transform_elements + groups * (m * k + k * n + m * n)
    unswapped = ConvProblem(
        1, 1, m, 1, m, 1, 1, 1, k, n, groups, flat=True, transform_elements=rearranged
    )
    return swapped, unswapped


def plan_matmul(
    m: int,
    n: int,
    k: int,
    target: AmpTarget,
    groups: int = 1,
    memory_proportion: float = DEFAULT_MEMORY_PROPORTION,
    transform_elements: int = 0,
) -> ConvPlan:
    """The cheaper orientation of ``groups`` products ``[m, k] @ [k, n]``."""
    plans = [
        plan_conv(p, target, memory_proportion)
        for p in matmul_problems(m, n, k, groups, transform_elements)
    ]
    return min(plans, key=lambda p: (p.cycles, p.tiles))
