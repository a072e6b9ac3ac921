"""``keras.datasets``: the data sets a ported script may load. ``mnist`` adds the test-split
fallback of :mod:`ipusim.compat.keras.datasets.mnist`; the others are :mod:`ipusim.keras.datasets`'s."""

from ipusim.compat.keras.datasets import mnist
from ipusim.keras.datasets import (
    boston_housing,
    cifar10,
    cifar100,
    fashion_mnist,
    imdb,
    reuters,
)

__all__ = ["boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist", "reuters"]
