"""``ipu.ops.rand_ops`` (also ``ipu.rand_ops``): Poprand's dropout (IPU TensorFlow 2.x,
``tensorflow/python/ipu/ops/rand_ops.py``) on ipusim's dropout op.

Kept elements are scaled by ``1 / (1 - rate)``. The mask comes from a seed (the ``seed`` pair
combined, else the next seed of ipusim's seed stream) and the execution's step, so a seeded
program repeats its masks run after run (a new process), while successive executions draw new
masks (on the IPU a constant seed pair repeats one mask). As ipusim's Keras ``Dropout``, the op
drops only in executions that train (a traced step with an optimizer update or a backward pass).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.compat.runtime.dispatch import run_op
from ipusim.errors import ConfigurationError
from ipusim.graph.ops import random as grandom
from ipusim.keras import backend

__all__ = ["dropout"]


def dropout(
    x: Any,
    rate: float = 0.5,
    noise_shape: Any = None,
    seed: Any = None,
    name: str | None = None,
    **kwargs: Any,
) -> Any:
    """Zero each element of ``x`` with probability ``rate``, scale the rest by ``1/(1-rate)``.

    Raises:
        ValueError: ``rate`` outside [0, 1), a ``noise_shape`` of another rank or with a
            dimension that is neither 1 nor ``x``'s, or a seed that is not a pair (IPU
            TensorFlow's checks).
    """
    if rate >= 1.0 or rate < 0.0:
        raise ConfigurationError(f"The rate must be in the range [0, 1), but was {rate}")
    if noise_shape:
        x_shape = list(x.shape)
        if len(x_shape) != len(noise_shape):
            raise ConfigurationError("The length of noise_shape must equal the rank of x.")
        for i, j in zip(x_shape, noise_shape):
            if j != 1 and i != j:
                raise ConfigurationError(f"Dimension mismatch, {i} != {j}.")
    if seed is None:
        op_seed = backend.next_seed()
    else:
        pair = np.asarray(seed).reshape(-1)
        if pair.shape != (2,):
            raise ConfigurationError(
                f"Expected the seed to have a shape [2], but got {list(np.shape(seed))}."
            )
        op_seed = ((int(pair[0]) & 0xFFFFFFFF) << 32 | (int(pair[1]) & 0xFFFFFFFF)) % 2**63
    shape = None if not noise_shape else tuple(int(d) for d in noise_shape)
    return run_op(grandom.dropout, x, rate=float(rate), seed=op_seed, noise_shape=shape)
