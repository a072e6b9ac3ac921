"""Regularisation layers that add noise in training: GaussianNoise, GaussianDropout,
AlphaDropout and SpatialDropout1D/2D/3D. At inference each is the identity, as in tf.keras.

The noise comes from the same seed stream as Dropout: a layer built without a ``seed`` takes the
next seed of the process stream (``keras.utils.set_random_seed`` restarts it); the numbers are a
pure function of that seed, the training step and the element (:mod:`ipusim.graph.ops.noise`).
"""

from __future__ import annotations

import math
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.graph.ops.noise import random_draw
from ipusim.keras import backend
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.core import Dropout, SameShapeLayer, check_rank

#: SELU's constants (Klambauer et al. 2017), as tf.keras' AlphaDropout uses them. S
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _rate(layer: str, rate: Any) -> float:
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
        raise ConfigurationError(f"{layer}: `rate` must be a float in [0, 1], received {rate!r}")
    return float(rate)


class SeededLayer(Layer):
    """A layer seeded like Dropout: ``seed``, else the process stream's next seed."""

    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed = seed
        self._op_seed = backend.next_seed() if seed is None else int(seed)

    _config_names = "seed"


class _Noise(SameShapeLayer, SeededLayer):
    """Shared: a seed from the stream, the identity outside training, shape-preserving."""


class GaussianNoise(_Noise):
    """Adds zero-mean Gaussian noise of standard deviation ``stddev`` in training."""

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        if isinstance(stddev, bool) or not isinstance(stddev, int | float) or stddev < 0:
            raise ConfigurationError(
                f"GaussianNoise: `stddev` must be a non-negative number, received {stddev!r}"
            )
        self.stddev = float(stddev)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training:
            return m.identity(inputs)
        return m.add(inputs, random_draw(inputs, "normal", self._op_seed, a=0.0, b=self.stddev))

    _config_names = "stddev"


class GaussianDropout(_Noise):
    """Multiplies by Gaussian noise of mean 1 and variance ``rate / (1 - rate)`` in training."""

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.rate = _rate("GaussianDropout", rate)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or not 0 < self.rate < 1:
            return m.identity(inputs)
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return m.multiply(inputs, random_draw(inputs, "normal", self._op_seed, a=1.0, b=stddev))

    _config_names = "rate"


class AlphaDropout(_Noise):
    """Dropout that keeps SELU's self-normalisation: dropped values become SELU's negative
    saturation, then an affine map restores mean and variance (tf.keras' formula)."""

    def __init__(
        self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(seed=seed, **kwargs)
        self.rate = _rate("AlphaDropout", rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or not 0 < self.rate < 1:
            return m.identity(inputs)
        rate = self.rate
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        kept = random_draw(inputs, "bernoulli", self._op_seed, self.noise_shape, a=1.0 - rate)
        a = ((1.0 - rate) * (1.0 + rate * alpha_p**2)) ** -0.5
        b = -a * alpha_p * rate
        x = m.add(m.multiply(inputs, kept), m.multiply(m.subtract(1.0, kept), alpha_p))
        return m.add(m.multiply(x, a), b)

    _config_names = "rate noise_shape"


class _SpatialDropout(SameShapeLayer, Dropout):
    """Dropout of whole feature maps: one mask entry per (sample, channel)."""

    _rank: int = 3

    def __init__(self, rate: float, data_format: str | None = None, **kwargs: Any) -> None:
        kwargs.pop("noise_shape", None)
        super().__init__(rate, **kwargs)
        data_format = data_format or "channels_last"
        if data_format not in ("channels_last", "channels_first"):
            raise ConfigurationError(
                f"{type(self).__name__}: `data_format` must be 'channels_last' or "
                f"'channels_first', received {data_format!r}"
            )
        self.data_format = data_format

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        check_rank(self, inputs, self._rank, "(batch, ..., channels)")
        if not training or self.rate == 0:
            return m.identity(inputs)
        ones = (1,) * (self._rank - 2)
        channels_first = self.data_format == "channels_first" and self._rank > 3
        noise = (None, None, *ones) if channels_first else (None, *ones, None)
        return nn.dropout(inputs, rate=self.rate, seed=self._op_seed, noise_shape=noise)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.pop("noise_shape", None)
        if self._rank > 3:
            config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of ``(batch, steps, channels)`` inputs."""

    _rank = 3

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(rate, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Drops whole feature maps of ``(batch, rows, cols, channels)`` (or channels_first)."""

    _rank = 4


class SpatialDropout3D(_SpatialDropout):
    """Drops whole feature volumes of 5-D inputs."""

    _rank = 5
