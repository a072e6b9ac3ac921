"""``keras.datasets.mnist.load_data`` of ipusim.compat: both splits, or the test split as both."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest

from ipusim.compat.keras.datasets import mnist
from ipusim.data import mnist as data_mnist


def _write_idx(folder: Path, prefix: str, images: np.ndarray, labels: np.ndarray) -> None:
    count, rows, cols = images.shape
    header = np.array([2051, count, rows, cols], dtype=">u4").tobytes()
    (folder / f"{prefix}-images-idx3-ubyte.gz").write_bytes(
        gzip.compress(header + images.astype(np.uint8).tobytes())
    )
    header = np.array([2049, count], dtype=">u4").tobytes()
    (folder / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(
        gzip.compress(header + labels.astype(np.uint8).tobytes())
    )


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An empty IPUSIM_DATA_DIR and HOME (so ~/.keras/datasets is empty), and no network."""
    folder = tmp_path / "mnist"
    folder.mkdir()
    monkeypatch.setenv("IPUSIM_DATA_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    def offline(*args, **kwargs):
        raise OSError("no network in this test")

    monkeypatch.setattr(data_mnist, "_urlopen", offline)
    return folder


def _split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28)), rng.integers(0, 10, n)


def test_only_the_test_split_stands_in_for_both_with_a_warning(data_dir):
    x, y = _split(5, seed=0)
    _write_idx(data_dir, "t10k", x, y)
    with pytest.warns(mnist.TestSplitOnlyWarning) as caught:
        (x_train, y_train), (x_test, y_test) = mnist.load_data()
    assert "only the MNIST test split is available: using it as the training split too" in str(
        caught[0].message
    )
    for array, expected in ((x_train, x), (x_test, x), (y_train, y), (y_test, y)):
        np.testing.assert_array_equal(array, expected)
        assert array.dtype == np.uint8
    x_train[0, 0, 0] = 255 - x_test[0, 0, 0]  # the two splits are separate copies
    assert x_train[0, 0, 0] != x_test[0, 0, 0]


def test_both_splits_on_disk_load_without_a_warning(data_dir):
    x_tr, y_tr = _split(4, seed=1)
    x_te, y_te = _split(3, seed=2)
    _write_idx(data_dir, "train", x_tr, y_tr)
    _write_idx(data_dir, "t10k", x_te, y_te)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x_train, y_train), (x_test, y_test) = mnist.load_data()
    np.testing.assert_array_equal(x_train, x_tr)
    np.testing.assert_array_equal(y_train, y_tr)
    np.testing.assert_array_equal(x_test, x_te)
    np.testing.assert_array_equal(y_test, y_te)


def test_nothing_on_disk_gives_synthetic_data_and_never_downloads(data_dir):
    from ipusim.data.datasets import SyntheticDataWarning, data_note, reset_provenance

    reset_provenance()
    with pytest.warns(SyntheticDataWarning, match="SYNTHETIC"):
        (x_train, y_train), (x_test, y_test) = mnist.load_data()
    assert x_train.shape == (60_000, 28, 28) and x_test.shape == (10_000, 28, 28)
    assert y_train.dtype == np.uint8 and int(y_train.max()) == 9
    assert "mnist" in data_note()
    reset_provenance()
