"""The pipelined MNIST model of the Graphcore tutorial: Flatten + Dense 256 on stage 0,
Dense 128 + Dense 10 (softmax) on stage 1, over two simulated IPUs.

Run: ``python workloads/mnist_pipelined.py --accumulation 8 --schedule interleaved``
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


def tutorial_model(micro_batch: int = 32) -> keras.Model:
    inputs = keras.Input((28, 28, 1), batch_size=micro_batch)
    with keras.ipu.PipelineStage(0):
        x = keras.layers.Flatten()(inputs)
        x = keras.layers.Dense(256, activation="relu", name="Dense_256")(x)
    with keras.ipu.PipelineStage(1):
        x = keras.layers.Dense(128, activation="relu", name="Dense_128")(x)
        x = keras.layers.Dense(10, name="Dense_10")(x)
    return keras.Model(inputs, x)


def main(argv: list[str] | None = None) -> Any:
    p = common.parser(
        "Pipelined MNIST (tutorial model) on two simulated IPUs",
        micro_batch=32,
        accumulation=8,
        stages=2,
        steps=64,
    )
    args = common.parse(p, argv)
    common.configure(args)
    with ipusim.IPUStrategy().scope():
        model = tutorial_model(args.micro_batch)
        common.pipeline(model, args)
        train(model, args, channels=True)
    return common.report(model, args)


if __name__ == "__main__":
    main()
