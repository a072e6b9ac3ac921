"""The seed MLP (Flatten, Dense 256 relu, Dense 128 relu, Dense 10) trained on MNIST while the
IPU system is simulated. Uses the MNIST test split (8k train / 2k held out) when found, else
synthetic MNIST-shaped data (said in the output).

Run: ``python workloads/mnist_mlp.py --epochs 2``
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ipusim  # noqa: E402
from ipusim import keras  # noqa: E402
from ipusim.demo import load_demo_data, seed_mlp  # noqa: E402
from workloads import common  # noqa: E402


def train(model: keras.Model, args: Any, channels: bool = False) -> Any:
    """Fit ``model`` for ``--steps`` micro-batches per replica and epoch (the images repeat when
    the data set is smaller; timing-only runs never build them: zeros of the right shape)."""
    n = args.steps * args.micro_batch * args.replicas
    if args.timing_only:
        # Shapes are all a timing-only run reads: no images are loaded or made.
        samples = args.samples or n
        x = np.zeros((samples, 28, 28), np.float32)
        y = np.zeros(samples, np.uint8)
        source = "none (timing-only)"
    else:
        data = load_demo_data()
        x, y, source = data.x_train, data.y_train, data.source
    if len(x) < n:
        x, y = np.resize(x, (n, *x.shape[1:])), np.resize(y, n)
    if channels:
        x = x[..., None]
    print(f"data: {source} ({n} training images per epoch)")
    model.compile(
        optimizer=common.optimizer(args) or "adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=common.metrics(args, ["accuracy"]),
        steps_per_execution=common.steps_per_execution(args),
    )
    history = model.fit(x[:n], y[:n], batch_size=args.micro_batch, epochs=args.epochs, verbose=2)
    return history


def main(argv: list[str] | None = None) -> Any:
    p = common.parser(
        "Seed MLP on MNIST, simulated", micro_batch=32, accumulation=1, stages=1, steps=50
    )
    args = common.parse(p, argv)
    common.configure(args)
    with ipusim.IPUStrategy().scope():
        model = seed_mlp()
        common.pipeline(model, args)
        if args.stages > 1:
            raise SystemExit("the MLP is not pipelined here; see mnist_pipelined.py")
        train(model, args)
    return common.report(model, args)


if __name__ == "__main__":
    main()
