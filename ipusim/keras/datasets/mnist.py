"""``keras.datasets.mnist``: see :func:`ipusim.data.datasets.images.load_mnist` (never downloads;
synthetic data when the files are absent)."""

from ipusim.data.datasets.images import load_mnist as load_data
from ipusim.data.mnist import DatasetNotFoundError

__all__ = ["DatasetNotFoundError", "load_data"]
