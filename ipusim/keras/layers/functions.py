"""The functional forms of the merge layers (``keras.layers.add([a, b])`` ...) and
``keras.layers.serialize`` / ``deserialize``, as tf.keras 2 exports them."""

from __future__ import annotations

from typing import Any

from ipusim.keras.layers.merge import (
    Add,
    Average,
    Concatenate,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
)
from ipusim.keras.layers.merge_dot import Dot


def add(inputs: list[Any], **kwargs: Any) -> Any:
    """``Add(**kwargs)(inputs)``: the elementwise sum of a list of tensors."""
    return Add(**kwargs)(inputs)


def subtract(inputs: list[Any], **kwargs: Any) -> Any:
    """``Subtract(**kwargs)(inputs)``: the difference of two tensors."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list[Any], **kwargs: Any) -> Any:
    """``Multiply(**kwargs)(inputs)``: the elementwise product of a list of tensors."""
    return Multiply(**kwargs)(inputs)


def average(inputs: list[Any], **kwargs: Any) -> Any:
    """``Average(**kwargs)(inputs)``: the elementwise mean of a list of tensors."""
    return Average(**kwargs)(inputs)


def maximum(inputs: list[Any], **kwargs: Any) -> Any:
    """``Maximum(**kwargs)(inputs)``: the elementwise maximum of a list of tensors."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list[Any], **kwargs: Any) -> Any:
    """``Minimum(**kwargs)(inputs)``: the elementwise minimum of a list of tensors."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: list[Any], axis: int = -1, **kwargs: Any) -> Any:
    """``Concatenate(axis=axis, **kwargs)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs: list[Any], axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """``Dot(axes=axes, normalize=normalize, **kwargs)(inputs)``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)


def serialize(layer: Any) -> dict[str, Any]:
    """``{"class_name": ..., "config": ...}`` of a layer (what model files store)."""
    from ipusim.keras.engine.saving import serialize_layer

    return serialize_layer(layer)


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """The layer a :func:`serialize` dict describes (custom classes by ``custom_objects``)."""
    from ipusim.keras.engine.saving import _deserialize_layer

    return _deserialize_layer(config, custom_objects)
