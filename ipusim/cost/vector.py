"""Work on the tiles' vector units, costed the way Graphcore's popops / popnn estimators cost it.

Sources (graphcore/poplibs, restated; file references in ``docs/validation.md``):
``lib/popops/PerformanceEstimation.cpp``, ``popopsCycleEstimators.cpp`` (element-wise
``BinaryOp1D`` / ``UnaryOp1D`` / broadcast / ``ScaledAdd`` / ``Cast`` vertices),
``lib/popnn/PerformanceEstimation.hpp`` and ``popnnCycleEstimators.cpp`` (non-linearities,
pooling), ``lib/popops/reduction/`` (reductions), ``lib/poplin/Norms.cpp`` (batch / layer norm
passes), ``lib/popnn/NonLinearity.cpp`` (softmax passes), ``lib/poputil/TileMapping.cpp`` (new
tensors spread with at least 128 bytes per tile).

A vertex's time on a tile is ``6 × (worker prologue + loop)`` plus the supervisor's overhead: the
6 worker threads each take a sixth of the tile's elements and issue one instruction every 6 tile
cycles, so a loop of ``c`` worker cycles per vector of ``v`` elements costs ``c / v`` tile cycles
per element once amortised. Composite ops (batch norm, softmax, ...) are several such passes plus
reductions, each its own compute set. All results are tile cycles of the busiest tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Fewest bytes of a new tensor Poplar places on one tile (S: poputil ``mapTensorLinearly``,
#: ``TileMapping.cpp``: minimum 128 bytes per tile).
MIN_BYTES_PER_TILE = 128

#: Elements per 64-bit vector (S: poplibs, data path 64 bits: 4 half, 2 float).
VECTOR_WIDTH = {True: 4, False: 2}

#: Worker prologue of a 1-D element-wise vertex in worker cycles, and the supervisor overhead in
#: tile cycles (S: popops ``BinaryOp1D`` base 26 half / 29 float; ``basicOpSupervisorOverhead``
#: 11).
WORKER_PROLOGUE = {True: 26, False: 29}
SUPERVISOR_OVERHEAD = 11

#: Tile cycles per element once amortised, (fp16, fp32), by op (S: the popops / popnn tables;
#: E where marked). Grad ops of non-linearities use popnn ``NonLinearityGrad1D``. A popnn
#: non-linearity costs its vector loop cycles per vector of 4 halves / 2 floats; a popops unary op
#: ``cyclesPerLoop`` per ``loopUnrollFactor`` elements. Lines below are of graphcore/poplibs at
#: commit 7eac0f2 (2023-08-11): popnn ``lib/popnn/PerformanceEstimation.hpp``
#: ``getNonLinearityOpCycles`` (l. 18-54: RELU 1, SIGMOID (5 float / 2 half) x 2, TANH (5 / 1)
#: x 2, GELU 10 / 5) and ``getNonLinearityGradOpCycles`` (l. 56-92: RELU, SIGMOID, TANH 3, GELU
#: 10 / 5), used per vector by ``popnnCycleEstimators.cpp`` l. 78-141 and l. 154-; popops
#: ``lib/popops/popopsCycleEstimators.hpp`` ``unaryOpPerfInfo`` (GELU_ERF l. 139-140, EXPONENT
#: l. 142-144, LOGARITHM l. 172-173, SQRT l. 193-194) and binary MULTIPLY (l. 371-372: 1 per
#: vector, plus 2 of loop overhead, ``popopsCycleEstimators.cpp`` l. 76).
ELEMENTWISE_CYCLES: dict[str, tuple[float, float]] = {
    "add": (0.75, 1.5),
    "subtract": (0.75, 1.5),
    "multiply": (0.75, 1.5),
    "maximum": (1.0, 1.5),
    "minimum": (1.0, 1.5),
    "divide": (5.25, 5.0),
    "equal": (0.75, 1.5),
    "negative": (0.5, 1.0),
    "square": (0.5, 1.0),
    "abs": (0.5, 1.0),  # E: as negate (a sign-bit operation)
    "sqrt": (5.75, 5.0),
    "exp": (1.0, 3.0),
    "log": (1.0, 6.0),
    "relu": (0.25, 0.5),  # popnn NonLinearity RELU
    "sigmoid": (1.0, 5.0),  # popnn
    "tanh": (0.5, 5.0),  # popnn
    "gelu": (1.25, 5.0),  # popnn GELU, the tanh form (ipu.nn_ops.gelu, Graphcore's BERT)
    "gelu_erf": (16.0, 22.0),  # popops GELU_ERF: tf.nn.gelu(approximate=False), Keras' default
    "softplus": (2.75, 10.5),  # E: exp + log + add
    "clip": (2.0, 3.0),  # max then min
    "cast": (0.5, 0.5),
    "dropout": (1.5, 2.5),  # E: a random mask and a multiply
    # E: as dropout: the hardware generator gives uniform and Gaussian draws (f32v2grand), then
    # a scale and an offset
    "random_draw": (1.5, 2.5),
    "bucketize": (4.0, 4.0),  # E: a binary search of a few compares per element
    "table_lookup": (6.0, 6.0),  # E: a binary search and a select per element
    # E: decimal conversion and FarmHash's 64-bit mixing, emulated with 32-bit integer ops
    "hash_bucket": (40.0, 40.0),
    "relu_grad": (0.75, 1.5),
    "sigmoid_grad": (0.75, 1.5),
    "tanh_grad": (0.75, 1.5),
    "gelu_grad": (1.25, 5.0),
    "gelu_erf_grad": (4.75, 10.5),  # E: element-wise autodiff of the erf form (an exp, 5 ops)
    "bias_add": (0.25, 1.0),  # BroadcastVectorInner add along channels
    "accumulate": (0.75, 1.5),  # ScaledAdd into the accumulator
    "fill": (0.25, 0.5),  # popops Fill: 4 halves / 2 floats a cycle
    "copy": (0.25, 0.5),  # on-tile memcpy at 8 bytes a cycle (2nd)
}

#: Default for element-wise ops not in the table (E: a binary op).
DEFAULT_ELEMENTWISE = (0.75, 1.5)

#: Strided on-tile reduce: tile cycles per input element (S: popops reduction
#: ``CycleEstimationFunctions.cpp``: 1 worker cycle per 4 halves / 2 floats).
REDUCE_CYCLES = {True: 0.25, False: 0.5}

#: Pooling: tile cycles per (output element × window tap), forward and backward, and per output
#: row (S: popnn ``getPoolingCycles``: 3 / 5 worker cycles per vector of 4 halves, 30 per row).
POOL_CYCLES = {"fwd": 0.75, "bwd": 1.25}
POOL_ROW_CYCLES = 30

#: Passes of a composite op, as (tile cycles per element fp16, fp32, compute sets); reductions are
#: counted separately with REDUCE_CYCLES (S: the pass lists of poplin ``Norms.cpp`` and popnn
#: ``NonLinearity.cpp``). Batch and layer norm share poplin's passes (``lib/poplin/Norms.cpp``
#: at 7eac0f2): forward, the statistics' two reductions in one ``reduceMany`` (l. 209-219), then
#: sub mean and mul inverse std (``normWhiten`` l. 345-349), mul gamma and add beta
#: (``normalise`` l. 367-371); backward, the parameter gradients' two reductions
#: (``normParamGradients``), then the statistics' gradients (l. 484-528: two more reductions, a
#: copy, mul, add, scaled add, mul).
BATCH_NORM_FWD = ((0.25 + 0.5 + 0.25 + 0.25), (1.0 + 1.0 + 1.0 + 1.0), 6)
BATCH_NORM_BWD = (
    (0.75 + 0.25 + 0.75 + 0.25 + 0.25 + 0.75 + 0.5),
    (1.5 + 1.0 + 1.5 + 1.0 + 1.0 + 1.5 + 1.0),
    9,
)
#: Softmax: max, x − max, exp, row sums, 1 / sum, x · (1 / sum) (S: poplibs
#: ``lib/popnn/NonLinearity.cpp`` ``softmaxImpl`` l. 94-141). Its gradient: g·y, its row sums,
#: y·sum, then g·y − y·sum: three binary passes (S: ``softmaxInputGradientImpl`` l. 175-181:
#: mul, reduce ADD, mul, subInPlace;
#: popops binary MULTIPLY / SUBTRACT: 1 cycle per vector in ``popopsCycleEstimators.hpp`` plus 2
#: of loop overhead in ``popopsCycleEstimators.cpp`` ``binaryOpInnerLoopCycles``).
SOFTMAX_FWD = ((0.75 + 1.0 + 0.75), (1.5 + 3.0 + 1.5), 4)
SOFTMAX_BWD = ((0.75 + 0.75 + 0.75), (1.5 + 1.5 + 1.5), 3)

#: Cycles one weight-update pass costs per element of fp32 state (S: popops ``ScaledAdd`` float,
#: 1.5); an optimizer's passes are its FLOPs per element / 2 (E: one multiply-add per pass).
UPDATE_PASS_CYCLES = 1.5

#: MultiSlice / MultiUpdateAdd: tile cycles per gathered or scattered element (S: popops
#: ``getMultiSliceCycleEstimate`` about 1 worker cycle per element, ``MultiUpdateAdd`` 1.5 with
#: 2-element atoms; 6 workers in parallel).
GATHER_CYCLES = 1.0
SCATTER_CYCLES = 1.5

#: On-tile rearrangement (transpose) regression of the conv planner (S: poplin
#: ``ConvModel.cpp`` ``experimentalConvTransformsEstimates``): fixed cycles and cycles per byte by
#: the size of the atoms moved.
TRANSPOSE_FIXED = 587
TRANSPOSE_CYCLES_PER_BYTE = {2: 5.148, 4: 3.125, 8: 0.440}


@dataclass(frozen=True, slots=True)
class VectorWork:
    """Cycles of vector work on the busiest tile.

    Attributes:
        compute: tile cycles of every compute set together.
        exchange_bytes: bytes the busiest tile receives before them.
        compute_sets: compute sets (each ends with a sync).
        tiles: tiles used.
    """

    compute: int
    exchange_bytes: int
    compute_sets: int
    tiles: int


def spread(elements: int, element_bytes: int, tiles: int) -> tuple[int, int]:
    """(tiles used, elements on the busiest tile) of a tensor mapped linearly over ``tiles``
    with at least :data:`MIN_BYTES_PER_TILE` per tile."""
    if elements <= 0:
        return 1, 0
    used = max(1, min(tiles, elements * element_bytes // MIN_BYTES_PER_TILE))
    return used, -(-elements // used)


def vertex_cycles(elements: int, per_element: float, half: bool) -> int:
    """A 1-D supervisor vertex over ``elements`` on one tile: ``6 × (prologue + loop) + 11``, the
    loop over ⌈elements/6⌉ per worker in whole vectors."""
    if elements <= 0:
        return 0
    width = VECTOR_WIDTH[half]
    per_worker = -(-elements // 6)
    vectors = -(-per_worker // width)
    return (
        6 * WORKER_PROLOGUE[half]
        + SUPERVISOR_OVERHEAD
        + math.ceil(6 * vectors * width * per_element)
    )


def elementwise(op: str, elements: int, element_bytes: int, tiles: int) -> VectorWork:
    """An element-wise op over ``elements`` outputs (one compute set)."""
    half = element_bytes == 2
    used, per_tile = spread(elements, element_bytes, tiles)
    per_element = ELEMENTWISE_CYCLES.get(op, DEFAULT_ELEMENTWISE)[0 if half else 1]
    return VectorWork(vertex_cycles(per_tile, per_element, half), 0, 1, used)


def reduction(in_elements: int, out_elements: int, element_bytes: int, tiles: int) -> VectorWork:
    """Reduce ``in_elements`` to ``out_elements``: each tile reduces its share, then the tiles
    owning the outputs add the partials they receive (fp32 partials), in a second compute set."""
    half = element_bytes == 2
    used, per_tile = spread(in_elements, element_bytes, tiles)
    first = vertex_cycles(per_tile, REDUCE_CYCLES[half], half)
    out_elements = max(out_elements, 1)
    contributors = min(used, max(1, in_elements // out_elements))
    if contributors <= 1:
        return VectorWork(first, 0, 1, used)
    owners = min(used, out_elements)
    outputs_per_owner = -(-out_elements // owners)
    partials = outputs_per_owner * contributors
    second = vertex_cycles(partials, REDUCE_CYCLES[False], False)
    return VectorWork(first + second, partials * 4, 2, used)


def composite(
    passes: tuple[float, float, int],
    reductions: int,
    elements: int,
    stats: int,
    element_bytes: int,
    tiles: int,
) -> VectorWork:
    """A composite op: element-wise ``passes`` over ``elements`` plus ``reductions`` reductions
    of them to ``stats`` values (batch norm, layer norm, softmax)."""
    half = element_bytes == 2
    used, per_tile = spread(elements, element_bytes, tiles)
    per_element = passes[0] if half else passes[1]
    sets = passes[2]
    compute = vertex_cycles(per_tile, per_element, half) + (sets - 1) * (
        6 * WORKER_PROLOGUE[half] + SUPERVISOR_OVERHEAD
    )
    received = 0
    for _ in range(reductions):
        r = reduction(elements, stats, element_bytes, tiles)
        compute += r.compute
        received += r.exchange_bytes
        sets += r.compute_sets
    # The statistics come back to every tile for the passes (one value per channel it holds).
    received += min(stats, per_tile) * 4
    return VectorWork(compute, received, sets, used)


def pooling(
    out_elements: int, taps: int, rows: int, element_bytes: int, tiles: int, backward: bool
) -> VectorWork:
    """Max / average pooling or its gradient: each tile works on its outputs and first receives
    the input windows it needs (popnn's planner assumes the whole input is brought onto the tile)."""
    half = element_bytes == 2
    used, per_tile = spread(out_elements, element_bytes, tiles)
    rows_per_tile = -(-rows // used)
    per = POOL_CYCLES["bwd" if backward else "fwd"] * (1 if half else 2)
    compute = vertex_cycles(per_tile * taps, per, half) + POOL_ROW_CYCLES * rows_per_tile
    received = per_tile * min(taps, 4) * element_bytes  # the window's inputs (overlaps shared)
    return VectorWork(compute, received, 1, used)


def gather(out_elements: int, element_bytes: int, tiles: int, scatter: bool) -> VectorWork:
    """Embedding lookup (MultiSlice) or its gradient (MultiUpdateAdd) of ``out_elements``."""
    half = element_bytes == 2
    used, per_tile = spread(out_elements, element_bytes, tiles)
    per = SCATTER_CYCLES if scatter else GATHER_CYCLES
    return VectorWork(vertex_cycles(per_tile, per, half), per_tile * element_bytes, 1, used)


def transpose(elements: int, element_bytes: int, tiles: int) -> VectorWork:
    """An on-tile rearrangement of every element (a transpose), after bringing them on tile."""
    used, per_tile = spread(elements, element_bytes, tiles)
    num_bytes = per_tile * element_bytes
    per_byte = TRANSPOSE_CYCLES_PER_BYTE.get(element_bytes, TRANSPOSE_CYCLES_PER_BYTE[4])
    return VectorWork(TRANSPOSE_FIXED + math.ceil(per_byte * num_bytes), num_bytes, 1, used)


def copy(elements: int, element_bytes: int, tiles: int) -> VectorWork:
    """A copy of contiguous blocks (concat, pad, tile, broadcast): received, then written."""
    half = element_bytes == 2
    used, per_tile = spread(elements, element_bytes, tiles)
    per = ELEMENTWISE_CYCLES["copy"][0 if half else 1]
    return VectorWork(vertex_cycles(per_tile, per, half), per_tile * element_bytes, 1, used)


def weight_update(elements: int, flops_per_element: int, tiles: int) -> VectorWork:
    """An optimizer step over ``elements`` fp32 parameters: ``flops / 2`` ScaledAdd-like passes."""
    passes = max(1, flops_per_element // 2)
    used, per_tile = spread(elements, 4, tiles)
    compute = vertex_cycles(per_tile, UPDATE_PASS_CYCLES * passes, False)
    return VectorWork(compute, 0, passes, used)
