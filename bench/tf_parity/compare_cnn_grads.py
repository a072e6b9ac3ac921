"""Compare ipusim's CNN kernels with a TensorFlow dump, op by op (diagnostic, no TensorFlow needed).

Run: ``python bench/tf_parity/compare_cnn_grads.py DUMP.npz`` on a file written by
dump_cnn_grads.py. For every dumped step it feeds TensorFlow's own inputs to each of ipusim's
kernels of the CNN (so errors do not propagate from one op to the next) and prints the fraction
of output elements that are bit-identical to TensorFlow's and the worst error relative to the
largest reference element. It also counts the max-pool windows where TensorFlow's forward values
tie exactly, and how many of them ipusim's own convolution breaks (ipusim's max-pool gradient,
given TensorFlow's values, routes exactly as TensorFlow: first maximum in row-major order).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import ipusim.kernels.conv as kc
import ipusim.kernels.dense as kd
import ipusim.kernels.loss as kl
import ipusim.kernels.pool as kp

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BATCH = 16


def _report(name: str, got: np.ndarray, want: np.ndarray) -> None:
    got = np.asarray(got, np.float32)
    want = np.asarray(want, np.float32)
    scale = float(np.max(np.abs(want))) or 1.0
    error = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    print(f"  {name:34s} bit-identical {np.mean(got == want):7.2%}   max rel {error:.1e}")


def _exact_ties(conv_out: np.ndarray) -> np.ndarray:
    """Per 2x2 pooling window (VALID, stride 2) of ReLU(conv_out): True when all four tie."""
    y = np.maximum(conv_out, 0)
    h, w = (y.shape[1] // 2) * 2, (y.shape[2] // 2) * 2
    win = y[:, :h, :w].reshape(y.shape[0], h // 2, 2, w // 2, 2, y.shape[3])
    return np.all(win == win[:, :, :1, :, :1], axis=(2, 4))


def compare_step(dump: np.lib.npyio.NpzFile, step: int, x: np.ndarray, labels: np.ndarray) -> None:
    """Print the op-by-op comparison for one dumped step."""

    def tf(key: str) -> np.ndarray:
        return dump[f"step{step}/{key}"]

    geometry = ((1, 1), (1, 1), (0, 0))
    pool = ((2, 2), (2, 2), (0, 0))
    print(f"step {step}: TensorFlow loss {float(tf('loss')):.8f}")
    conv1 = kc.conv2d(x, tf("w0"), (26, 26), *geometry)
    _report("conv1 forward (+bias)", kd.bias_add(conv1, tf("w1")), tf("a0"))
    conv2 = kd.bias_add(kc.conv2d(tf("a2"), tf("w2"), (11, 11), *geometry), tf("w3"))
    _report("conv2 forward (+bias)", conv2, tf("a3"))
    _report("max-pool 2 forward", kp.max_pool2d(tf("a4"), (5, 5), *pool), tf("a5"))
    _report("dense forward", tf("a6") @ tf("w4") + tf("w5"), tf("a7"))
    grad_loss = np.full(BATCH, 1.0 / BATCH, np.float32)
    _report(
        "softmax cross-entropy gradient",
        kl.sparse_softmax_cross_entropy_grad(grad_loss, labels, tf("a7")),
        tf("da7"),
    )
    _report("dense bias gradient (sum of 16)", kd.bias_add_grad(tf("da7")), tf("dw5"))
    _report("dense kernel gradient (K=16)", tf("a6").T @ tf("da7"), tf("dw4"))
    _report("dense input gradient (K=10)", tf("da7") @ tf("w4").T, tf("da6"))
    _report("max-pool 2 gradient", kp.max_pool2d_grad(tf("a4"), tf("da5"), *pool), tf("da4"))
    _report("conv2 bias gradient (sum of 1936)", kd.bias_add_grad(tf("da3")), tf("dw3"))
    _report(
        "conv2 input gradient",
        kc.conv2d_backprop_input(tf("da3"), tf("w2"), (13, 13, 32), *geometry),
        tf("da2"),
    )
    _report(
        "conv2 filter gradient (K=1936)",
        kc.conv2d_backprop_filter(tf("a2"), tf("da3"), (3, 3), *geometry),
        tf("dw2"),
    )
    _report("max-pool 1 gradient", kp.max_pool2d_grad(tf("a1"), tf("da2"), *pool), tf("da1"))
    _report("conv1 bias gradient (sum of 10816)", kd.bias_add_grad(tf("da0")), tf("dw1"))
    _report(
        "conv1 filter gradient (K=10816)",
        kc.conv2d_backprop_filter(x, tf("da0"), (3, 3), *geometry),
        tf("dw0"),
    )
    tied = _exact_ties(tf("a3"))
    broken = tied & ~_exact_ties(conv2)
    print(
        f"  pool-2 windows tied exactly in TensorFlow: {int(tied.sum())} of {tied.size}; "
        f"ipusim's conv2 breaks {int(broken.sum())} of them"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", type=Path, help="a .npz written by dump_cnn_grads.py")
    args = parser.parse_args()
    dump = np.load(args.dump)
    with np.load(FIXTURES / "training.npz") as data:
        images, labels = data["data/images"], data["data/labels"].astype(np.int32)
        fixture = {k: data[k] for k in data.files if k.startswith("cnn/") and "losses" in k}
    steps = sorted({int(k.split("/")[0][4:]) for k in dump.files if k.startswith("step")})
    for step in steps:
        part = slice(step * BATCH, (step + 1) * BATCH)
        x = (images[part].astype(np.float32) / 255.0).reshape(-1, 28, 28, 1)
        compare_step(dump, step, x, labels[part])
    for name, losses in fixture.items():
        if losses.shape == dump["losses"].shape and np.array_equal(losses[:1], dump["losses"][:1]):
            error = np.max(np.abs(dump["losses"] - losses) / losses)
            print(f"dump's 64 losses against fixture {name}: worst relative error {error:.2e}")


if __name__ == "__main__":
    main()
