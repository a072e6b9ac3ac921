"""The AMP planner's costing of its candidate partitions: a vertex family's cycles plus exchange,
reduction and rearrangement, one array entry per candidate (see :mod:`ipusim.cost.amp`)."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ipusim.cost.amp_problem import WORKERS, AmpTarget, ConvProblem, IntArray, cdiv
from ipusim.cost.amp_small_groups import slic_cycles, vmac_cycles
from ipusim.cost.amp_splits import candidates, per_tile
from ipusim.cost.amp_vertices import (
    amp_1x1_cycles,
    amp_nx1_cycles,
    cast_cycles,
    reduction,
    transform_cycles,
)

__all__ = ["Candidates", "assemble", "evaluate_amp", "evaluate_slic", "evaluate_vmac"]


class Candidates(NamedTuple):
    """The costed candidate partitions of one pass, one entry per candidate (cycles on the
    slowest tile).

    Attributes:
        total: cycles of the pass (what the planner minimises).
        partial: vertex cycles.
        exchange: exchange cycles (inputs, weights, partials, later reduce stages, rearranging).
        exchange_bytes: bytes the slowest tile receives.
        reduce: reduction (and cast) cycles.
        transform: on-tile rearrangement cycles.
        sets: compute sets.
        temp: temporary bytes per tile.
        tiles: tiles used.
        field: output positions per tile.
        splits: (batch, rows, columns, kernel rows, in-channel groups, out-channel groups, conv
            groups) split counts, one row per candidate.
        out_group: output channels of one vertex group.
    """

    total: IntArray
    partial: IntArray
    exchange: IntArray
    exchange_bytes: IntArray
    reduce: IntArray
    transform: IntArray
    sets: IntArray
    temp: IntArray
    tiles: IntArray
    field: IntArray
    splits: IntArray
    out_group: IntArray


def _reductions(
    n_out: IntArray, depth: IntArray, target: AmpTarget
) -> tuple[IntArray, IntArray, IntArray]:
    """(cycles, exchange cycles of later stages, compute sets) of each candidate's reduction of
    its ``depth`` partials of ``n_out`` outputs (kernel-row and input-channel splits), or, with
    nothing to reduce, of its cast of float partials to half outputs."""
    reduce = np.zeros(len(depth), dtype=np.int64)
    later = np.zeros(len(depth), dtype=np.int64)
    sets = np.ones(len(depth), dtype=np.int64)
    deep = depth > 1
    for d in np.unique(depth[deep]).tolist():  # the candidates of each depth at once
        same = depth == d
        held = cdiv(n_out[same], d) * d  # outputs rounded up to a multiple of the depth
        cycles, exchange, stages = reduction(
            held, d, target.half_partials, target.exchange_bytes_per_cycle
        )
        reduce[same], later[same], sets[same] = cycles, exchange, 1 + stages
    if target.half_inputs and not target.half_partials:
        shallow = ~deep
        reduce[shallow] = cast_cycles(n_out[shallow])
        sets[shallow] += 1
    return reduce, later, sets


def assemble(
    problem: ConvProblem,
    target: AmpTarget,
    c: dict[str, IntArray],
    t: dict[str, IntArray],
    partial: IntArray,
    counts: tuple[IntArray, IntArray, IntArray],
    temp: IntArray,
    out_group: int,
) -> Candidates:
    """The fields :func:`~ipusim.cost.amp.plan_conv` compares, from a vertex's cycles
    ``partial`` and the tile's ``counts`` of input, weight and output elements: exchange (inputs
    duplicated over output channel splits, shared by a supertile's two tiles when those splits
    are even; weights duplicated over field splits; the partials), the reduction of partials
    over kernel-row and input-channel splits (or the cast of float partials to half outputs),
    rearrangements."""
    bs, hs, ws, ks, ics, ocs, gs = (c[n] for n in ("bs", "hs", "ws", "ks", "ics", "ocs", "gs"))
    n_in, n_w, n_out = counts
    exb = target.exchange_bytes_per_cycle
    in_bytes = target.input_bytes * (n_in - n_in // ocs)
    w_bytes = target.input_bytes * (n_w - n_w // (bs * hs * ws))
    out_bytes = target.partial_bytes * n_out
    supertile = np.where(ocs % 2 == 0, 2, 1)
    exchange = (
        np.ceil(in_bytes / (exb * supertile)) + np.ceil(w_bytes / exb) + np.ceil(out_bytes / exb)
    ).astype(np.int64)
    reduce, later, sets = _reductions(n_out, ks * ics, target)
    tiles = bs * hs * ws * ks * ics * ocs * gs
    transform = np.zeros(len(bs), dtype=np.int64)
    transform_x = np.zeros(len(bs), dtype=np.int64)
    if problem.transform_elements:
        transform, transform_x = transform_cycles(
            cdiv(problem.transform_elements, tiles), target.input_bytes
        )
        sets += 1
    total = exchange + later + transform_x + partial + reduce + transform
    return Candidates(
        total,
        partial,
        exchange + later + transform_x,
        in_bytes + w_bytes + out_bytes,
        reduce,
        transform,
        sets,
        temp,
        tiles,
        t["b"] * t["h"] * t["w"],
        np.stack([bs, hs, ws, ks, ics, ocs, gs], axis=1),
        np.full(len(bs), out_group, dtype=np.int64),
    )


def evaluate_amp(
    problem: ConvProblem, target: AmpTarget, units: int, ocpg: int, icpg: int
) -> Candidates | None:
    """The candidates of ``problem`` on the AMP vertex with ``units`` engines, ``ocpg`` output
    and ``icpg`` input channels per group (None when no partition fits the tiles)."""
    icg = -(-problem.cin // icpg)
    ocg = -(-problem.cout // ocpg)
    c = candidates(problem, target.tiles, icg, ocg)
    if len(c["bs"]) == 0:
        return None
    t = per_tile(problem, c, icg, ocg, problem.groups)
    b, h, w, k, ig, og, cg = (t[n] for n in ("b", "h", "w", "k", "ig", "og", "cg"))
    n_in = t["in_h"] * t["in_w"] * b * ig * icpg * cg
    n_w = k * problem.kw * ig * icpg * og * ocpg * cg
    n_out = h * w * b * og * ocpg * cg
    temp = target.input_bytes * (n_in + n_w) + target.partial_bytes * n_out
    if problem.flat:
        partial = amp_1x1_cycles(w, ig, og, cg, units, ocpg, target)
    else:
        partial = amp_nx1_cycles(
            b, h, w, k, problem.kw, ig, og, cg, units, ocpg, target.in_group // icpg, target
        )
    return assemble(problem, target, c, t, partial, (n_in, n_w, n_out), temp, ocpg)


def evaluate_vmac(problem: ConvProblem, target: AmpTarget, cgpg: int) -> Candidates | None:
    """:func:`evaluate_amp` for the VMAC vertex: conv groups in groups of ``cgpg``, input channels
    one at a time, one output channel (see :func:`vmac_applies`)."""
    group_groups = -(-problem.groups // cgpg)
    c = candidates(replace(problem, groups=group_groups), target.tiles, problem.cin, 1)
    if len(c["bs"]) == 0:
        return None
    t = per_tile(problem, c, problem.cin, 1, group_groups)
    b, h, w, k, ig, cg = (t[n] for n in ("b", "h", "w", "k", "ig", "cg"))
    n_in = t["in_h"] * t["in_w"] * b * ig * cgpg * cg
    n_w = k * problem.kw * ig * cgpg * cg
    n_out = h * w * b * cgpg * cg
    # Every worker keeps partials for the whole tile output (poplin ConvModel.cpp, VMAC).
    temp = target.input_bytes * (n_in + n_w) + target.partial_bytes * WORKERS * n_out
    partial = vmac_cycles(b, h, w, k, problem.kw, ig, cg, cgpg, target)
    return assemble(problem, target, c, t, partial, (n_in, n_w, n_out), temp, 1)


def evaluate_slic(
    problem: ConvProblem, target: AmpTarget, cgpg: int, chans: int, chains: int
) -> Candidates | None:
    """:func:`evaluate_amp` for a SLIC vertex: ``cgpg`` conv groups of ``chans`` input and output
    channels per pass; each tile holds exactly one input and one output channel group (poplin
    ``ConvModel.cpp``), so the channels are split over tiles in groups of ``chans``."""
    if problem.groups < cgpg and cgpg > 1:
        return None
    icg = -(-problem.cin // chans)
    ocg = -(-problem.cout // chans)
    group_groups = -(-problem.groups // cgpg)
    c = candidates(replace(problem, groups=group_groups), target.tiles, icg, ocg)
    keep = (c["ics"] == icg) & (c["ocs"] == ocg)
    c = {name: values[keep] for name, values in c.items()}
    if len(c["bs"]) == 0:
        return None
    t = per_tile(problem, c, icg, ocg, group_groups)
    b, h, w, k, cg = (t[n] for n in ("b", "h", "w", "k", "cg"))
    n_in = t["in_h"] * t["in_w"] * b * chans * cgpg * cg
    n_w = k * problem.kw * chans * chans * cgpg * cg
    n_out = h * w * b * chans * cgpg * cg
    temp = target.input_bytes * (n_in + n_w) + target.partial_bytes * n_out
    partial = slic_cycles(
        b * h * w, w, k, problem.kw, cg, cgpg, chans, chains, problem.stride, target
    )
    return assemble(problem, target, c, t, partial, (n_in, n_w, n_out), temp, chans)
