"""``keras.layers.InputSpec``: the rank, axis sizes and dtype a layer accepts, checked when the
layer is called (as tf.keras checks ``layer.input_spec``)."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.spec import Shape, canonical_dtype
from ipusim.keras.keyword_init import fields


class InputSpec:
    """What a layer's input must be; every field is optional.

    Args:
        dtype: expected dtype. shape: expected shape (None entries are free); sets ``ndim``.
        ndim / max_ndim / min_ndim: expected rank or its bounds.
        axes: ``{axis: size}`` of axes whose size is fixed.
        allow_last_axis_squeeze: accept a rank one lower or higher when the last axis is 1.
        name: the input's name. optional: the input may be None.
    """

    def __init__(
        self,
        dtype: Any = None,
        shape: Any = None,
        ndim: int | None = None,
        max_ndim: int | None = None,
        min_ndim: int | None = None,
        axes: dict[Any, int | None] | None = None,
        allow_last_axis_squeeze: bool = False,
        name: str | None = None,
        optional: bool = False,
    ) -> None:
        self.dtype = None if dtype is None else canonical_dtype(dtype)
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.name, self.optional = name, optional
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        try:
            self.axes = {int(k): v for k, v in (axes or {}).items()}
        except (ValueError, TypeError):
            raise InvalidTypeError(
                f"Argument `axes` must be a dict with integer keys. Received: axes={axes}"
            ) from None
        top = self.ndim if self.ndim else self.max_ndim
        if self.axes and top is not None and max(self.axes) > top - 1:
            raise ConfigurationError(
                f"Axis {max(self.axes)} is greater than the maximum allowed value: {top - 1}"
            )

    def __repr__(self) -> str:
        fields = ("dtype", "shape", "ndim", "max_ndim", "min_ndim", "axes")
        parts = [f"{f}={getattr(self, f)}" for f in fields if getattr(self, f)]
        return f"InputSpec({', '.join(parts)})"

    def get_config(self) -> dict[str, Any]:
        return fields(self, "dtype shape ndim max_ndim min_ndim axes")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> InputSpec:
        return cls(**config)


def _check_one(spec: InputSpec, shape: Shape, dtype: str, where: str) -> None:
    rank = len(shape)
    squeezed = spec.allow_last_axis_squeeze and spec.ndim is not None and abs(rank - spec.ndim) == 1
    if spec.ndim is not None and rank != spec.ndim and not squeezed:
        raise ConfigurationError(
            f"{where}: expected ndim={spec.ndim}, found ndim={rank}. Full shape received: {shape}"
        )
    if spec.max_ndim is not None and rank > spec.max_ndim:
        raise ConfigurationError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={rank}")
    if spec.min_ndim is not None and rank < spec.min_ndim:
        raise ConfigurationError(
            f"{where}: expected min_ndim={spec.min_ndim}, found ndim={rank}. Full shape "
            f"received: {shape}"
        )
    if spec.dtype is not None and dtype != spec.dtype:
        raise ConfigurationError(f"{where}: expected dtype={spec.dtype}, found dtype={dtype}")
    for axis, size in spec.axes.items():
        have = shape[axis] if -rank <= axis < rank else None
        if size is not None and have not in (size, None):
            raise ConfigurationError(
                f"{where}: expected axis {axis} of input shape to have value {size}, but "
                f"received input with shape {shape}"
            )
    if spec.shape is not None and rank == len(spec.shape):
        for want, have in zip(spec.shape, shape, strict=True):
            if want is not None and have is not None and want != have:
                raise ConfigurationError(
                    f"{where}: expected shape={spec.shape}, found shape={shape}"
                )


def assert_input_compatibility(input_spec: Any, inputs: list[Any], layer_name: str) -> None:
    """Raise ConfigurationError (a ValueError, as Keras raises) when ``inputs`` (tensors with
    ``shape`` and ``dtype``) do not match ``input_spec`` (one spec, or one per input)."""
    specs = list(input_spec) if isinstance(input_spec, list | tuple) else [input_spec]
    if len(specs) != len(inputs):
        raise ConfigurationError(
            f'Layer "{layer_name}" expects {len(specs)} input(s), but it received '
            f"{len(inputs)} input tensors"
        )
    for i, (spec, x) in enumerate(zip(specs, inputs, strict=True)):
        if spec is None or (x is None and spec.optional):
            continue
        where = f'Input {i} of layer "{layer_name}" is incompatible with the layer'
        _check_one(spec, tuple(x.shape), x.dtype, where)
