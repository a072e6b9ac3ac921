"""``keras.datasets.boston_housing``: see :func:`ipusim.data.datasets.tabular.load_boston_housing`."""

from ipusim.data.datasets.tabular import load_boston_housing as load_data

__all__ = ["load_data"]
