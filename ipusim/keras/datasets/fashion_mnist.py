"""``keras.datasets.fashion_mnist``: see :func:`ipusim.data.datasets.images.load_fashion_mnist`."""

from ipusim.data.datasets.images import load_fashion_mnist as load_data

__all__ = ["load_data"]
