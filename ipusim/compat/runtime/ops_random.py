"""``tf.random`` as graph ops: ``uniform``, ``normal``, ``truncated_normal``, ``categorical``,
``shuffle``, the ``stateless_*`` functions and ``Generator``.

Inside a traced function each draw is a ``random_draw`` node: its seed is fixed when the function
is traced (the op ``seed``, else the next seed of ipusim's stream) and every execution draws fresh
numbers (the step is part of the stream key). Eagerly, a call draws at once with the next seed of
the stream. ``stateless_*`` draws depend on their ``seed`` pair only. None of these reproduce
TensorFlow's numbers for a seed (TensorFlow uses Philox; ipusim splitmix64): the distributions are
the same, the bits are not.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.dispatch import is_symbolic
from ipusim.compat.runtime.ops_math import _op
from ipusim.errors import ConfigurationError
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import random_draws as grd
from ipusim.graph.ops import scan as gsc
from ipusim.graph.spec import canonical_dtype
from ipusim.keras.backend import next_seed

_MASK63 = (1 << 63) - 1


def _seed(seed: Any) -> int:
    return next_seed() if seed is None else int(seed) & _MASK63


def _stateless_seed(seed: Any) -> int:
    pair = np.asarray(seed).reshape(-1)
    if pair.size != 2:
        raise ConfigurationError(
            f"stateless random ops need `seed` of shape [2], received {seed!r}"
        )
    return ((int(pair[0]) & 0xFFFFFFFF) << 32 | (int(pair[1]) & 0xFFFFFFFF)) & _MASK63


def _shape(shape: Any) -> tuple[int, ...]:
    if is_symbolic(shape):
        raise ConfigurationError(
            "tf.random: `shape` must be concrete (a list of ints or tf.shape(x))"
        )
    return tuple(int(d) for d in np.asarray(shape).reshape(-1))


def _run(fn: Any, *args: Any, **attrs: Any) -> Any:
    """A draw as a node of the function being traced (fresh values at every execution, even
    from concrete inputs), else executed at once."""
    if context.is_tracing():
        return fn(*args, **attrs)
    return _op(fn, *args, **attrs)


def _draw(shape: Any, dist: str, a: float, b: float, seed: int, dtype: Any, stateless: bool) -> Any:
    return _run(lambda: grd.random_draw(_shape(shape), dist, a, b, seed, dtype, stateless))


def _uniform(shape: Any, minval: Any, maxval: Any, dtype: Any, seed: int, stateless: bool) -> Any:
    kind = canonical_dtype(dtype)
    if np.dtype(kind).kind in "iu":
        if maxval is None:
            raise ConfigurationError("tf.random.uniform: an integer `dtype` needs `maxval`")
        return _draw(shape, "integers", float(minval), float(maxval), seed, kind, stateless)
    high = 1.0 if maxval is None else float(maxval)
    return _draw(shape, "uniform", float(minval), high, seed, kind, stateless)


def uniform(
    shape: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = "float32",
    seed: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.random.uniform``: values in ``[minval, maxval)`` (integers need ``maxval``)."""
    return _uniform(shape, minval, maxval, dtype, _seed(seed), False)


def _normal(dist: str, doc: str) -> Any:
    """``tf.random.<dist>``: ``dist`` draws from the op ``seed``, else ipusim's stream."""

    def draw(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = "float32",
             seed: Any = None, name: str | None = None) -> Any:  # fmt: skip
        return _draw(shape, dist, float(mean), float(stddev), _seed(seed), dtype, False)

    draw.__name__ = draw.__qualname__ = dist
    draw.__doc__ = doc
    return draw


normal = _normal("normal", "``tf.random.normal``: normally distributed values.")
truncated_normal = _normal(
    "truncated_normal",
    "``tf.random.truncated_normal``: normal values redrawn beyond two standard deviations.",
)


def stateless_uniform(
    shape: Any,
    seed: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = "float32",
    name: str | None = None,
    alg: Any = None,
) -> Any:
    """``tf.random.stateless_uniform``: the same values for the same ``seed`` pair, always."""
    return _uniform(shape, minval, maxval, dtype, _stateless_seed(seed), True)


def _stateless(dist: str) -> Any:
    """``tf.random.stateless_<dist>``: ``dist`` draws deterministic in the ``seed`` pair."""

    def draw(shape: Any, seed: Any, mean: float = 0.0, stddev: float = 1.0,
             dtype: Any = "float32", name: str | None = None, alg: Any = None) -> Any:  # fmt: skip
        return _draw(shape, dist, mean, stddev, _stateless_seed(seed), dtype, True)

    draw.__name__ = draw.__qualname__ = f"stateless_{dist}"
    draw.__doc__ = f"``tf.random.stateless_{dist}``: deterministic in the ``seed`` pair."
    return draw


stateless_normal = _stateless("normal")
stateless_truncated_normal = _stateless("truncated_normal")


def categorical(
    logits: Any,
    num_samples: int,
    dtype: Any = "int64",
    seed: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.random.categorical``: ``num_samples`` class indices per row of ``logits``."""
    return _run(grd.random_categorical, logits, num_samples=int(num_samples), seed=_seed(seed),
               dtype=canonical_dtype(dtype))  # fmt: skip


def stateless_categorical(
    logits: Any, num_samples: int, seed: Any, dtype: Any = "int64", name: str | None = None
) -> Any:
    """``tf.random.stateless_categorical``: as ``categorical``, from the ``seed`` pair."""
    return categorical(logits, num_samples, dtype, _stateless_seed(seed))


def shuffle(value: Any, seed: Any = None, name: str | None = None) -> Any:
    """``tf.random.shuffle``: ``value`` with its first axis randomly permuted (the order of
    uniform keys, so a traced shuffle permutes anew at every execution)."""
    seed = _seed(seed)

    def compose(v: Any) -> Any:
        n = v.shape[0]
        keys = grd.random_draw((n,), "uniform", 0.0, 1.0, seed, "float32")
        _, order = gsc.top_k(keys, k=n)
        return gnn.embedding_lookup(v, order)

    return _run(compose, value)


class Generator:
    """``tf.random.Generator``: draws from its own seed; each call advances a counter, so two
    calls differ and a traced call draws anew at every execution."""

    def __init__(self, copy_from: Any = None, state: Any = None, alg: Any = None, seed: int = 0):
        self._seed = int(seed) & _MASK63
        self._count = 0

    @classmethod
    def from_seed(cls, seed: int, alg: Any = None) -> Generator:
        return cls(seed=int(seed))

    @classmethod
    def from_non_deterministic_state(cls, alg: Any = None) -> Generator:
        """ipusim is deterministic: the state comes from ipusim's seed stream."""
        return cls(seed=next_seed())

    def _next(self) -> int:
        self._count += 1
        return (self._seed * 1000003 + self._count) & _MASK63

    def uniform(self, shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = "float32",
                name: str | None = None) -> Any:  # fmt: skip
        return _uniform(shape, minval, maxval, dtype, self._next(), False)

    def normal(self, shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = "float32",
               name: str | None = None) -> Any:  # fmt: skip
        return _draw(shape, "normal", mean, stddev, self._next(), dtype, False)

    def truncated_normal(self, shape: Any, mean: float = 0.0, stddev: float = 1.0,
                         dtype: Any = "float32", name: str | None = None) -> Any:  # fmt: skip
        return _draw(shape, "truncated_normal", mean, stddev, self._next(), dtype, False)

    def make_seeds(self, count: int = 1) -> Any:
        """A ``[2, count]`` int64 array of seeds for the ``stateless_*`` functions."""
        draws = [[self._next(), self._next()] for _ in range(int(count))]
        return np.asarray(draws, dtype=np.int64).T.copy()

    def split(self, count: int = 1) -> list[Generator]:
        """``count`` new generators with independent seeds."""
        return [Generator(seed=self._next()) for _ in range(int(count))]

    def reset_from_seed(self, seed: int) -> None:
        self._seed, self._count = int(seed) & _MASK63, 0


_global: dict[str, Generator | None] = {"generator": None}


def get_global_generator() -> Generator:
    """``tf.random.get_global_generator``: one generator for the process (seeded from ipusim's
    stream on first use)."""
    generator = _global["generator"]
    if generator is None:
        generator = _global["generator"] = Generator.from_non_deterministic_state()
    return generator


def set_global_generator(generator: Generator) -> None:
    """``tf.random.set_global_generator``."""
    _global["generator"] = generator


def create_rng_state(seed: int, alg: Any) -> Any:
    """``tf.random.create_rng_state``: a state vector holding ``seed``."""
    return np.asarray([int(seed), 0, 0], dtype=np.int64)


class Algorithm(enum.Enum):
    """``tf.random.Algorithm``: names only; ipusim always uses its splitmix64 stream."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


__all__ = [
    "Algorithm", "Generator", "categorical", "create_rng_state", "get_global_generator",
    "normal", "set_global_generator", "shuffle", "stateless_categorical", "stateless_normal",
    "stateless_truncated_normal", "stateless_uniform", "truncated_normal", "uniform",
]  # fmt: skip
