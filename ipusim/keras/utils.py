"""``keras.utils``: seeding, labels, padding, batch sequences, normalisation, cached files."""

from __future__ import annotations

import numpy as np

from ipusim.errors import InputDataError
from ipusim.keras.backend import set_random_seed
from ipusim.keras.preprocessing.image import array_to_img, img_to_array, load_img, save_img
from ipusim.keras.preprocessing.sequence import pad_sequences
from ipusim.keras.utils_data import Sequence, get_file, normalize


def to_categorical(y: object, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """One-hot encode integer class labels (as ``keras.utils.to_categorical``)."""
    labels = np.asarray(y)
    if labels.size and (labels.dtype.kind not in "iuf" or np.any(labels != np.round(labels))):
        raise InputDataError("to_categorical expects integer class labels")
    labels = labels.astype(np.int64)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    classes = int(labels.max()) + 1 if num_classes is None else int(num_classes)
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise InputDataError(
            f"to_categorical: labels must be in [0, {classes}), received values "
            f"from {labels.min()} to {labels.max()}"
        )
    out = np.zeros((*labels.shape, classes), dtype=dtype)
    np.put_along_axis(out, labels[..., None], 1, axis=-1)
    return out


__all__ = [
    "Sequence",
    "array_to_img",
    "img_to_array",
    "load_img",
    "save_img",
    "get_file",
    "normalize",
    "pad_sequences",
    "set_random_seed",
    "to_categorical",
]
