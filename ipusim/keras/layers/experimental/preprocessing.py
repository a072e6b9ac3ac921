"""``keras.layers.experimental.preprocessing``: the preprocessing layers under their TensorFlow 2.6
import path (the same classes as ``keras.layers``)."""

# ruff: noqa: F401  (re-exports: __all__ lists them all, computed below)
from __future__ import annotations

from typing import Any

from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.categorical import (
    CategoryEncoding,
    Discretization,
    Hashing,
    IntegerLookup,
)
from ipusim.keras.layers.image_affine import RandomRotation, RandomTranslation, RandomZoom
from ipusim.keras.layers.image_preprocessing import (
    CenterCrop,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomHeight,
    RandomWidth,
    Resizing,
)
from ipusim.keras.layers.preprocessing import Normalization, Rescaling
from ipusim.keras.layers.text import StringLookup, TextVectorization


class PreprocessingLayer(Layer):
    """Base class of preprocessing layers a user writes: subclasses implement ``adapt`` (as in
    Keras, where the base's ``update_state`` is abstract)."""

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        raise NotImplementedError(
            f"{type(self).__name__}.adapt: a PreprocessingLayer subclass must implement adapt()"
        )


#: Every layer class above (not their base, Layer).
__all__ = sorted(
    name
    for name, value in globals().items()
    if isinstance(value, type) and issubclass(value, Layer) and value is not Layer
)
