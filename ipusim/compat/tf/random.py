"""``tf.random``: seeding, and seeded random arrays drawn from ipusim's seed stream.

``set_seed(s)`` restarts ipusim's single seed stream (weights, dropout masks, shuffles), like
``keras.utils.set_random_seed``. ``uniform`` and ``normal`` return numpy arrays drawn from that
stream (or from ``seed`` when given), so the same script gives the same numbers every run. Other
names come from ``ipusim.compat.runtime.ops`` (its ``random`` namespace) when it is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.compat._alias import runtime_getattr
from ipusim.data.dtypes import as_dtype, float32
from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Symbol
from ipusim.keras.backend import make_rng, set_random_seed

__all__ = ["normal", "set_seed", "uniform"]


def set_seed(seed: int) -> None:
    """Restart ipusim's seed stream from ``seed`` (a non-negative int)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigurationError(
            f"tf.random.set_seed: `seed` must be a non-negative int, received {seed!r}"
        )
    set_random_seed(int(seed))


def _traced(name: str) -> Callable[..., Symbol] | None:
    """The runtime's graph version of ``name`` while a traced function is being built (so the
    draw becomes a node with fresh values at every execution), else None."""
    from ipusim.compat.runtime import context, ops_random

    if not context.is_tracing():
        return None
    draw: Callable[..., Symbol] = getattr(ops_random, name)
    return draw


def _rng(seed: int | None) -> np.random.Generator:
    return make_rng(None if seed is None else int(seed))


def _shape(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if any(isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0 for d in dims):
        raise ConfigurationError(f"`shape` must be a list of non-negative ints, received {shape!r}")
    return tuple(int(d) for d in dims)


def uniform(
    shape: Any,
    minval: float = 0.0,
    maxval: float | None = None,
    dtype: Any = float32,
    seed: int | None = None,
    name: str | None = None,
) -> np.ndarray | Symbol:
    """Uniform values in ``[minval, maxval)`` (``maxval`` defaults to 1 for floats).

    Integer dtypes need ``maxval`` and draw integers in ``[minval, maxval)``.
    """
    traced = _traced("uniform")
    if traced is not None:
        return traced(shape, minval, maxval, as_dtype(dtype).name, seed)
    kind = as_dtype(dtype)
    rng = _rng(seed)
    if kind.is_integer:
        if maxval is None:
            raise ConfigurationError("tf.random.uniform: an integer `dtype` needs `maxval`")
        return rng.integers(int(minval), int(maxval), size=_shape(shape)).astype(kind.dtype)
    high = 1.0 if maxval is None else float(maxval)
    return rng.uniform(float(minval), high, size=_shape(shape)).astype(kind.dtype)


def normal(
    shape: Any,
    mean: float = 0.0,
    stddev: float = 1.0,
    dtype: Any = float32,
    seed: int | None = None,
    name: str | None = None,
) -> np.ndarray | Symbol:
    """Normally distributed values with the given ``mean`` and ``stddev``."""
    traced = _traced("normal")
    if traced is not None:
        return traced(shape, mean, stddev, as_dtype(dtype).name, seed)
    kind = as_dtype(dtype)
    if not kind.is_floating:
        raise ConfigurationError(
            f"tf.random.normal: `dtype` must be a float type, received {kind.name}"
        )
    return _rng(seed).normal(float(mean), float(stddev), size=_shape(shape)).astype(kind.dtype)


__getattr__ = runtime_getattr(
    __name__, ("ipusim.compat.runtime.ops:random", "ipusim.compat.runtime.namespaces:random"), ()
)
