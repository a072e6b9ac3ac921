"""``keras.datasets.cifar10``: see :func:`ipusim.data.datasets.images.load_cifar10`."""

from ipusim.data.datasets.images import load_cifar10 as load_data

__all__ = ["load_data"]
