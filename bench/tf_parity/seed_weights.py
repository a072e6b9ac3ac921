"""The seed MLP's initial weights for the 64-step training fixtures, and their digest.

NumPy only, so both sides use the one definition: generate.py (in the TensorFlow environment)
draws the weights and stores their SHA-256 in the fixture; the parity tests draw them again and
check the digest before training from them. The full MLP (235k parameters) is not stored.
"""

from __future__ import annotations

import hashlib

import numpy as np


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
