"""Image preprocessing and augmentation layers of tf.keras 2.

Resizing and CenterCrop are deterministic. The Random* layers augment only in training and are
the identity at inference (RandomCrop then resizes, as Keras does). As in Keras, calling one
outside a model without ``training`` augments (the ``call`` default is ``training=True``).

Randomness: each layer's draws come from the seed stream like Dropout's (a ``seed`` argument, else
the process stream's next seed), keyed by the training step, so runs repeat bit for bit and every
step draws anew. The draws are ipusim's own counter-based stream, not TensorFlow's stateless RNG,
so the values differ from TensorFlow's while their distributions match.

Cost: inside a model these are graph ops on the IPU (resizes as gathers of their taps, flips
as reverses, crops as slices, rotations / translations / zooms as one projective-transform op,
contrast and brightness as elementwise ops) and are costed as such.
Used in a ``Dataset.map`` they run on the host, in the input pipeline: the host model
(:mod:`ipusim.data.host_cost`) charges a map per call and per sample at rates measured for light
maps, not the augmentation's own arithmetic.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as s
from ipusim.graph.ops.augment import random_crop
from ipusim.graph.ops.noise import random_draw, reverse
from ipusim.keras.engine.keras_tensor import KerasTensor
from ipusim.keras.engine.layer import Layer, current_training
from ipusim.keras.engine.nest import flatten
from ipusim.keras.layers.core import _positive_int, as_compute_dtype
from ipusim.keras.layers.image_resize import center_crop, check_method, resize, smart_resize
from ipusim.keras.layers.noise import SeededLayer

#: Offset between the seeds of a layer's independent draws.
_SEED_STRIDE = 0x9E3779B1


def _batched(images: Any, fn: Any) -> Any:
    """Apply ``fn`` to ``(batch, H, W, C)`` images; a single ``(H, W, C)`` image is batched."""
    if images.ndim == 3:
        return s.squeeze(fn(s.expand_dims(images, 0)), 0)
    if images.ndim != 4:
        raise ConfigurationError(
            f"image layers expect (batch, height, width, channels) or (height, width, channels) "
            f"inputs, received shape {images.shape}"
        )
    return fn(images)


class Resizing(Layer):
    """Resizes images to ``height`` x ``width`` (bilinear or nearest; ``crop_to_aspect_ratio``
    first crops the largest centred window of the target aspect ratio)."""

    def __init__(
        self,
        height: int,
        width: int,
        interpolation: str = "bilinear",
        crop_to_aspect_ratio: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.height = _positive_int("Resizing", "height", height)
        self.width = _positive_int("Resizing", "width", width)
        self.interpolation = check_method("Resizing", interpolation)
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)

    def call(self, inputs: Any) -> Any:
        fn = smart_resize if self.crop_to_aspect_ratio else resize
        return _batched(
            as_compute_dtype(self, inputs),
            lambda x: fn(x, self.height, self.width, self.interpolation),
        )

    _config_names = "height width interpolation crop_to_aspect_ratio"


class CenterCrop(Layer):
    """The central ``height`` x ``width`` window; images smaller than that are smart-resized up,
    as Keras does."""

    def __init__(self, height: int, width: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.height = _positive_int("CenterCrop", "height", height)
        self.width = _positive_int("CenterCrop", "width", width)

    def call(self, inputs: Any) -> Any:
        def crop(x: Any) -> Any:
            if x.shape[1] >= self.height and x.shape[2] >= self.width:
                return center_crop(x, self.height, self.width)
            return smart_resize(x, self.height, self.width)

        return _batched(as_compute_dtype(self, inputs), crop)

    _config_names = "height width"


class _RandomLayer(SeededLayer):
    """Seeded like Dropout; ``training`` defaults to True outside a model call, as in Keras."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Keras uses the call signature's default (training=True) when nothing sets the mode:
        # an eager call outside any model. Symbolic calls take the model's mode later.
        symbolic = any(isinstance(t, Symbol | KerasTensor) for t in flatten(list(args)))
        if kwargs.get("training") is None and current_training() is None and not symbolic:
            kwargs["training"] = True
        return super().__call__(*args, **kwargs)

    def _augment(self, inputs: Any, training: bool | None, fn: Any) -> Any:
        """``fn`` applied to the (float, batched) images in training; the identity at inference."""
        inputs = as_compute_dtype(self, inputs)
        return _batched(inputs, fn) if training else m.identity(inputs)


class RandomFlip(_RandomLayer):
    """Flips each image left-right and/or up-down with probability 1/2 each (``mode``:
    "horizontal", "vertical" or "horizontal_and_vertical")."""

    MODES = {"horizontal": (2,), "vertical": (1,), "horizontal_and_vertical": (2, 1)}

    def __init__(
        self, mode: str = "horizontal_and_vertical", seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(seed=seed, **kwargs)
        if mode not in self.MODES:
            raise ConfigurationError(
                f"RandomFlip layer {self.name} received an unknown mode argument {mode!r}; "
                f"expected one of {sorted(self.MODES)}"
            )
        self.mode = mode

    def call(self, inputs: Any, training: bool | None = True) -> Any:
        return self._augment(inputs, training, self._flip)

    def _flip(self, images: Any) -> Any:
        for i, axis in enumerate(self.MODES[self.mode]):
            # 1 or 0 per image; choose = flipped * f + images * (1 - f), exact for 0/1.
            seed = (self._op_seed + i * _SEED_STRIDE) & 0x7FFFFFFF
            f = random_draw(images, "bernoulli", seed, (None, 1, 1, 1), a=0.5)
            flipped = reverse(images, axis)
            images = m.add(m.multiply(flipped, f), m.multiply(images, m.subtract(1.0, f)))
        return images

    _config_names = "mode"


class RandomCrop(_RandomLayer):
    """In training, one ``height`` x ``width`` crop of the batch at a random offset per step; at
    inference (or for images smaller than the crop) a smart resize to that size, as Keras."""

    def __init__(self, height: int, width: int, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.height = _positive_int("RandomCrop", "height", height)
        self.width = _positive_int("RandomCrop", "width", width)

    def call(self, inputs: Any, training: bool | None = True) -> Any:
        def crop(x: Any) -> Any:
            fits = x.shape[1] >= self.height and x.shape[2] >= self.width
            if training and fits:
                return random_crop(x, self.height, self.width, self._op_seed)
            return smart_resize(x, self.height, self.width)

        return _batched(as_compute_dtype(self, inputs), crop)

    _config_names = "height width"


def _factor_pair(layer: str, factor: Any) -> tuple[float, float]:
    if isinstance(factor, list | tuple):
        if len(factor) != 2:
            raise ConfigurationError(f"{layer}: `factor` must be a number or a pair, got {factor}")
        return float(factor[0]), float(factor[1])
    if isinstance(factor, bool) or not isinstance(factor, int | float):
        raise ConfigurationError(f"{layer}: `factor` must be a number or a pair, got {factor!r}")
    return float(factor), float(factor)


class RandomContrast(_RandomLayer):
    """Scales each channel's deviation from its mean (over the image) by one factor per step
    drawn uniformly from ``[1 - lower, 1 + upper]``, then clips to [0, 255], as Keras."""

    def __init__(self, factor: Any, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.lower, self.upper = _factor_pair("RandomContrast", factor)
        if self.lower < 0 or self.upper < 0 or self.lower > 1:
            raise ConfigurationError(
                f"RandomContrast: factor must be non-negative with lower <= 1, got {factor!r}"
            )
        self.factor = factor

    def call(self, inputs: Any, training: bool | None = True) -> Any:
        def adjust(x: Any) -> Any:
            lo, hi = 1.0 - self.lower, 1.0 + self.upper
            factor = random_draw(x, "uniform", self._op_seed, (1, 1, 1, 1), a=lo, b=hi)
            mean = m.reduce_mean(x, axis=(1, 2), keepdims=True)
            return m.clip(m.add(m.multiply(m.subtract(x, mean), factor), mean), 0.0, 255.0)

        return self._augment(inputs, training, adjust)

    _config_names = "factor"


class RandomBrightness(_RandomLayer):
    """Adds one offset per image, drawn uniformly from ``factor`` (a fraction of the value
    range, in [-1, 1]) times the range, then clips to ``value_range``, as Keras."""

    def __init__(
        self, factor: Any, value_range: Any = (0, 255), seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(seed=seed, **kwargs)
        if isinstance(factor, list | tuple):
            low, high = _factor_pair("RandomBrightness", factor)
        else:
            low, high = -abs(float(factor)), abs(float(factor))
        if not -1 <= low <= high <= 1:
            raise ConfigurationError(
                f"RandomBrightness: factor must be in [-1, 1] (low <= high), got {factor!r}"
            )
        if len(value_range) != 2 or value_range[0] >= value_range[1]:
            raise ConfigurationError(
                f"RandomBrightness: value_range must be (low, high), got {value_range!r}"
            )
        self.factor, self._bounds = factor, (low, high)
        self.value_range = (float(value_range[0]), float(value_range[1]))

    def call(self, inputs: Any, training: bool | None = True) -> Any:
        def adjust(x: Any) -> Any:
            low, high = self._bounds
            delta = random_draw(x, "uniform", self._op_seed, (None, 1, 1, 1), a=low, b=high)
            span = self.value_range[1] - self.value_range[0]
            return m.clip(m.add(x, m.multiply(delta, span)), *self.value_range)

        return self._augment(inputs, training, adjust)

    _config_names = "factor value_range"


class _SizeChanging(_RandomLayer):
    """RandomHeight / RandomWidth: the identity at inference; in training UnsupportedError,
    because the output size changes from step to step and an IPU program is compiled for fixed
    tensor shapes."""

    def __init__(
        self, factor: Any, interpolation: str = "bilinear", seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        self.interpolation = check_method(type(self).__name__, interpolation)

    def call(self, inputs: Any, training: bool | None = True) -> Any:
        if training:
            raise UnsupportedError(
                f"{type(self).__name__} in training is not simulated by ipusim: its output size "
                "changes from step to step, and an IPU program is compiled for fixed tensor "
                "shapes. At inference it is the identity, as in Keras; resize to a fixed size "
                "with Resizing or RandomCrop instead"
            )
        return m.identity(as_compute_dtype(self, inputs))

    _config_names = "factor interpolation"


class RandomHeight(_SizeChanging):
    """Random height change by up to ``factor`` (identity at inference)."""


class RandomWidth(_SizeChanging):
    """Random width change by up to ``factor`` (identity at inference)."""
