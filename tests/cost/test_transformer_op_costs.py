"""Transformer ops (GELU, softmax and its gradient, the matmuls' element-wise neighbours) against
PopLibs' own cycle estimators, written out here from the source (graphcore/poplibs, commit
7eac0f2 of 2023-08-11):

- popnn ``NonLinearity1D`` (``lib/popnn/popnnCycleEstimators.cpp``
  ``nonLinearity1DCycleEstimator``) with the per-vector cycles of
  ``lib/popnn/PerformanceEstimation.hpp`` ``getNonLinearityOpCycles`` (GELU 5 half / 10 float,
  TANH 1 / 5 times 2 for a vector, SIGMOID 2 / 5 times 2) and ``getNonLinearityGradOpCycles``;
- popops ``UnaryOp1D`` (``lib/popops/popopsCycleEstimators.cpp``) with
  ``unaryOpPerfInfo`` (``popopsCycleEstimators.hpp``: GELU_ERF 16 half / 22 float per element);
- popnn ``softmaxInputGradientImpl`` (``lib/popnn/NonLinearity.cpp``): mul, reduce, mul, sub.

ipusim's vertex model (``ipusim/cost/vector.py``) is the generic one, ``6 × (prologue + loop) +
supervisor``, so a single vertex agrees with PopLibs' estimate to within its fixed overheads
(tens of cycles); the per-element rates must be the same.
"""

from __future__ import annotations

import math

import pytest

from ipusim.cost import vector

WORKERS = 6


def popnn_nonlinearity_1d(n: int, half: bool, vector_cycles: int, op_cycles: int) -> int:
    """popnn's NonLinearity1D estimate for ``n`` elements on one tile (aligned path, no unpack)."""
    width = 4 if half else 2
    vectors, remainder = divmod(n, width)
    per_worker = -(-vectors // WORKERS)
    overhead = 3 + 5 + 2 + 2 + 5 + 3
    worker = overhead + (2 + op_cycles + (per_worker - 1) * vector_cycles + 1 + op_cycles)
    if half:
        worker += 2 + 1 + (2 + op_cycles if remainder & 2 else 0) + 1
        worker += 3 + op_cycles if remainder & 1 else 0
    else:
        worker += 3 + (2 + op_cycles if remainder & 1 else 0)
    return 9 + WORKERS * worker


def popnn_nonlinearity_grad_1d(n: int, half: bool, vector_cycles: int) -> int:
    """popnn's NonLinearityGrad1D estimate (the loop part and its fixed costs)."""
    width = 4 if half else 2
    per_worker = -(-(n // width) // WORKERS)
    worker = 3 + 5 + 2 + 3 + 3 + 3 + 1 + (4 + (per_worker - 1) * vector_cycles + 1)
    return 9 + WORKERS * worker


def popops_unary_1d(n: int, cycles_per_element: int) -> int:
    """popops UnaryOp1D with an unroll of one element: 17 + per-worker loop, plus 9 and the
    supervisor's 11 (``basicOpSupervisorOverhead``)."""
    per_worker = -(-n // WORKERS)
    return WORKERS * (17 + per_worker * cycles_per_element) + 9 + 11


N = 6144  # elements of one tile: a 6 x 1024 slice of BERT-Large's hidden activations


@pytest.mark.parametrize(
    "op,half,vector_cycles,op_cycles",
    [
        ("gelu", True, 5, 5),  # GELU: isFloat ? 10 : 5, the same for a vector
        ("gelu", False, 10, 10),
        ("tanh", True, 2, 1),  # TANH: (isFloat ? 5 : 1) * (isVector ? 2 : 1)
        ("tanh", False, 10, 5),
        ("sigmoid", True, 4, 2),  # SIGMOID: (isFloat ? 5 : 2) * (isVector ? 2 : 1)
        ("sigmoid", False, 10, 5),
        ("relu", True, 1, 1),
    ],
)
def test_nonlinearities_agree_with_popnn(op, half, vector_cycles, op_cycles) -> None:
    ours = vector.elementwise(op, N, 2 if half else 4, 1).compute
    theirs = popnn_nonlinearity_1d(N, half, vector_cycles, op_cycles)
    # the same rate per element; the fixed parts differ by a few tens of cycles
    assert abs(ours - theirs) <= 0.02 * theirs + 60


@pytest.mark.parametrize(
    "op,half,vector_cycles",
    [("gelu_grad", True, 5), ("gelu_grad", False, 10), ("tanh_grad", True, 3)],
)
def test_nonlinearity_gradients_agree_with_popnn(op, half, vector_cycles) -> None:
    ours = vector.elementwise(op, N, 2 if half else 4, 1).compute
    theirs = popnn_nonlinearity_grad_1d(N, half, vector_cycles)
    assert abs(ours - theirs) <= 0.02 * theirs + 60


@pytest.mark.parametrize("half,per_element", [(True, 16), (False, 22)])
def test_exact_gelu_agrees_with_popops_gelu_erf(half, per_element) -> None:
    ours = vector.elementwise("gelu_erf", N, 2 if half else 4, 1).compute
    assert abs(ours - popops_unary_1d(N, per_element)) <= 0.02 * ours + 60


def test_softmax_gradient_is_three_binary_passes_and_one_reduction() -> None:
    # 8 rows of 512 attention scores in fp16 on one tile. By hand, from the vertex model with
    # popops' binary rate (1 cycle per vector of 4 halves + 2 of loop overhead = 0.75 a half):
    rows, width = 8, 512
    n = rows * width
    vectors = math.ceil(math.ceil(n / WORKERS) / 4)  # per worker, whole vectors of 4 halves
    fixed = 6 * 26 + 11  # worker prologue and supervisor overhead of one vertex
    passes = fixed + math.ceil(WORKERS * vectors * 4 * (3 * 0.75)) + 2 * fixed
    reduce = fixed + math.ceil(WORKERS * vectors * 4 * 0.25)  # 1 cycle per 4 halves
    work = vector.composite(vector.SOFTMAX_BWD, 1, n, rows, 2, 1)
    assert work.compute == passes + reduce == 10_928
    assert work.compute_sets == 4  # mul, mul, sub, and the reduction
