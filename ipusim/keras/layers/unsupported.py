"""tf.keras layers ipusim does not simulate. Each is a class of the Keras name, so scripts import
it and ``isinstance`` checks work, but constructing one raises :class:`UnsupportedError` saying
why and what to use instead (never a silent stand-in)."""

from __future__ import annotations

from typing import Any

from ipusim.errors import UnsupportedError
from ipusim.keras.engine.layer import Layer

_HASH = (
    "it crosses features into strings and hashes them with FarmHash of any length, which ipusim "
    "does not implement (its Hashing covers integer inputs)"
)
_REASONS: dict[str, tuple[str, str]] = {
    "HashedCrossing": (_HASH, "cross and hash features in the input pipeline"),
    "DenseFeatures": (
        "it consumes tf.feature_column definitions, which ipusim does not have",
        "build the feature vector with Keras layers (Normalization, CategoryEncoding, "
        "Embedding, Concatenate)",
    ),
    "SpectralNormalization": (
        "it rewrites the wrapped layer's kernel with a power-iteration estimate at every "
        "training step, a weight update ipusim's graph does not express yet",
        "train without it",
    ),
}


class _Unsupported(Layer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        name = type(self).__name__
        why, instead = _REASONS[name]
        raise UnsupportedError(
            f"keras.layers.{name} is not simulated by ipusim: {why}; instead, {instead}. "
            "See docs/api.md"
        )


def _make(name: str) -> type[Layer]:
    return type(name, (_Unsupported,), {"__doc__": f"Not simulated: {_REASONS[name][0]}."})


HashedCrossing = _make("HashedCrossing")
DenseFeatures = _make("DenseFeatures")
SpectralNormalization = _make("SpectralNormalization")
