"""``keras.datasets.cifar100``: see :func:`ipusim.data.datasets.images.load_cifar100`."""

from ipusim.data.datasets.images import load_cifar100 as load_data

__all__ = ["load_data"]
