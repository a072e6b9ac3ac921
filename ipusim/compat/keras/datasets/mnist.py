"""``keras.datasets.mnist`` for ported scripts, with a documented fallback for partial data.

:func:`load_data` reads MNIST exactly as :func:`ipusim.data.mnist.load_data` does (the folder
named by ``IPUSIM_DATA_DIR``, then ``~/.keras/datasets``; ``mnist.npz`` or the IDX files), with
one addition for machines that hold only the official 10k **test** split (the two ``t10k``
files): instead of trying to download the missing training split, it returns the test split as
*both* the training and the test split and says so in a warning. Scripts written for the full
data set then run unchanged, on 10 000 training images instead of 60 000 (and their "test"
figures are measured on the training data, which the warning makes plain). With neither split on
disk it returns synthetic MNIST-shaped data, announced and recorded as such (nothing is
downloaded; see :mod:`ipusim.data.datasets`).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from ipusim.data import mnist as _mnist
from ipusim.data.datasets._store import Pairs
from ipusim.data.datasets.images import load_mnist
from ipusim.data.mnist import DatasetNotFoundError

__all__ = ["TEST_SPLIT_ONLY_WARNING", "DatasetNotFoundError", "TestSplitOnlyWarning", "load_data"]

#: The text of the warning given when the test split stands in for the training split.
TEST_SPLIT_ONLY_WARNING = (
    "only the MNIST test split is available: using it as the training split too "
    "(10 000 images instead of 60 000; evaluation figures are then measured on training data). "
    "Put mnist.npz or the train-*-idx*-ubyte.gz files next to the t10k files to use the full "
    "training split."
)


class TestSplitOnlyWarning(UserWarning):
    """The MNIST test split is standing in for the missing training split."""

    __test__ = False  # not a pytest test class despite its name


def load_data(path: str = "mnist.npz") -> Pairs:
    """Load MNIST like ``keras.datasets.mnist.load_data()``.

    Args:
        path: the Keras file name looked for in each searched folder (as in Keras).

    Returns:
        ``((x_train, y_train), (x_test, y_test))``: uint8 images of shape (N, 28, 28) and uint8
        labels of shape (N,). When only the test split is on disk, both pairs hold (separate
        copies of) the 10 000 test images and a :class:`TestSplitOnlyWarning` is issued.

    With neither split on disk: synthetic data of the real shapes (a SyntheticDataWarning).
    """
    with contextlib.suppress(DatasetNotFoundError):
        both: Pairs = _mnist.load_data(path, download=False)
        return both
    test: tuple[np.ndarray, np.ndarray] | None
    try:
        test = _mnist.load_data(path, split="test", download=False)
    except DatasetNotFoundError:
        test = None
    if test is None:  # nothing on disk: synthetic data, announced (outside the except: no chain)
        return load_mnist(path)
    x, y = test
    warnings.warn(TEST_SPLIT_ONLY_WARNING, TestSplitOnlyWarning, stacklevel=2)
    return (x, y), (x.copy(), y.copy())
