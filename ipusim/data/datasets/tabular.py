"""``keras.datasets.boston_housing``: ``boston_housing.npz`` (``x``, ``y``), else synthetic."""

from __future__ import annotations

import numpy as np

from ipusim.data.datasets import synthetic
from ipusim.data.datasets._plain_pickle import read_npz
from ipusim.data.datasets._store import Pairs, find, record_synthetic
from ipusim.errors import ConfigurationError

__all__ = ["load_boston_housing"]


def load_boston_housing(
    path: str = "boston_housing.npz",
    test_split: float = 0.2,
    seed: int = 113,
    cache_dir: str | None = None,
) -> Pairs:
    """``keras.datasets.boston_housing.load_data``: the same shuffle and split as Keras.

    Returns:
        ``((x_train, y_train), (x_test, y_test))``: float64 features (N, 13), float64 prices.
    """
    if not 0 <= test_split < 1:
        raise ConfigurationError(
            f"boston_housing.load_data: `test_split` must be in [0, 1), received {test_split}"
        )
    file = find(path, cache_dir)
    if file is None:
        record_synthetic("boston_housing", repr(path), cache_dir)
        x, y = synthetic.boston_housing()
    else:
        arrays = read_npz(file, ("x", "y"))
        x, y = arrays["x"], arrays["y"]
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x))
    rng.shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))
