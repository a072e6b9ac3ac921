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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

#: Worker threads per tile (S: graphcore/poplibs, ``target.getNumWorkerContexts()`` = 6).
WORKERS = 6

#: Bytes per cycle the AMP loads its weights at (S: poplin ``ConvModel.cpp``: 8 unless the
#: ``use128BitConvUnitLoad`` option is set, which is off by default).
COEFF_LOAD_BYTES_PER_CYCLE = 8

#: Default ``availableMemoryProportion`` of convolutions and matmuls (S: poplin
#: ``ConvOptions.hpp``, ``MatMul.cpp``: 0.6).
DEFAULT_MEMORY_PROPORTION = 0.6

#: Field splits evaluated per channel/kernel split (E: the finest few; more changes no plan in
#: the ResNet-50 and BERT layers we checked).
_FIELD_CANDIDATES = 4


@dataclass(frozen=True, slots=True)
class AmpTarget:
    """What the planner needs to know about the chip for one precision.

    Attributes:
        tiles: tiles of the IPU.
        bytes_per_tile: SRAM per tile.
        engines: AMP engines (conv units) per tile.
        half_inputs: fp16 activations and weights (else fp32).
        half_partials: fp16 partial sums (else fp32).
        exchange_bytes_per_cycle: exchange bytes a tile receives per cycle.
    """

    tiles: int
    bytes_per_tile: int
    engines: int
    half_inputs: bool
    half_partials: bool
    exchange_bytes_per_cycle: float = 4.0

    @property
    def in_group(self) -> int:
        """Input channels one AMP pass consumes (16 fp16, 8 fp32)."""
        return 16 if self.half_inputs else 8

    @property
    def input_bytes(self) -> int:
        return 2 if self.half_inputs else 4

    @property
    def partial_bytes(self) -> int:
        return 2 if self.half_partials else 4

    @classmethod
    def for_chip(cls, ipu: object, precision: str) -> AmpTarget:
        """The target of ``ipu`` (an ``IPUSpec``) at ``precision``.

        Engines are derived from the chip's AMP rate: one engine takes ``in_group`` inputs per
        pass of 4 cycles (fp16) or 8 cycles (fp32), i.e.
        ``engines = amp FLOPs/cycle × cycles per position / (2 × in_group)`` (D).
        """
        half = precision != "fp32"
        in_group, cycles = (16, 4) if half else (8, 8)
        amp = ipu.amp_flops_per_cycle(precision)  # type: ignore[attr-defined]
        engines = max(1, round(amp * cycles / (2 * in_group)))
        return cls(
            tiles=ipu.tiles,  # type: ignore[attr-defined]
            bytes_per_tile=ipu.sram_bytes_per_tile,  # type: ignore[attr-defined]
            engines=engines,
            half_inputs=half,
            half_partials=precision == "fp16.16",
            exchange_bytes_per_cycle=ipu.exchange_bytes_per_cycle_per_tile,  # type: ignore[attr-defined]
        )


@dataclass(frozen=True, slots=True)
class ConvProblem:
    """One convolution pass as the planner sees it (channels per conv group).

    Attributes:
        batch: batch size (1 when the field was flattened).
        out_h / out_w: output field.
        in_h / in_w: input field.
        kh / kw: kernel taps the pass applies per output position.
        stride: output stride.
        cin / cout: input and output channels per group.
        groups: conv groups (independent products).
        flat: a 1×1 stride-1 conv whose batch and field are flattened (``ConvPartial1x1Out``).
        transform_elements: elements the pass rearranges before or after the product (weight
            transposes of a backward pass, acts and gradients of a weight update, the operands
            of an unswapped matmul).
    """

    batch: int
    out_h: int
    out_w: int
    in_h: int
    in_w: int
    kh: int
    kw: int
    stride: int
    cin: int
    cout: int
    groups: int = 1
    flat: bool = False
    transform_elements: int = 0

    @property
    def macs(self) -> int:
        return (
            self.batch
            * self.out_h
            * self.out_w
            * self.kh
            * self.kw
            * self.cin
            * self.cout
            * self.groups
        )


@dataclass(frozen=True, slots=True)
class ConvPlan:
    """The planner's choice for one pass and what it costs on the slowest tile.

    Attributes:
        splits: (batch, rows, columns, kernel rows, in-channel groups, out-channel groups,
            conv groups) split counts.
        tiles: tiles used.
        partial_cycles: AMP vertex cycles.
        exchange_cycles: exchange cycles (inputs, weights, partials, later reduce stages).
        exchange_bytes: bytes the slowest tile receives.
        reduce_cycles: reduction (and cast) cycles.
        transform_cycles: on-tile rearrangement cycles.
        compute_sets: compute sets the pass compiles to (each ends with a sync).
        temp_bytes: temporary memory per tile.
        field_per_tile: output positions per tile (for memory and reports).
        problem: the problem this plan solves (its dimensions give the tile mapping).
        out_chans_per_group: output channels of one AMP group (output channels are split over
            tiles in whole groups).
        method: the vertex family: ``"AMP"`` (the conv units), ``"SLIC"`` (the conv units on
            1x4 windows of a few channels per conv group) or ``"VMAC"`` (vertical
            multiply-accumulate on the workers, one output channel per conv group).
    """

    splits: tuple[int, ...]
    tiles: int
    partial_cycles: int
    exchange_cycles: int
    exchange_bytes: int
    reduce_cycles: int
    transform_cycles: int
    compute_sets: int
    temp_bytes: int
    field_per_tile: int
    problem: ConvProblem | None = None
    out_chans_per_group: int = 1
    method: str = "AMP"

    @property
    def compute_cycles(self) -> int:
        return self.partial_cycles + self.reduce_cycles + self.transform_cycles

    @property
    def cycles(self) -> int:
        return self.compute_cycles + self.exchange_cycles


def _cdiv(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray | int:
    return -(-a // b)


@lru_cache(maxsize=4096)
def split_counts(n: int) -> tuple[int, ...]:
    """Split counts of a dimension of size ``n`` that give distinct per-tile sizes."""
    seen: dict[int, int] = {}
    for k in range(1, n + 1):
        seen.setdefault(-(-n // k), k)
    return tuple(sorted(seen.values()))


def _worker_positions(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the busiest and the idlest worker when ``n`` positions are split in 6."""
    i = np.arange(WORKERS)
    counts = (n[:, None] * (i + 1)) // WORKERS - (n[:, None] * i) // WORKERS
    return counts.max(axis=1), counts.min(axis=1)


def _worker_pieces(n: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, ...]:
    """(positions, row pieces) of every worker: ``n`` positions in rows of ``width`` are cut into
    6 contiguous ranges, each cut again at row ends (poplin ``partitionConvPartialByWorker``)."""
    i = np.arange(WORKERS)
    start = (n[:, None] * i) // WORKERS
    end = (n[:, None] * (i + 1)) // WORKERS
    count = end - start
    w = width[:, None]
    pieces = np.where(count > 0, (end - 1) // w - start // w + 1, 0)
    return count, pieces


def _amp_1x1(
    field: np.ndarray,
    ig: np.ndarray,
    og: np.ndarray,
    cg: np.ndarray,
    units: int,
    ocpg: int,
    target: AmpTarget,
) -> np.ndarray:
    """``ConvPartial1x1Out`` supervisor cycles (poplibs ``PerformanceEstimation.hpp``)."""
    common = units == 16 or not target.half_partials
    half = target.half_inputs
    ret = 7 if half and common else 0
    pmax, pmin = _worker_positions(field)

    def worker(p: np.ndarray, zero: int) -> np.ndarray:
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
        return np.where(p >= 3, big, small) - ret

    def inner(zero: int) -> np.ndarray:
        busiest = WORKERS * worker(pmax, zero)
        idlest = np.where(field >= WORKERS, WORKERS * worker(pmin, zero), 0) + 14
        return np.maximum(busiest, idlest)

    loads = 32 * units // COEFF_LOAD_BYTES_PER_CYCLE
    passes = -(-ocpg // units)
    c = 1 if common else 0
    r2 = 3 if ret else 0
    return (
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


def _amp_nx1(
    b: np.ndarray,
    h: np.ndarray,
    w: np.ndarray,
    k: np.ndarray,
    kw: int,
    ig: np.ndarray,
    og: np.ndarray,
    cg: np.ndarray,
    units: int,
    ocpg: int,
    weight_height: int,
    target: AmpTarget,
) -> np.ndarray:
    """``ConvPartialnx1`` supervisor cycles plus zeroing the partials (poplibs
    ``PerformanceEstimation.hpp``); a row piece costs ``16 + 4n`` worker cycles for fp16 inputs
    (``15 + 8n`` for fp32)."""
    float_partials = not target.half_partials
    positions, pieces = _worker_pieces(b * h * w, w)
    if target.half_inputs:
        per_worker = 17 + (0 if float_partials else 1) + 16 * pieces + 4 * positions
    else:
        per_worker = 17 + (0 if float_partials else 1) + 15 * pieces + 8 * positions
    per_worker = np.where(positions > 0, per_worker, 0)
    busiest = per_worker.max(axis=1)
    idlest = np.where((positions > 0).all(axis=1), per_worker.min(axis=1), 0)
    passes = ocpg // units if ocpg >= units else 1
    per_tap = np.maximum(WORKERS * busiest, WORKERS * idlest + 9) * passes
    loads = 32 * units // COEFF_LOAD_BYTES_PER_CYCLE
    innermost = loads + {1: 15, 2: 46, 4: 60}.get(weight_height, 20 * weight_height) + 3
    k_outer = _cdiv(k, weight_height)
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
    zero = WORKERS * og * cg * (_cdiv(_cdiv(field * ocpg, WORKERS), 2) + 5)
    return core + zero


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


def _reduce_stage_cycles(outputs: int, partials: int, half: bool) -> int:
    """One reduce stage on a tile (poplibs ``getReduceCycleEstimate``, multi-input path)."""
    acc = 8 if half else 4
    per_load = 3 if half else 2
    loops = outputs // acc + bin(outputs % acc).count("1")
    per_worker = -(-loops // WORKERS)
    return WORKERS * (32 + (per_load * partials + 8) * per_worker)


@lru_cache(maxsize=65536)
def reduction(outputs: int, depth: int, half_partials: bool, exchange_bpc: float) -> tuple:
    """(cycles, exchange cycles, compute sets) of reducing ``depth`` partials of ``outputs``
    outputs held per tile."""
    cycles = exchange = sets = 0
    held = outputs
    for stage, partials in enumerate(_reduce_plan(depth)):
        held = -(-held // partials)
        cycles += _reduce_stage_cycles(held, partials, half_partials)
        if stage:  # later stages first gather their partials from other tiles
            exchange += math.ceil(held * partials * (2 if half_partials else 4) / exchange_bpc)
        sets += 1
    return cycles, exchange, sets


def _cast_cycles(outputs: int) -> int:
    """fp32 partials to fp16 outputs (poplibs ``estimateCastCycles``): about 0.5 cycle each."""
    per = -(-outputs // WORKERS)
    return WORKERS * (max(-(-per // 2), -(-per // 4)) + 26)


def transform_cycles(
    elements_per_tile: int | np.ndarray, element_bytes: int
) -> tuple[int | np.ndarray, int | np.ndarray]:
    """(copy cycles, exchange cycles) of rearranging ``elements_per_tile`` elements on a tile
    (poplin ``addTransformCycleEstimate``: ``bytes × 5 / (min(memcpy 8 B, element) × 4)`` to copy,
    ``bytes / 4`` to exchange), rounded up; element-wise for an array of candidates."""
    num_bytes = elements_per_tile * element_bytes
    return _cdiv(num_bytes * 5, min(8, element_bytes) * 4), _cdiv(num_bytes, 4)


def _vertex_types(target: AmpTarget) -> list[tuple[int, int]]:
    """(engines, partial channels per group) candidates (poplin ``getConvVertexAMPCandidates``)."""
    units = [target.engines] + ([8] if target.engines == 16 else [])
    out = []
    for u in units:
        for ocpg in sorted({u, 16, 8}):
            if ocpg % u == 0:
                out.append((u, ocpg))
    return out


@lru_cache(maxsize=8192)
def _field_options(batch: int, out_h: int, out_w: int) -> tuple[np.ndarray, ...]:
    """Every (batch, rows, columns) split of the field, with its product and positions per tile,
    sorted by positions per tile."""
    bs, hs, ws = np.meshgrid(
        np.array(split_counts(batch)),
        np.array(split_counts(out_h)),
        np.array(split_counts(out_w)),
        indexing="ij",
    )
    bs, hs, ws = bs.ravel(), hs.ravel(), ws.ravel()
    positions = _cdiv(batch, bs) * _cdiv(out_h, hs) * _cdiv(out_w, ws)
    product = bs * hs * ws
    order = np.lexsort((product, positions))
    return bs[order], hs[order], ws[order], product[order], positions[order]


def _candidates(problem: ConvProblem, tiles: int, icg: int, ocg: int) -> dict[str, np.ndarray]:
    """Splits to evaluate: every channel/kernel/group split with the finest field splits."""
    fb, fh, fw, fprod, _ = _field_options(problem.batch, problem.out_h, problem.out_w)
    fits: dict[int, np.ndarray] = {}  # field splits that fit the tiles left, by tiles left
    picks: list[np.ndarray] = []
    splits: list[tuple[int, int, int, int]] = []
    ks_all = split_counts(problem.kh) if problem.kh > 1 else (1,)
    for gs in split_counts(problem.groups):
        for ks in ks_all:
            for ics in split_counts(icg):
                for ocs in split_counts(ocg):
                    used = gs * ks * ics * ocs
                    if used > tiles:
                        continue
                    left = tiles // used
                    fit = fits.get(left)
                    if fit is None:
                        fit = fits[left] = np.flatnonzero(fprod <= left)[:_FIELD_CANDIDATES]
                    picks.append(fit)
                    splits.append((ks, ics, ocs, gs))
    names = ("bs", "hs", "ws", "ks", "ics", "ocs", "gs")
    if not picks:
        return {name: np.zeros(0, dtype=np.int64) for name in names}
    field = np.concatenate(picks)
    others = np.repeat(np.array(splits, dtype=np.int64), [len(p) for p in picks], axis=0)
    columns = (fb[field], fh[field], fw[field], *others.T)
    return {name: np.asarray(col, dtype=np.int64) for name, col in zip(names, columns)}


def _per_tile(
    problem: ConvProblem, c: dict[str, np.ndarray], icg: int, ocg: int, groups: int
) -> dict[str, np.ndarray]:
    """Per-tile sizes of every candidate split ``c``: batch ``b``, output rows ``h`` and columns
    ``w``, kernel rows ``k``, input/output channel groups ``ig``/``og``, conv groups ``cg`` (of
    ``groups``), and the input rows and columns the tile reads."""
    bs, hs, ws, ks = c["bs"], c["hs"], c["ws"], c["ks"]
    h = _cdiv(problem.out_h, hs)
    w = _cdiv(problem.out_w, ws)
    k = _cdiv(problem.kh, ks)
    return {
        "b": _cdiv(problem.batch, bs),
        "h": h,
        "w": w,
        "k": k,
        "ig": _cdiv(icg, c["ics"]),
        "og": _cdiv(ocg, c["ocs"]),
        "cg": _cdiv(groups, c["gs"]),
        "in_h": np.where(
            (hs == 1) & (ks == 1),
            problem.in_h,
            np.minimum((h - 1) * problem.stride + k, problem.in_h),
        ),
        "in_w": np.where(
            ws == 1, problem.in_w, np.minimum((w - 1) * problem.stride + problem.kw, problem.in_w)
        ),
    }


def _assemble(
    problem: ConvProblem,
    target: AmpTarget,
    c: dict[str, np.ndarray],
    t: dict[str, np.ndarray],
    partial: np.ndarray,
    counts: tuple[np.ndarray, np.ndarray, np.ndarray],
    temp: np.ndarray,
    out_group: int,
) -> tuple[np.ndarray, ...]:
    """The fields :func:`plan_conv` compares, from a vertex's cycles ``partial`` and the tile's
    ``counts`` of input, weight and output elements: exchange (inputs duplicated over output
    channel splits, shared by a supertile's two tiles when those splits are even; weights
    duplicated over field splits; the partials), the reduction of partials over kernel-row and
    input-channel splits (or the cast of float partials to half outputs), rearrangements."""
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
    depth = ks * ics
    reduce = np.zeros(len(bs), dtype=np.int64)
    later = np.zeros(len(bs), dtype=np.int64)
    sets = np.ones(len(bs), dtype=np.int64)
    for i in range(len(bs)):
        if depth[i] > 1:
            cyc, ex, st = reduction(
                int(-(-n_out[i] // depth[i]) * depth[i]), int(depth[i]), target.half_partials, exb
            )
            reduce[i], later[i], sets[i] = cyc, ex, 1 + st
        elif target.half_inputs and not target.half_partials:
            reduce[i] += _cast_cycles(int(-(-n_out[i] // max(depth[i], 1))))
            sets[i] += 1
    tiles = bs * hs * ws * ks * ics * ocs * gs
    transform = np.zeros(len(bs), dtype=np.int64)
    transform_x = np.zeros(len(bs), dtype=np.int64)
    if problem.transform_elements:
        transform, transform_x = transform_cycles(
            _cdiv(np.int64(problem.transform_elements), tiles), target.input_bytes
        )
        sets += 1
    total = exchange + later + transform_x + partial + reduce + transform
    return (
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


def _evaluate(
    problem: ConvProblem, target: AmpTarget, units: int, ocpg: int, icpg: int, proportion: float
) -> tuple[np.ndarray, ...] | None:
    icg = -(-problem.cin // icpg)
    ocg = -(-problem.cout // ocpg)
    c = _candidates(problem, target.tiles, icg, ocg)
    if len(c["bs"]) == 0:
        return None
    t = _per_tile(problem, c, icg, ocg, problem.groups)
    b, h, w, k, ig, og, cg = (t[n] for n in ("b", "h", "w", "k", "ig", "og", "cg"))
    n_in = t["in_h"] * t["in_w"] * b * ig * icpg * cg
    n_w = k * problem.kw * ig * icpg * og * ocpg * cg
    n_out = h * w * b * og * ocpg * cg
    temp = target.input_bytes * (n_in + n_w) + target.partial_bytes * n_out
    if problem.flat:
        partial = _amp_1x1(w, ig, og, cg, units, ocpg, target)
    else:
        partial = _amp_nx1(
            b, h, w, k, problem.kw, ig, og, cg, units, ocpg, target.in_group // icpg, target
        )
    return _assemble(problem, target, c, t, partial, (n_in, n_w, n_out), temp, ocpg)


def _vmac_group_sizes(target: AmpTarget) -> tuple[int, ...]:
    """Conv groups one VMAC vertex processes together (poplin ``getConvVertexVMACCandidates``):
    the half vector width, 4, and 8 and 16 with half partials."""
    return (4, 8, 16) if target.half_partials else (4,)


def vmac_applies(problem: ConvProblem, target: AmpTarget) -> bool:
    """Whether the VMAC vertex can run ``problem``: half activations, one output channel per conv
    group (poplin ``ConvVertexType.cpp``; its input channels are processed one at a time)."""
    return target.half_inputs and problem.cout == 1 and problem.groups > 1 and not problem.flat


def _vmac_dot(size: np.ndarray, channels: int) -> np.ndarray:
    """Worker cycles of one VMAC dot product of ``size`` taps over ``channels`` conv groups
    (poplibs ``getVerticalMacDotProductCycles``)."""
    if channels >= 8:
        return 3 + 3 * (size - 1) * (channels // 8)
    return 3 + 2 * (size - 1) * (channels // 4)


def _vmac_worker(
    entries_whole: np.ndarray,
    entries_part: np.ndarray,
    kw: int,
    part_size: np.ndarray,
    cgpg: int,
    float_partials: bool,
) -> np.ndarray:
    """Cycles of the busiest worker: ``entries_whole`` dot products of ``kw`` taps and
    ``entries_part`` of ``part_size`` (poplibs ``getConvPartialVerticalMacCycleEstimate``)."""
    if cgpg >= 8 and not float_partials:
        per8 = entries_whole * (7 + 15 + _vmac_dot(np.int64(kw), 8)) + entries_part * (
            7 + 15 + _vmac_dot(part_size, 8)
        )
        return (13 if cgpg == 8 else 25) + per8 * (1 if cgpg == 8 else 2)
    store = 5 if float_partials else 3
    return (
        (19 if float_partials else 18)
        + entries_whole * (7 + store + _vmac_dot(np.int64(kw), cgpg))
        + entries_part * (7 + store + _vmac_dot(part_size, cgpg))
    )


def _vmac_cycles(
    b: np.ndarray,
    h: np.ndarray,
    w: np.ndarray,
    k: np.ndarray,
    kw: int,
    ig: np.ndarray,
    cg: np.ndarray,
    cgpg: int,
    target: AmpTarget,
) -> np.ndarray:
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
    max_part_rows = _cdiv(rows * split, WORKERS)
    whole, part = max_part_rows // split, max_part_rows % split
    part_size = _cdiv(np.int64(kw), split)
    worker = _vmac_worker(k * whole, k * part, kw, part_size, cgpg, float_partials)
    inner = WORKERS * worker
    out_elems = rows * cgpg
    zero = 4 + _cdiv(out_elems, 2 if float_partials else 4)
    fp = 1 if float_partials else 0
    per_worker = _cdiv(out_elems, WORKERS)
    reduce = (
        10 - fp + ((7 + 2 * fp + (2 if float_partials else 1) * (WORKERS - 1)) * per_worker) // cgpg
    )
    outer = 32 + ig * (24 + inner)
    return 61 + 14 + 25 + fp + (zero + outer + reduce) * cg


def _evaluate_vmac(
    problem: ConvProblem, target: AmpTarget, cgpg: int
) -> tuple[np.ndarray, ...] | None:
    """:func:`_evaluate` for the VMAC vertex: conv groups in groups of ``cgpg``, input channels
    one at a time, one output channel (see :func:`vmac_applies`)."""
    group_groups = -(-problem.groups // cgpg)
    c = _candidates(replace(problem, groups=group_groups), target.tiles, problem.cin, 1)
    if len(c["bs"]) == 0:
        return None
    t = _per_tile(problem, c, problem.cin, 1, group_groups)
    b, h, w, k, ig, cg = (t[n] for n in ("b", "h", "w", "k", "ig", "cg"))
    n_in = t["in_h"] * t["in_w"] * b * ig * cgpg * cg
    n_w = k * problem.kw * ig * cgpg * cg
    n_out = h * w * b * cgpg * cg
    # Every worker keeps partials for the whole tile output (poplin ConvModel.cpp, VMAC).
    temp = target.input_bytes * (n_in + n_w) + target.partial_bytes * WORKERS * n_out
    partial = _vmac_cycles(b, h, w, k, problem.kw, ig, cg, cgpg, target)
    return _assemble(problem, target, c, t, partial, (n_in, n_w, n_out), temp, 1)


#: SLIC groupings (conv groups per group, channels per group) for half activations (S: poplin
#: ``getConvVertexSLICCandidates``); 8 and 16 conv groups need half partials and 16 conv units.
_SLIC_GROUPINGS = ((1, 4), (2, 2), (4, 1))
_SLIC_WIDE_GROUPINGS = ((8, 1), (16, 1))
#: Kernel taps one SLIC pass applies along a row (S: poplin, the 1x4 window).
SLIC_WINDOW = 4


def _slic_vertex_types(target: AmpTarget) -> list[tuple[int, int, int]]:
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


def _slic_rows(n: np.ndarray, stride: int, zeroing: bool, half8: bool, float_partials: bool):
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
    field: np.ndarray,
    width: np.ndarray,
    stride: int,
    cgpg: int,
    chains: int,
    zeroing: bool,
    target: AmpTarget,
) -> np.ndarray:
    """Tile cycles of all workers' pass over the tile's output for one conv-group stride and
    one sub-kernel: the positions are dealt to the 6 workers in contiguous ranges cut at row
    ends (each worker's pieces are charged at their mean length: E)."""
    float_partials = not target.half_partials
    half8 = chains == 2 and not float_partials
    passes = 1 if chains == 4 else 2
    preamble = 2 + (2 if half8 else 3) + 1 + 2 + 4 + 2 + 2 + 1 + (1 if half8 else 0)
    preamble += 4 if cgpg > 4 else 0
    count, pieces = _worker_pieces(field, width)
    mean = np.maximum(count // np.maximum(pieces, 1), 1)
    per_piece = (
        (9 if half8 else 10)
        + (1 if zeroing else 0)
        + (3 if float_partials else 0)
        + passes * _slic_rows(mean, stride, zeroing, half8, float_partials)
    )
    worker = np.where(pieces > 0, preamble + pieces * per_piece + (2 if half8 else 0), 0)
    copy = 2 + 2 * field if half8 and zeroing else 0
    return WORKERS * worker.max(axis=1) + copy


def _slic_weight_load(cgpg: int, chans: int) -> int:
    """Supervisor cycles of loading one sub-kernel's weights (poplibs
    ``getConvPartialSlicSupervisorWeightLoadCycleEstimate``)."""
    if chans == 4:
        return 6 + 6 + 6 + 16
    per_worker = (12 if cgpg == 2 else 10) + (1 if cgpg > 4 else 0)
    return 9 + 6 + per_worker * WORKERS + 6 + 16


def _slic_cycles(
    field: np.ndarray,
    width: np.ndarray,
    k: np.ndarray,
    kw: int,
    cg: np.ndarray,
    cgpg: int,
    chans: int,
    chains: int,
    stride: int,
    target: AmpTarget,
) -> np.ndarray:
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

    def brnzdec(n: np.ndarray | int) -> np.ndarray | int:
        return 6 * (n - 1) + 1

    group_body = 12 if half8 else 15
    if cgpg <= 4:
        sub_body = load + (0 if half8 else 3) + 2 + (0 if half8 else 1) + 6 + 1 + 6 + 1
    else:
        strides = cgpg // 4
        stride_body = load + 6 + 1 + 6 + 2 + 6
        sub_body = stride_body * strides + brnzdec(strides) + 2 + 2 + 6 + 3 + 2
        group_body += 2 + 6
        inner = inner * strides
    return (
        (25 if half8 else 28)
        + group_body * cg
        + brnzdec(cg)
        + sub_body * sub_kernels
        + brnzdec(sub_kernels)
        + cg * zeroing
        + cg * (sub_kernels - 1) * inner
    )


def _evaluate_slic(
    problem: ConvProblem, target: AmpTarget, cgpg: int, chans: int, chains: int
) -> tuple[np.ndarray, ...] | None:
    """:func:`_evaluate` for a SLIC vertex: ``cgpg`` conv groups of ``chans`` input and output
    channels per pass; each tile holds exactly one input and one output channel group (poplin
    ``ConvModel.cpp``), so the channels are split over tiles in groups of ``chans``."""
    if problem.groups < cgpg and cgpg > 1:
        return None
    icg = -(-problem.cin // chans)
    ocg = -(-problem.cout // chans)
    group_groups = -(-problem.groups // cgpg)
    c = _candidates(replace(problem, groups=group_groups), target.tiles, icg, ocg)
    keep = (c["ics"] == icg) & (c["ocs"] == ocg)
    c = {name: values[keep] for name, values in c.items()}
    if len(c["bs"]) == 0:
        return None
    t = _per_tile(problem, c, icg, ocg, group_groups)
    b, h, w, k, cg = (t[n] for n in ("b", "h", "w", "k", "cg"))
    n_in = t["in_h"] * t["in_w"] * b * chans * cgpg * cg
    n_w = k * problem.kw * chans * chans * cgpg * cg
    n_out = h * w * b * chans * cgpg * cg
    temp = target.input_bytes * (n_in + n_w) + target.partial_bytes * n_out
    partial = _slic_cycles(
        b * h * w, w, k, problem.kw, cg, cgpg, chans, chains, problem.stride, target
    )
    return _assemble(problem, target, c, t, partial, (n_in, n_w, n_out), temp, chans)


@lru_cache(maxsize=8192)
def plan_conv(
    problem: ConvProblem, target: AmpTarget, memory_proportion: float = DEFAULT_MEMORY_PROPORTION
) -> ConvPlan:
    """The fastest plan of ``problem`` whose temporary memory fits ``memory_proportion`` of a
    tile (doubling the bound up to twice the tile, then unbounded, as Poplar retries)."""
    results = []
    icpgs = [target.in_group]
    if problem.cin < target.in_group:  # fold kernel rows into the AMP's inputs (weight height)
        icpgs = [g for g in (2, 4, 8, 16) if g < target.in_group and g >= problem.cin][:1] or icpgs
    methods: list[str] = []
    for units, ocpg in _vertex_types(target):
        for icpg in icpgs:
            r = _evaluate(problem, target, units, ocpg, icpg, memory_proportion)
            if r is not None:
                results.append(r)
                methods += ["AMP"] * len(r[0])
    if vmac_applies(problem, target):
        for cgpg in _vmac_group_sizes(target):
            r = _evaluate_vmac(problem, target, cgpg)
            if r is not None:
                results.append(r)
                methods += ["VMAC"] * len(r[0])
    if slic_applies(problem):
        for cgpg, chans, chains in _slic_vertex_types(target):
            r = _evaluate_slic(problem, target, cgpg, chans, chains)
            if r is not None:
                results.append(r)
                methods += ["SLIC"] * len(r[0])
    if not results:
        raise ValueError(f"no AMP plan for {problem}")
    fields = [np.concatenate([r[i] for r in results]) for i in range(len(results[0]))]
    total, temp, tiles = fields[0], fields[7], fields[8]
    bound = memory_proportion * target.bytes_per_tile
    fits = temp <= bound
    while not fits.any() and bound < 2 * target.bytes_per_tile:
        bound *= 2
        fits = temp <= bound
    if not fits.any():
        fits = np.ones(len(total), dtype=bool)
    index = np.flatnonzero(fits)
    best = index[np.lexsort((tiles[index], total[index]))[0]]
    return ConvPlan(
        splits=tuple(int(x) for x in fields[10][best]),
        tiles=int(tiles[best]),
        partial_cycles=int(fields[1][best]),
        exchange_cycles=int(fields[2][best]),
        exchange_bytes=int(fields[3][best]),
        reduce_cycles=int(fields[4][best]),
        transform_cycles=int(fields[5][best]),
        compute_sets=int(fields[6][best]),
        temp_bytes=int(temp[best]),
        field_per_tile=int(fields[9][best]),
        problem=problem,
        out_chans_per_group=int(fields[11][best]),
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
    unswapped = ConvProblem(
        1,
        1,
        m,
        1,
        m,
        1,
        1,
        1,
        k,
        n,
        groups,
        flat=True,
        transform_elements=transform_elements + groups * (m * k + k * n + m * n),
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
