"""The CNN of Graphcore's PopTorch data-loading tutorial, written in Keras: Conv 1→5 3×3, max
pool 2, Conv 5→12 5×5, group norm, Dense 41,772→100→10, on 128×128 single-channel images.

Source of the model: graphcore/examples ``tutorials/tutorials/pytorch/efficient_data_loading``.
Run: ``python workloads/poptorch_cnn.py --micro-batch 16 --steps-per-execution 50 --timing-only``
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
from ipusim.keras import ops  # noqa: E402
from workloads import common  # noqa: E402


class GroupNormalization(keras.layers.Layer):
    """Normalises each sample over groups of channels (torch.nn.GroupNorm), with a learned scale
    and offset per channel, written with ``keras.ops``."""

    def __init__(self, groups: int, epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.groups, self.epsilon = groups, epsilon

    def build(self, input_shape: Any) -> None:
        channels = input_shape[-1]
        if channels % self.groups:
            raise ValueError(f"{channels} channels do not split into {self.groups} groups")
        self.gamma = self.add_weight("gamma", (channels,), initializer="ones")
        self.beta = self.add_weight("beta", (channels,), initializer="zeros")
        self.built = True

    def call(self, x: Any) -> Any:
        n, h, w, c = x.shape
        g = ops.reshape(x, (-1, h, w, self.groups, c // self.groups))
        mean = ops.mean(g, axis=(1, 2, 4), keepdims=True)
        centred = ops.subtract(g, mean)
        var = ops.mean(ops.square(centred), axis=(1, 2, 4), keepdims=True)
        normed = ops.divide(centred, ops.sqrt(ops.add(var, self.epsilon)))
        return ops.add(ops.multiply(ops.reshape(normed, (-1, h, w, c)), self.gamma), self.beta)


def tutorial_cnn(image_size: int = 128) -> keras.Sequential:
    return keras.Sequential(
        [
            keras.Input((image_size, image_size, 1)),
            keras.layers.Conv2D(5, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(12, 5, activation="relu"),
            GroupNormalization(4),
            keras.layers.Flatten(),
            keras.layers.Dense(100, activation="relu"),
            keras.layers.Dense(10),
        ]
    )


def main(argv: list[str] | None = None) -> Any:
    p = common.parser(
        "The PopTorch tutorial CNN on 128x128 images, simulated",
        micro_batch=16,
        accumulation=1,
        stages=1,
        steps=50,
    )
    args = common.parse(p, argv)
    common.configure(args)
    with ipusim.IPUStrategy().scope():
        model = tutorial_cnn()
        common.pipeline(model, args)
        model.compile(
            optimizer=common.optimizer(args) or "sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=common.metrics(args),
            steps_per_execution=common.steps_per_execution(args),
        )
        images = np.zeros((args.micro_batch, 128, 128, 1), np.float32)
        labels = np.zeros(args.micro_batch, np.int32)
        model.fit(
            common.synthetic(images, labels),
            epochs=args.epochs,
            steps_per_epoch=args.steps * args.replicas,
            verbose=0,
        )
    return common.report(model, args)


if __name__ == "__main__":
    main()
