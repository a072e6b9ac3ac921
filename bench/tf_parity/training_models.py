"""The models of the 64-step training fixtures, and the seed MLP's initial weights.

Both sides use these one definitions: generate.py builds the models with TensorFlow's Keras
(in the TensorFlow environment), the parity tests with ipusim's (the ``keras`` module is an
argument: nothing here imports either). generate.py draws the MLP's weights and stores their
SHA-256 in the fixture; the tests draw them again and check the digest before training from
them. The full MLP (235k parameters) is not stored.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

#: Input shape of each fixture model (one MNIST image).
INPUT_SHAPES = {"mlp": (28, 28), "cnn": (28, 28, 1)}


def build(name: str, keras: Any) -> Any:
    """The fixture model ``name`` (``"mlp"``: the seed MLP 784-256-128-10; ``"cnn"``: the MNIST
    CNN) as a ``keras.Sequential`` of the given Keras module."""
    if name == "mlp":
        return keras.Sequential(
            [
                keras.layers.Flatten(input_shape=INPUT_SHAPES["mlp"]),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(128, activation="relu"),
                keras.layers.Dense(10),
            ]
        )
    return keras.Sequential(
        [
            keras.layers.Conv2D(32, 3, activation="relu", input_shape=INPUT_SHAPES["cnn"]),
            keras.layers.MaxPooling2D(2),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )


def mlp_initial_weights(seed: int) -> list[np.ndarray]:
    """The seed MLP's initial weights (784-256-128-10): Glorot-uniform kernels, small biases,
    drawn from ``np.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in ((784, 256), (256, 128), (128, 10)):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        out.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        out.append(rng.uniform(-0.05, 0.05, fan_out).astype(np.float32))
    return out


def weights_digest(weights: list[np.ndarray]) -> str:
    """SHA-256 (hex) of the weights as little-endian float32, in order."""
    digest = hashlib.sha256()
    for w in weights:
        digest.update(np.ascontiguousarray(w, dtype="<f4").tobytes())
    return digest.hexdigest()
