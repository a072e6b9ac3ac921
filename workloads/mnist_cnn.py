"""The MNIST CNN (Conv2D 32, MaxPool, Conv2D 64, MaxPool, Flatten, Dropout 0.5, Dense 10) trained
on MNIST while the IPU system is simulated.

Run: ``python workloads/mnist_cnn.py --epochs 2``
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ipusim  # noqa: E402
from ipusim import keras  # noqa: E402
from workloads import common  # noqa: E402
from workloads.mnist_mlp import train  # noqa: E402


def cnn() -> keras.Sequential:
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(10),
        ]
    )


def main(argv: list[str] | None = None) -> Any:
    p = common.parser("MNIST CNN, simulated", micro_batch=32, accumulation=1, stages=1, steps=50)
    args = common.parse(p, argv)
    common.configure(args)
    with ipusim.IPUStrategy().scope():
        model = cnn()
        common.pipeline(model, args)
        train(model, args, channels=True)
    return common.report(model, args)


if __name__ == "__main__":
    main()
