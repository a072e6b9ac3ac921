"""ipusim's CNN training runs against TensorFlow's spread of runs (diagnostic, no TensorFlow needed).

Run: ``python bench/tf_parity/branch_report.py`` (about a minute). For each optimizer of the CNN
training fixture it prints the worst per-step relative loss error of ipusim against every
TensorFlow configuration in ``fixtures/cnn_branches.npz`` (written by cnn_branches.py: oneDNN
off with 2 threads, which is the fixture; oneDNN off with 1 thread; oneDNN on), for ipusim as it
is and for two diagnostic variants of its float32 convolution forward pass:

* ``tf_order``: every output pixel's dot product in one fixed order, TensorFlow's (the reduction
  dimension cut into equal slices of at most 224 taps rounded up to a multiple of 8, each slice
  a chain of fused multiply-adds, slices added in order; measured bit-exact against TensorFlow
  2.21 on this machine for the CNN's two convolutions and its dense layer);
* ``float64``: the same GEMM in float64, rounded once to float32.

ipusim's convolution is im2col + one OpenBLAS SGEMM, whose float32 result for two identical
input patches can differ in the last bit depending on the patch's row in the GEMM, which breaks
the exact ties that MNIST's constant background makes in the max-pool windows; TensorFlow
computes every output pixel the same way, so its ties stay exact. The variants are patched in
here only (they are much slower than the BLAS path).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "numerics"))

import tf_parity_cases as parity  # noqa: E402

import ipusim.kernels.conv as kc  # noqa: E402
from ipusim.graph.ops.conv import Conv2D  # noqa: E402

#: Largest K slice of TensorFlow's contraction blocking on the reference machine (M, fitted:
#: reproduces its K=288 -> 2x144 and K=1600 -> 8x200 slicing bit for bit).
MAX_SLICE = 224


def _k_slices(k: int) -> list[int]:
    """TensorFlow's K slices for a contraction of depth ``k`` (see the module docstring)."""
    if k <= MAX_SLICE:
        return [k]
    rest = k % MAX_SLICE
    kc_eigen = MAX_SLICE
    if rest:
        kc_eigen -= 8 * ((MAX_SLICE - 1 - rest) // (8 * (k // MAX_SLICE + 1)))
    slices = -(-k // kc_eigen)
    size = -(-(k // slices) // 8) * 8
    return [min(size, k - start) for start in range(0, k, size)]


def _gemm_tf_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in float32 with TensorFlow's K order; fused multiply-add emulated in float64."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    total, start = None, 0
    for size in _k_slices(a.shape[1]):
        acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for t in range(start, start + size):
            acc = (a64[:, t : t + 1] * b64[t] + acc).astype(np.float32)
        total = acc if total is None else (total + acc).astype(np.float32)
        start += size
    return total


def _gemm_float64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def _conv_with(gemm):
    def conv2d(x, filters, out_hw, strides, dilation, pads, product=None):
        x = np.ascontiguousarray(x)
        n, h, w, c = x.shape
        kh, kw, _, cout = filters.shape
        ho, wo = out_hw
        w2 = np.ascontiguousarray(filters).reshape(kh * kw * c, cout)
        cols = np.empty((n * ho * wo, w2.shape[0]), dtype=x.dtype)
        geometry = (kh, kw, strides[0], strides[1], dilation[0], dilation[1], *pads, ho, wo)
        kc._im2col(x.reshape(n, h, w * c), 0, n, *geometry, cols)
        return gemm(cols, w2).reshape(n, ho, wo, cout)

    return conv2d


VARIANTS = {"ipusim": None, "tf_order": _gemm_tf_order, "float64": _gemm_float64}


def main() -> None:
    cases = {c.name: c for c in parity.load("training")}
    initial = parity.initial_weights(cases["cnn/init"])
    branches = np.load(parity.FIXTURES / "cnn_branches.npz")
    configs = sorted({k.split("/")[0] for k in branches.files if k != "meta"})
    original = Conv2D.__dict__["kernel"]  # the op holds its kernel: patch the op, not kc
    print(f"{'variant':9s} {'optimizer':13s} " + " ".join(f"{c:>15s}" for c in configs))
    for variant, gemm in VARIANTS.items():
        Conv2D.kernel = original if gemm is None else staticmethod(_conv_with(gemm))
        try:
            for name in ("sgd_momentum", "rmsprop", "adam", "adagrad"):
                got = parity.run_training(cases[f"cnn/{name}"], cases["data"], initial)["losses"][0]
                errors = [
                    np.max(np.abs(got - branches[f"{c}/{name}"]) / branches[f"{c}/{name}"])
                    for c in configs
                ]
                print(f"{variant:9s} {name:13s} " + " ".join(f"{e:15.2e}" for e in errors))
        finally:
            Conv2D.kernel = original


if __name__ == "__main__":
    main()
