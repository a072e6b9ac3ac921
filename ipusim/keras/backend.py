"""Process-wide Keras settings: float type, epsilon, random seed stream, layer name counters.

ipusim is deterministic by default: the seed stream starts from seed 0, so two runs of the same
script give the same initial weights, dropout masks and shuffles. ``keras.utils.set_random_seed(s)``
restarts the stream from ``s``.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.numerics import set_rounding_seed

_FLOATX = "float32"
_EPSILON = 1e-7
_lock = threading.Lock()
_seed_state = {"seed": 0, "counter": 0}
_name_counts: dict[str, int] = defaultdict(int)


def floatx() -> str:
    """The default float dtype for weights and float inputs (``"float32"``; ``"float16"`` makes
    layers compute and keep weights in half precision, see ``docs/numerics.md``)."""
    return _FLOATX


def set_floatx(value: str) -> None:
    """Set the default float dtype: ``"float16"``, ``"float32"`` or ``"float64"``."""
    global _FLOATX
    if value not in ("float16", "float32", "float64"):
        raise ConfigurationError(
            f"set_floatx: expected 'float16', 'float32' or 'float64', received {value!r}"
        )
    _FLOATX = value


def epsilon() -> float:
    """The fuzz factor Keras uses in losses (1e-7)."""
    return _EPSILON


def set_epsilon(value: float) -> None:
    global _EPSILON
    _EPSILON = float(value)


def set_random_seed(seed: int) -> None:
    """Restart the seed stream from ``seed`` (weights, dropout seeds, shuffles drawn after this)."""
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigurationError(f"set_random_seed: expected a non-negative int, received {seed!r}")
    with _lock:
        _seed_state["seed"] = int(seed)
        _seed_state["counter"] = 0
    set_rounding_seed(int(seed))  # the IPU's stochastic rounding shares the seed


def next_seed() -> int:
    """The next 31-bit seed from the stream."""
    with _lock:
        seed, count = _seed_state["seed"], _seed_state["counter"]
        _seed_state["counter"] = count + 1
    return int(np.random.default_rng([seed, count]).integers(0, 2**31 - 1))


def make_rng(seed: int | None = None) -> np.random.Generator:
    """A Generator from ``seed``, or from the next seed of the stream when None."""
    return np.random.default_rng(next_seed() if seed is None else seed)


def to_snake_case(name: str) -> str:
    """``"Conv2D"`` -> ``"conv2d"``, ``"BatchNormalization"`` -> ``"batch_normalization"``."""
    step = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", step).lower()


def unique_name(base: str) -> str:
    """``base``, then ``base_1``, ``base_2``... as Keras names layers."""
    with _lock:
        count = _name_counts[base]
        _name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def clear_session() -> None:
    """Reset layer name counters and the seed stream (to seed 0), as ``keras.backend.clear_session``."""
    with _lock:
        _name_counts.clear()
        _seed_state["seed"] = 0
        _seed_state["counter"] = 0
    set_rounding_seed(0)


# The tensor functions of keras.backend (K.mean, K.square, K.expand_dims...) for Lambda layers
# and custom losses; they shadow builtins (abs, sum, max, pow) in this namespace, as in Keras'.
from ipusim.keras.backend_ops import *  # noqa: E402, F403, A004
