"""The functional forms of the merge layers (``keras.layers.add([a, b])`` ...) and
``keras.layers.serialize`` / ``deserialize``, as tf.keras 2 exports them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ipusim.keras.engine.layer import Layer
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


def _merge_function(layer: type[Layer], result: str) -> Callable[..., Any]:
    """The functional form of the merge ``layer``: ``layer(**kwargs)(inputs)``, named as Keras'
    (``Add`` -> ``add``) and documented as giving ``result``."""

    def merge(inputs: list[Any], **kwargs: Any) -> Any:
        return layer(**kwargs)(inputs)

    merge.__name__ = merge.__qualname__ = layer.__name__.lower()
    merge.__doc__ = f"``{layer.__name__}(**kwargs)(inputs)``: {result}."
    return merge


add = _merge_function(Add, "the elementwise sum of a list of tensors")
subtract = _merge_function(Subtract, "the difference of two tensors")
multiply = _merge_function(Multiply, "the elementwise product of a list of tensors")
average = _merge_function(Average, "the elementwise mean of a list of tensors")
maximum = _merge_function(Maximum, "the elementwise maximum of a list of tensors")
minimum = _merge_function(Minimum, "the elementwise minimum of a list of tensors")


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


def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Any:
    """The layer a :func:`serialize` dict describes (custom classes by ``custom_objects``)."""
    from ipusim.keras.engine.saving import _deserialize_layer

    return _deserialize_layer(config, custom_objects)
