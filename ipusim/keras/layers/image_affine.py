"""Random rotation, translation and zoom (tf.keras 2): each image warped by a random map with
TensorFlow's projective transform (:mod:`ipusim.graph.ops.image_transform`: every fill mode,
bilinear or nearest sampling, TensorFlow's gradient). Identity at inference; seeded and drawn
per step like the other random layers (:mod:`ipusim.keras.layers.image_preprocessing`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops.image_transform import augment_transforms, image_transform
from ipusim.keras.layers.image_preprocessing import (
    _factor_pair,
    _RandomLayer,
)

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def _symmetric(layer: str, arg: str, factor: Any, limit: float | None = 1.0) -> tuple[float, float]:
    """(lower, upper) of a Keras factor: a number f means (-f, f), a pair is (lower, upper)."""
    if isinstance(factor, list | tuple):
        lower, upper = _factor_pair(layer, factor)
    else:
        value = _factor_pair(layer, factor)[0]
        lower, upper = -value, value
    if upper < lower:
        raise ConfigurationError(f"{layer}: `{arg}` must have lower <= upper, received {factor!r}")
    if limit is not None and (abs(lower) > limit or abs(upper) > limit):
        raise ConfigurationError(
            f"{layer}: `{arg}` must be within [-{limit}, {limit}], received {factor!r}"
        )
    return lower, upper


class _AffineLayer(_RandomLayer):
    """Random rotation / translation / zoom by TensorFlow's projective transform (reflect,
    wrap, constant or nearest fill; bilinear or nearest interpolation); identity at inference."""

    _kind = ""
    _config_names = "fill_mode fill_value interpolation"  # subclasses: their factor arguments

    def __init__(
        self, fill_mode: str, interpolation: str, seed: Any, fill_value: float, **kwargs: Any
    ) -> None:
        super().__init__(seed=seed, **kwargs)
        if fill_mode not in _FILL_MODES:
            raise UnsupportedError(
                f"Unknown `fill_mode` {fill_mode}. Only {', '.join(_FILL_MODES)} are supported."
            )
        if interpolation not in ("nearest", "bilinear"):
            raise UnsupportedError(
                f"Unknown `interpolation` {interpolation}. Only `nearest` and `bilinear` are "
                "supported."
            )
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _bounds(self) -> tuple[tuple[float, ...], bool]:
        raise NotImplementedError

    def call(self, inputs: Any, training: bool | None = True) -> Any:
        def warp(x: Any) -> Any:
            maps = augment_transforms(x, self._kind, self._op_seed, *self._bounds())
            return image_transform(x, maps, self.interpolation, self.fill_mode, self.fill_value)

        return self._augment(inputs, training, warp)


class RandomRotation(_AffineLayer):
    """Rotates each image by an angle drawn uniformly from ``factor`` x 2 pi (a number f means
    [-f, f]; positive angles turn counter-clockwise)."""

    _kind = "rotation"
    _config_names = "factor"

    def __init__(
        self,
        factor: Any,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.lower, self.upper = _symmetric("RandomRotation", "factor", factor, limit=None)
        self.factor = factor

    def _bounds(self) -> tuple[tuple[float, ...], bool]:
        two_pi = 2.0 * np.pi
        return (self.lower * two_pi, self.upper * two_pi, 0.0, 0.0), False


class RandomTranslation(_AffineLayer):
    """Shifts each image by fractions of its height and width drawn uniformly from
    ``height_factor`` and ``width_factor`` (a number f means [-f, f])."""

    _kind = "translation"
    _config_names = "height_factor width_factor"

    def __init__(
        self,
        height_factor: Any,
        width_factor: Any,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height = _symmetric("RandomTranslation", "height_factor", height_factor)
        self.width = _symmetric("RandomTranslation", "width_factor", width_factor)
        self.height_factor, self.width_factor = height_factor, width_factor

    def _bounds(self) -> tuple[tuple[float, ...], bool]:
        return (*self.height, *self.width), False


class RandomZoom(_AffineLayer):
    """Zooms each image by 1 + a factor drawn uniformly from ``height_factor`` (and
    ``width_factor``, default: the height's draw); positive values zoom out."""

    _kind = "zoom"
    _config_names = "height_factor width_factor"

    def __init__(
        self,
        height_factor: Any,
        width_factor: Any = None,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height = _symmetric("RandomZoom", "height_factor", height_factor)
        self.width = (
            None if width_factor is None else _symmetric("RandomZoom", "width_factor", width_factor)
        )
        self.height_factor, self.width_factor = height_factor, width_factor

    def _bounds(self) -> tuple[tuple[float, ...], bool]:
        width = self.width or self.height
        return (1 + self.height[0], 1 + self.height[1], 1 + width[0], 1 + width[1]), (
            self.width is None
        )
