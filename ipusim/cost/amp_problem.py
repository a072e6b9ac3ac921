"""What the AMP planner plans: the chip target, one convolution pass, and the plan it picks
(see :mod:`ipusim.cost.amp`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias, TypeVar, overload

import numpy as np
import numpy.typing as npt

from ipusim.hardware.specs import IPUSpec

#: One value per candidate partition of a pass (the planner costs all candidates at once).
IntArray: TypeAlias = npt.NDArray[np.int64]
#: A count per candidate, or one count for all of them.
Count = TypeVar("Count", IntArray, int)

#: Worker threads per tile (S: graphcore/poplibs, ``target.getNumWorkerContexts()`` = 6).
WORKERS = 6

#: Bytes per cycle the AMP loads its weights at (S: poplin ``ConvModel.cpp``: 8 unless the
#: ``use128BitConvUnitLoad`` option is set, which is off by default).
COEFF_LOAD_BYTES_PER_CYCLE = 8

#: Default ``availableMemoryProportion`` of convolutions and matmuls (S: poplin
#: ``ConvOptions.hpp``, ``MatMul.cpp``: 0.6).
DEFAULT_MEMORY_PROPORTION = 0.6


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
    def for_chip(cls, ipu: IPUSpec, precision: str) -> AmpTarget:
        """The target of ``ipu`` (an ``IPUSpec``) at ``precision``.

        Engines are derived from the chip's AMP rate: one engine takes ``in_group`` inputs per
        pass of 4 cycles (fp16) or 8 cycles (fp32), i.e.
        ``engines = amp FLOPs/cycle × cycles per position / (2 × in_group)`` (D).
        """
        half = precision != "fp32"
        in_group, cycles = (16, 4) if half else (8, 8)
        amp = ipu.amp_flops_per_cycle(precision)
        engines = max(1, round(amp * cycles / (2 * in_group)))
        return cls(
            tiles=ipu.tiles,
            bytes_per_tile=ipu.sram_bytes_per_tile,
            engines=engines,
            half_inputs=half,
            half_partials=precision == "fp16.16",
            exchange_bytes_per_cycle=ipu.exchange_bytes_per_cycle_per_tile,
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
        dims = (self.batch, self.out_h, self.out_w, self.kh, self.kw, self.cin, self.cout)
        return math.prod(dims) * self.groups


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


@overload
def cdiv(a: int, b: int) -> int: ...
@overload
def cdiv(a: IntArray, b: IntArray | int) -> IntArray: ...
@overload
def cdiv(a: int, b: IntArray) -> IntArray: ...
def cdiv(a: IntArray | int, b: IntArray | int) -> IntArray | int:
    """``⌈a / b⌉`` of non-negative integers, element-wise for arrays of candidates."""
    quotient: IntArray | int = -(-a // b)
    return quotient
