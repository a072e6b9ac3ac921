"""Keras datasets: the files Keras downloads, read from disk (``IPUSIM_DATA_DIR`` or
``~/.keras/datasets``), else synthetic data with the real shapes (announced, and marked in the
reports as ``data: synthetic``). Nothing is downloaded."""

from ipusim.keras.datasets import (
    boston_housing,
    cifar10,
    cifar100,
    fashion_mnist,
    imdb,
    mnist,
    reuters,
)

__all__ = ["boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist", "reuters"]
