"""``tf.data``: ipusim's ``Dataset`` under TensorFlow's names.

``tf.data.Dataset`` is :class:`ipusim.data.Dataset` (``from_tensor_slices``, ``map``, ``batch``,
``shuffle``, ``repeat``, ``prefetch``, ``take``, ``cardinality``, ...); ``tf.data.AUTOTUNE`` and
``tf.data.experimental`` (``AUTOTUNE``, ``INFINITE_CARDINALITY``, ``UNKNOWN_CARDINALITY``,
``cardinality``) are there as in TensorFlow 2.6.
"""

from __future__ import annotations

from types import SimpleNamespace

from ipusim.data import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset
from ipusim.data.dataset import Cardinality
from ipusim.errors import InvalidTypeError

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "experimental",
]


def _cardinality(dataset: Dataset) -> Cardinality:
    """``tf.data.experimental.cardinality(dataset)``: ``dataset.cardinality()``."""
    if not isinstance(dataset, Dataset):
        raise InvalidTypeError(
            f"cardinality(dataset) expects a tf.data.Dataset (ipusim.data.Dataset), received "
            f"{type(dataset).__name__}"
        )
    return dataset.cardinality()


#: ``tf.data.experimental``: the names of it that ported scripts use.
experimental = SimpleNamespace(
    AUTOTUNE=AUTOTUNE,
    INFINITE_CARDINALITY=INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY=UNKNOWN_CARDINALITY,
    cardinality=_cardinality,
)
