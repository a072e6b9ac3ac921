"""Cropping, zero padding and up-sampling of steps, images and volumes (channels last).

Crops are slices, paddings are pads; ``UpSampling1D`` / ``3D`` repeat each step or voxel with a
reshape + tile (Keras' ``repeat_elements``), while ``UpSampling2D`` (``tf.image.resize`` in
Keras, nearest or bilinear) is the resize op (:mod:`ipusim.graph.ops.resize`), planned as tf2xla
lowers it: a depthwise convolution of the dilated input per axis.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import resize as resize_ops
from ipusim.graph.ops import shape as shape_ops
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import check_data_format, normalize_tuple
from ipusim.keras.layers.core import check_rank


def _amount(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError
    return value


def normalize_pairs(value: Any, axes: int, arg: str, layer: str) -> tuple[tuple[int, int], ...]:
    """Keras' spellings of per-axis (before, after) amounts: ``p``, ``axes`` ints (symmetric) or
    ``axes`` pairs; a 1-axis layer also takes a single pair."""
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return ((_amount(value),) * 2,) * axes
        items = tuple(value)
        if axes == 1 and len(items) == 2 and all(isinstance(v, int) for v in items):
            return ((_amount(items[0]), _amount(items[1])),)
        if len(items) != axes:
            raise TypeError
        if all(isinstance(v, int) for v in items):
            return tuple((_amount(v), _amount(v)) for v in items)
        pairs = tuple(tuple(v) for v in items)
        if any(len(p) != 2 for p in pairs):
            raise TypeError
        return tuple((_amount(a), _amount(b)) for a, b in pairs)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"{layer}: `{arg}` must be a non-negative int, {axes} of them or {axes} pairs "
            f"(before, after), received {value!r}"
        ) from None


class _PerAxisAmounts(Layer):
    """A layer holding ``(before, after)`` amounts per spatial axis in its ``_arg`` attribute
    (Keras' argument of that name), for ``_axes`` spatial axes."""

    _axes = 1
    _arg = ""

    def __init__(self, amounts: Any, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        name = type(self).__name__
        check_data_format(data_format, name)
        setattr(self, self._arg, normalize_pairs(amounts, self._axes, self._arg, name))

    def get_config(self) -> dict[str, Any]:
        value: Any = [list(p) for p in getattr(self, self._arg)]
        return {**super().get_config(), self._arg: value[0] if self._axes == 1 else value}


class _Cropping(_PerAxisAmounts):
    _arg = "cropping"
    cropping: tuple[tuple[int, int], ...]

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, self._axes + 2, "(batch, ..., channels)")
        sizes = []
        for size, (before, after) in zip(inputs.shape[1:-1], self.cropping, strict=True):
            if size is not None and before + after >= size:
                raise ConfigurationError(
                    f"{type(self).__name__} {self.name!r}: cropping {self.cropping} leaves "
                    f"nothing of an input of shape {inputs.shape}; crop less"
                )
            if size is None:
                raise ConfigurationError(
                    f"{type(self).__name__} {self.name!r} needs the cropped sizes known, "
                    f"received shape {inputs.shape}"
                )
            sizes.append(size - before - after)
        begin = (0, *(b for b, _ in self.cropping), 0)
        return shape_ops.slice(inputs, begin, (-1, *sizes, -1))


class Cropping1D(_Cropping):
    """Drop ``(start, end)`` steps of ``(batch, steps, channels)`` inputs."""

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any) -> None:
        super().__init__(cropping, **kwargs)


class Cropping2D(_Cropping):
    """Drop ``((top, bottom), (left, right))`` rows / columns of NHWC images."""

    _axes = 2

    def __init__(
        self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_Cropping):
    """Drop ``(before, after)`` planes on depth, height and width."""

    _axes = 3

    def __init__(
        self,
        cropping: Any = ((1, 1), (1, 1), (1, 1)),
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(cropping, data_format, **kwargs)


class _ZeroPadding(_PerAxisAmounts):
    _arg = "padding"
    padding: tuple[tuple[int, int], ...]

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, self._axes + 2, "(batch, ..., channels)")
        return shape_ops.pad(inputs, ((0, 0), *self.padding, (0, 0)))


class ZeroPadding1D(_ZeroPadding):
    """Zeros before and after the steps: ``p`` or ``(before, after)``."""

    def __init__(self, padding: Any = 1, **kwargs: Any) -> None:
        super().__init__(padding, **kwargs)


class ZeroPadding2D(_ZeroPadding):
    """Pad height and width with zeros: ``p``, ``(rows, columns)`` or ``((top, bottom), (left,
    right))``, in pixels."""

    _axes = 2

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any):
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Zeros around depth, height and width: ``p``, 3 ints or 3 ``(before, after)`` pairs."""

    _axes = 3

    def __init__(self, padding: Any = (1, 1, 1), data_format: str | None = None, **kwargs: Any):
        super().__init__(padding, data_format, **kwargs)


def repeat_nearest(x: Any, sizes: tuple[int, ...]) -> Any:
    """Repeat every pixel of the spatial axes of ``(N, *spatial, C)`` ``sizes`` times."""
    spatial = tuple(int(d) for d in x.shape[1:-1])
    channels = x.shape[-1]
    split = tuple(v for d in spatial for v in (d, 1))
    y = shape_ops.reshape(x, (-1, *split, channels))
    y = shape_ops.tile(y, (1, *(v for s in sizes for v in (1, s)), 1))
    return shape_ops.reshape(y, (-1, *(d * s for d, s in zip(spatial, sizes)), channels))


class _UpSampling(Layer):
    _axes = 1

    def __init__(self, size: Any, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        name = type(self).__name__
        check_data_format(data_format, name)
        self.size = normalize_tuple(size, "size", name, self._axes)

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, self._axes + 2, "(batch, ..., channels)")
        if any(d is None for d in inputs.shape[1:]):
            raise ConfigurationError(
                f"{type(self).__name__} {self.name!r} needs the spatial sizes and channels "
                f"known, received shape {inputs.shape}"
            )
        return repeat_nearest(inputs, self.size)

    def get_config(self) -> dict[str, Any]:
        size: Any = self.size[0] if self._axes == 1 else list(self.size)
        return {**super().get_config(), "size": size}


class UpSampling1D(_UpSampling):
    """Repeat every step ``size`` times."""

    def __init__(self, size: Any = 2, **kwargs: Any) -> None:
        super().__init__(size, **kwargs)


class UpSampling2D(_UpSampling):
    """Enlarge NHWC images by ``size`` (rows, columns): ``"nearest"`` repeats pixels,
    ``"bilinear"`` interpolates as ``tf.image.resize``."""

    _axes = 2

    def __init__(
        self,
        size: Any = (2, 2),
        data_format: str | None = None,
        interpolation: str = "nearest",
        **kwargs: Any,
    ) -> None:
        super().__init__(size, data_format, **kwargs)
        if interpolation not in ("nearest", "bilinear"):
            raise UnsupportedError(
                f"UpSampling2D: interpolation {interpolation!r} is not simulated by ipusim; "
                "use 'nearest' or 'bilinear'"
            )
        self.interpolation = interpolation

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, 4, "(batch, height, width, channels)")
        # Keras resizes with tf.image.resize, which tf2xla runs one axis at a time, rows first
        # (GeneralCompile); an axis of scale 1 is skipped.
        y = inputs
        if self.size[0] > 1:
            y = resize_ops.resize(y, (self.size[0], 1), self.interpolation)
        if self.size[1] > 1:
            y = resize_ops.resize(y, (1, self.size[1]), self.interpolation)
        return y

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "interpolation": self.interpolation}


class UpSampling3D(_UpSampling):
    """Repeat every voxel ``size`` (depth, height, width) times."""

    _axes = 3

    def __init__(self, size: Any = (2, 2, 2), data_format: str | None = None, **kwargs: Any):
        super().__init__(size, data_format, **kwargs)


class Permute(Layer):
    """Reorder the non-batch axes: ``dims`` is a permutation of ``1..rank-1`` (Keras' numbering,
    the batch axis stays first)."""

    def __init__(self, dims: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        try:
            self.dims = tuple(int(d) for d in dims)
        except (TypeError, ValueError):
            self.dims = ()
        if not self.dims or sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ConfigurationError(
                "Invalid permutation argument `dims` for Permute Layer. The set of indices in "
                f"`dims` must be consecutive and start from 1. Received dims={dims!r}"
            )

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, len(self.dims) + 1, f"(batch, {len(self.dims)} axes)")
        return shape_ops.transpose(inputs, (0, *self.dims))

    _config_names = "dims"


class RepeatVector(Layer):
    """Repeat each ``(batch, features)`` row ``n`` times: ``(batch, n, features)``."""

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigurationError(
                f"RepeatVector: `n` must be a non-negative integer, received {n!r}"
            )
        self.n = n

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, 2, "(batch, features)")
        return shape_ops.tile(shape_ops.expand_dims(inputs, 1), (1, self.n, 1))

    _config_names = "n"
