"""Weight initializers with Keras names and defaults, drawing from a seeded numpy Generator.

Without an explicit ``seed`` each initializer draws a seed from the process seed stream when it
is created (see ``ipusim.keras.backend``), so results are reproducible run to run.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras import backend
from ipusim.keras.keyword_init import fields


def _fans(shape: tuple[int, ...]) -> tuple[float, float]:
    """fan_in and fan_out as Keras computes them (conv kernels: receptive field × channels)."""
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: ``initializer(shape, dtype) -> np.ndarray``."""

    #: The constructor arguments ``get_config`` returns (attributes of the same names).
    _config_names = ""

    def __call__(self, shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return fields(self, self._config_names)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        return cls(**config)


class Constant(Initializer):
    def __init__(self, value: float = 0.0) -> None:
        self.value = value

    def __call__(self, shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        return np.full(shape, self.value, dtype=dtype or backend.floatx())

    _config_names = "value"


class Zeros(Constant):
    def __init__(self) -> None:
        super().__init__(0.0)

    _config_names = ""


class Ones(Constant):
    def __init__(self) -> None:
        super().__init__(1.0)

    _config_names = ""


class _Random(Initializer):
    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._stream_seed = backend.next_seed() if seed is None else int(seed)
        self._calls = 0

    def _rng(self) -> np.random.Generator:
        # Each call of the same initializer object gives new values, reproducibly.
        rng = np.random.default_rng([self._stream_seed, self._calls])
        self._calls += 1
        return rng

    _config_names = "seed"

    def _deferred(self, shape: tuple[int, ...], dtype: str) -> Callable[[], np.ndarray]:
        """``self(shape, dtype)`` to run later, with the draw an immediate call would take."""
        call = self._calls
        self._calls += 1  # reserved now: later calls draw as if this one had run

        def draw() -> np.ndarray:
            later = self._calls
            self._calls = call
            try:
                return self(shape, dtype=dtype)
            finally:
                self._calls = later

        return draw


class RandomUniform(_Random):
    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        values = self._rng().uniform(self.minval, self.maxval, size=shape)
        return values.astype(dtype or backend.floatx())

    _config_names = "minval maxval seed"


class RandomNormal(_Random):
    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        values = self._rng().normal(self.mean, self.stddev, size=shape)
        return values.astype(dtype or backend.floatx())

    _config_names = "mean stddev seed"


def _truncated_normal(
    rng: np.random.Generator, stddev: float, shape: tuple[int, ...]
) -> np.ndarray:
    """Normal(0, stddev) redrawn until within two standard deviations, as TF does."""
    values = rng.normal(0.0, stddev, size=shape)
    bad = np.abs(values) > 2 * stddev
    while np.any(bad):
        values[bad] = rng.normal(0.0, stddev, size=int(bad.sum()))
        bad = np.abs(values) > 2 * stddev
    return values


class TruncatedNormal(_Random):
    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        values = self.mean + _truncated_normal(self._rng(), self.stddev, shape)
        return values.astype(dtype or backend.floatx())

    _config_names = "mean stddev seed"


class VarianceScaling(_Random):
    """Keras VarianceScaling: scale / fan, uniform or truncated normal."""

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
    ) -> None:
        if scale <= 0:
            raise ConfigurationError(f"VarianceScaling: `scale` must be positive, received {scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ConfigurationError(
                f"VarianceScaling: `mode` must be fan_in, fan_out or fan_avg, received {mode!r}"
            )
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform", "normal"):
            raise ConfigurationError(f"VarianceScaling: unknown `distribution` {distribution!r}")
        super().__init__(seed)
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        fan_in, fan_out = _fans(tuple(shape))
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        scale = self.scale / max(1.0, fan)
        rng = self._rng()
        if self.distribution in ("truncated_normal", "normal"):
            stddev = math.sqrt(scale) / 0.87962566103423978  # std of a unit normal cut at ±2
            values = _truncated_normal(rng, stddev, shape)
        elif self.distribution == "untruncated_normal":
            values = rng.normal(0.0, math.sqrt(scale), size=shape)
        else:
            limit = math.sqrt(3.0 * scale)
            values = rng.uniform(-limit, limit, size=shape)
        return values.astype(dtype or backend.floatx())

    _config_names = "scale mode distribution seed"


class Orthogonal(_Random):
    """Keras ``Orthogonal``: a random orthogonal matrix (the Q of a normal matrix's QR, signs
    fixed by R's diagonal) over ``(prod(shape[:-1]), shape[-1])``, times ``gain``."""

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        super().__init__(seed)
        self.gain = float(gain)

    def __call__(self, shape: tuple[int, ...], dtype: str | None = None) -> np.ndarray:
        shape = tuple(shape)
        if len(shape) < 2:
            raise ConfigurationError(
                f"Orthogonal: the shape must have at least 2 dimensions, received {shape}"
            )
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        q, r = np.linalg.qr(self._rng().normal(0.0, 1.0, size=flat))
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q.reshape(shape)).astype(dtype or backend.floatx())

    _config_names = "gain seed"


def _preset(name: str, scale: float, mode: str, distribution: str) -> type[VarianceScaling]:
    def __init__(self: VarianceScaling, seed: int | None = None) -> None:
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    return type(name, (VarianceScaling,), {"__init__": __init__, "_config_names": "seed"})


GlorotUniform = _preset("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeUniform = _preset("HeUniform", 2.0, "fan_in", "uniform")
HeNormal = _preset("HeNormal", 2.0, "fan_in", "truncated_normal")
LecunUniform = _preset("LecunUniform", 1.0, "fan_in", "uniform")
LecunNormal = _preset("LecunNormal", 1.0, "fan_in", "truncated_normal")

#: The initializer classes above by name: every public Initializer subclass.
_BY_CLASS: dict[str, type[Initializer]] = {
    value.__name__: value
    for value in list(globals().values())
    if isinstance(value, type)
    and issubclass(value, Initializer)
    and value is not Initializer
    and not value.__name__.startswith("_")
}
#: The same by Keras' snake_case names (``"glorot_uniform"``).
_BY_NAME = {backend.to_snake_case(name): cls for name, cls in _BY_CLASS.items()}


def get(identifier: Any) -> Initializer | Callable[..., np.ndarray]:
    """An initializer from a name (``"glorot_uniform"``), a class name, a config dict or itself."""
    if isinstance(identifier, Initializer):
        return identifier
    if callable(identifier) and not isinstance(identifier, type):
        user_fn: Callable[..., np.ndarray] = identifier
        return user_fn  # a user function (shape, dtype) -> array
    if isinstance(identifier, dict):
        cls = _BY_CLASS.get(identifier.get("class_name", ""))
        if cls is None:
            raise ConfigurationError(f"unknown initializer config {identifier!r}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _BY_CLASS.get(identifier)
        if cls is not None:
            return cls()
        close = difflib.get_close_matches(identifier, list(_BY_NAME) + list(_BY_CLASS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigurationError(
            f"unknown initializer {identifier!r}.{hint} Valid names: {', '.join(sorted(_BY_NAME))}"
        )
    raise ConfigurationError(f"cannot interpret {identifier!r} as an initializer")


def deferred(
    initializer: Any, shape: tuple[int, ...], dtype: str
) -> tuple[Callable[[], np.ndarray], bool]:
    """``initializer(shape, dtype)`` to call when the weight is first needed.

    Returns:
        The call, and whether it gives, whenever it runs, what an immediate call gives: true
        for ipusim's initializers (a seeded one reserves its draw now, a constant one has none),
        false for a user function, which may keep state of its own.
    """
    if isinstance(initializer, _Random):
        return initializer._deferred(shape, dtype), True
    order_free = isinstance(initializer, Constant)
    return (lambda: initializer(shape, dtype=dtype)), order_free


def serialize(initializer: Any) -> Any:
    if isinstance(initializer, Initializer):
        return {"class_name": type(initializer).__name__, "config": initializer.get_config()}
    raise ConfigurationError(
        f"initializer {initializer!r} cannot be serialized (not an Initializer)"
    )
