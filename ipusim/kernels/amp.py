"""Half-precision matrix products as the IPU's AMP unit computes them: fp16.16 and fp16.32.

Operands are binary16 values (held in float32 arrays). Each product of two binary16 values is
exact in float32 (11 + 11 significand bits), and the AMP computes a dot product over a group of
:data:`AMP_HALF_GROUP` consecutive elements of the contraction axis in float32. What differs is
the type of the partial sums that carry the result from one group to the next:

* **float partials (fp16.32)**: the partial sum stays float32 over the whole contraction and is
  rounded to half once, at the output. The float32 sum is done by BLAS, in BLAS's order: any
  order is one the device could use (the planner splits the contraction over tiles), and they
  differ at float32 precision only.
* **half partials (fp16.16)**: after each group the float32 group sum is added to the half
  partial sum in float32 and the result is rounded back to half, "expanded to FP32, then added,
  then rounded back to FP16" (Graphcore AI-float white paper), nearest-even or stochastic. The
  group sum adds the group's products in index order, in float32. A long contraction therefore
  accumulates one half-precision rounding error per group, the error fp16.32 avoids.

The group size is the number of input channels one AMP engine holds per weight load in half
precision (``weightsPerConvUnit``; PopLibs' reference vertex ``ConvPartial1x1Out`` sums
``inChansPerGroup`` products in float before adding them to the partials). 16 is the ipu2 value
(D/E: from PopLibs' planner constraints, not a published figure). The device also splits long
contractions over tiles and adds the per-tile partials in float (``ReduceAdd``): ipusim models
one tile's serial chain, the worst case for half partials.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ipusim._jit import kernel
from ipusim.errors import ConfigurationError
from ipusim.kernels.half import round_span, round_to_half

#: Contraction elements the AMP sums in float32 before touching the partials (D/E, see above).
AMP_HALF_GROUP = 16

PARTIALS = ("half", "float")
_MASK64 = (1 << 64) - 1


@kernel
def _accumulate_half_partials(a, b, acc, group, stochastic, key, offset, nan_on_overflow):
    # acc[i, :] (half partials) += a[i, :] @ b, one rounding per group of the contraction.
    m, k = a.shape
    n = b.shape[1]
    groups = (k + group - 1) // group
    s = np.empty(n, dtype=np.float32)
    t = np.empty(n, dtype=np.float32)
    t_bits = t.view(np.uint32)
    overflows = 0
    for i in range(m):
        row = acc[i]
        row_bits = row.view(np.uint32)
        for g in range(groups):
            for j in range(n):
                s[j] = 0.0
            for kk in range(g * group, min(k, (g + 1) * group)):
                aik = a[i, kk]
                brow = b[kk]
                for j in range(n):
                    s[j] += aik * brow[j]
            for j in range(n):
                t[j] = row[j] + s[j]
            overflows += round_span(
                t,
                t_bits,
                row,
                row_bits,
                stochastic,
                key,
                offset + (i * groups + g) * n,
                nan_on_overflow,
            )
    return overflows


@dataclass
class AmpProducts:
    """The matrix products of one op execution on half-precision operands.

    Args:
        partials: ``"half"`` (fp16.16) or ``"float"`` (fp16.32).
        stochastic: round stochastically (``esr``) instead of to nearest-even.
        key: stochastic-rounding stream of the op execution.
        nan_on_overflow: an overflow gives NaN instead of saturating (``nanoo``).

    Attributes:
        overflows: values that overflowed the half range so far (partials and outputs).
    """

    partials: str
    stochastic: bool = False
    key: int = 0
    nan_on_overflow: bool = False
    overflows: int = 0
    _calls: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.partials not in PARTIALS:
            raise ConfigurationError(
                f"partials type must be one of {PARTIALS}, received {self.partials!r}"
            )

    def accumulate(self, a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> None:
        """``acc += a @ b`` in the partials type (``acc``: float32, shape ``(m, n)``).

        ``a`` is ``(m, k)`` and ``b`` ``(k, n)``, float32 arrays holding binary16 values (views
        with any strides). With half partials ``acc`` must hold binary16 values and still does
        afterwards; with float partials it is an ordinary float32 sum.
        """
        self._calls += 1
        if self.partials == "float":
            acc += np.matmul(a, b)
            return
        a = np.ascontiguousarray(a, dtype=np.float32)
        b = np.ascontiguousarray(b, dtype=np.float32)
        self.overflows += int(
            _accumulate_half_partials(
                a,
                b,
                acc,
                AMP_HALF_GROUP,
                self.stochastic,
                np.uint64((self.key + self._calls * 0x9E3779B97F4A7C15) & _MASK64),
                0,
                self.nan_on_overflow,
            )
        )

    def product(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
        """``out = a @ b`` (or ``out += a @ b`` when ``accumulate``) in the partials type; the
        hook :mod:`ipusim.kernels.conv` calls instead of its float32 GEMM."""
        if not accumulate:
            out[...] = 0.0
        self.accumulate(a, b, out)

    def finish(self, acc: np.ndarray) -> np.ndarray:
        """The op's half-precision output from its partial sums: float partials are rounded
        once here; half partials are already binary16."""
        if self.partials == "half":
            return acc
        self._calls += 1
        rounded, count = round_to_half(
            acc,
            stochastic=self.stochastic,
            key=(self.key + self._calls * 0x9E3779B97F4A7C15) & _MASK64,
            nan_on_overflow=self.nan_on_overflow,
            out=acc,
        )
        self.overflows += count
        return rounded


def matmul(
    a: np.ndarray,
    b: np.ndarray,
    transpose_a: bool,
    transpose_b: bool,
    products: AmpProducts,
) -> np.ndarray:
    """``op(a) @ op(b)`` of binary16 operands (float32 arrays): a float32 array of binary16."""
    lhs = a.T if transpose_a else a
    rhs = b.T if transpose_b else b
    acc = np.zeros((lhs.shape[0], rhs.shape[1]), dtype=np.float32)
    products.accumulate(lhs, rhs, acc)
    return products.finish(acc)


def batch_matmul(
    a: np.ndarray,
    b: np.ndarray,
    transpose_a: bool,
    transpose_b: bool,
    products: AmpProducts,
) -> np.ndarray:
    """:func:`matmul` over the leading (batch) dimensions, broadcasting them like ``np.matmul``."""
    lhs = np.swapaxes(a, -1, -2) if transpose_a else a
    rhs = np.swapaxes(b, -1, -2) if transpose_b else b
    lead = np.broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2])
    lhs = np.broadcast_to(lhs, lead + lhs.shape[-2:])
    rhs = np.broadcast_to(rhs, lead + rhs.shape[-2:])
    out = np.zeros(lead + (lhs.shape[-2], rhs.shape[-1]), dtype=np.float32)
    for index in np.ndindex(*lead):
        products.accumulate(lhs[index], rhs[index], out[index])
    return products.finish(out)
