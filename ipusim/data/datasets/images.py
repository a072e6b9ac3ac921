"""Image data sets of ``keras.datasets``: MNIST, Fashion-MNIST, CIFAR-10, CIFAR-100.

Each reads the files Keras' own loader downloads, under the same names, from the folders of
:func:`ipusim.data.datasets._store.search_dirs`:

* ``mnist.npz`` (or the four IDX files), as :mod:`ipusim.data.mnist` reads them;
* ``fashion-mnist/`` holding ``train-labels-idx1-ubyte.gz``, ``train-images-idx3-ubyte.gz``,
  ``t10k-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``;
* ``cifar-10-batches-py/`` (``data_batch_1`` ... ``data_batch_5``, ``test_batch``) or the
  archive ``cifar-10-batches-py.tar.gz`` Keras keeps beside it;
* ``cifar-100-python/`` (``train``, ``test``) or ``cifar-100-python.tar.gz``.

The CIFAR batches are pickles; they are read by :mod:`ipusim.data.datasets._plain_pickle`, which
rebuilds only arrays and plain data. Absent files give synthetic data (announced and recorded).
Arrays come back as Keras returns them: images uint8 channels-last; MNIST labels uint8 (N,),
CIFAR-10 labels uint8 (N, 1), CIFAR-100 labels int64 (N, 1) (Keras reshapes the pickled list).
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.data import mnist as _mnist
from ipusim.data.datasets import synthetic
from ipusim.data.datasets._plain_pickle import DatasetFileError, load_plain_pickle
from ipusim.data.datasets._store import Pairs, find, record_synthetic
from ipusim.errors import ConfigurationError, DatasetNotFoundError

__all__ = ["load_cifar10", "load_cifar100", "load_fashion_mnist", "load_mnist"]

_FASHION_FILES = (
    "train-labels-idx1-ubyte.gz",
    "train-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
)


def _synthetic_images(
    name: str, train: int, test: int, shape: tuple[int, ...], classes: int
) -> Pairs:
    x, y = synthetic.images(name, train + test, shape, classes)
    return (x[:train], y[:train]), (x[train:], y[train:])


def load_mnist(path: str = "mnist.npz") -> Pairs:
    """``keras.datasets.mnist.load_data``: the Keras file or IDX files, else synthetic."""
    try:
        return _mnist.load_data(path, download=False)
    except DatasetNotFoundError:
        record_synthetic("mnist", repr(path))
        return _synthetic_images("mnist", 60_000, 10_000, (28, 28), 10)


def load_fashion_mnist(cache_dir: str | None = None) -> Pairs:
    """``keras.datasets.fashion_mnist.load_data``: ``fashion-mnist/*.gz``, else synthetic."""
    folder = find("fashion-mnist", cache_dir)
    if folder is None or not all((folder / name).is_file() for name in _FASHION_FILES):
        record_synthetic("fashion_mnist", "the folder 'fashion-mnist' with its 4 IDX files")
        return _synthetic_images("fashion_mnist", 60_000, 10_000, (28, 28), 10)
    # The IDX parser of the MNIST loader checks the headers and sizes of these files too.
    pairs = []
    for split in ("train", "t10k"):
        pairs.append(
            _mnist._load_idx_pair(
                folder / f"{split}-images-idx3-ubyte.gz", folder / f"{split}-labels-idx1-ubyte.gz"
            )
        )
    (x_train, y_train), (x_test, y_test) = pairs
    return (x_train.copy(), y_train.copy()), (x_test.copy(), y_test.copy())


def _batch_reader(name: str, cache_dir: str | None) -> Callable[[str], bytes] | None:
    """A function ``member -> bytes`` over the CIFAR folder ``name`` or its ``.tar.gz``; None."""
    folder = find(name, cache_dir)
    if folder is not None and folder.is_dir():
        return lambda member: (folder / member).read_bytes()
    archive = find(f"{name}.tar.gz", cache_dir)
    if archive is None:
        return None

    def read(member: str) -> bytes:
        try:
            with tarfile.open(archive, "r:gz") as tar:
                handle = tar.extractfile(f"{name}/{member}")
                if handle is None:  # a folder or a link, not a file
                    raise DatasetFileError(f"{archive}: {name}/{member} is not a file")
                return handle.read()
        except (tarfile.TarError, KeyError, OSError, EOFError) as exc:
            raise DatasetFileError(
                f"{archive}: cannot read {name}/{member} ({exc}); delete the archive and put "
                "the one Keras downloads in its place"
            ) from exc

    return read


def _load_batch(
    read: Callable[[str], bytes], member: str, label_key: bytes, where: str
) -> tuple[np.ndarray, Any]:
    """Keras' ``cifar.load_batch``: (N, 3, 32, 32) uint8 images and the label list."""
    batch = load_plain_pickle(read(member), f"{where}/{member}")
    if not isinstance(batch, dict) or b"data" not in batch or label_key not in batch:
        raise DatasetFileError(
            f"{where}/{member} is not a CIFAR batch (a dict with b'data' and "
            f"{label_key!r}); delete it and put the file Keras downloads in its place"
        )
    data = np.asarray(batch[b"data"])
    labels = batch[label_key]
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise DatasetFileError(
            f"{where}/{member}: data {data.dtype} {data.shape} is not N x 3072 uint8"
        )
    if len(labels) != data.shape[0]:
        raise DatasetFileError(f"{where}/{member}: {len(labels)} labels for {data.shape[0]} images")
    return data.reshape(-1, 3, 32, 32), labels


def load_cifar10(cache_dir: str | None = None) -> Pairs:
    """``keras.datasets.cifar10.load_data``: ``cifar-10-batches-py``, else synthetic."""
    name = "cifar-10-batches-py"
    read = _batch_reader(name, cache_dir)
    if read is None:
        record_synthetic("cifar10", f"{name!r} (or {name}.tar.gz)", cache_dir)
        (xtr, ytr), (xte, yte) = _synthetic_images("cifar10", 50_000, 10_000, (32, 32, 3), 10)
        return (xtr, ytr.reshape(-1, 1)), (xte, yte.reshape(-1, 1))
    parts = [_load_batch(read, f"data_batch_{i}", b"labels", name) for i in range(1, 6)]
    x_train = np.concatenate([p[0] for p in parts]).astype(np.uint8)
    y_train = np.concatenate([np.asarray(p[1], dtype=np.uint8) for p in parts])
    x_test, y_test = _load_batch(read, "test_batch", b"labels", name)
    return (
        (x_train.transpose(0, 2, 3, 1), y_train.reshape(-1, 1)),
        (
            x_test.transpose(0, 2, 3, 1).astype(np.uint8),
            np.asarray(y_test, np.uint8).reshape(-1, 1),
        ),
    )


def load_cifar100(label_mode: str = "fine", cache_dir: str | None = None) -> Pairs:
    """``keras.datasets.cifar100.load_data``: ``cifar-100-python``, else synthetic."""
    if label_mode not in ("fine", "coarse"):
        raise ConfigurationError(
            f'cifar100.load_data: `label_mode` must be one of "fine", "coarse". Received: '
            f"label_mode={label_mode}."
        )
    name = "cifar-100-python"
    read = _batch_reader(name, cache_dir)
    if read is None:
        record_synthetic("cifar100", f"{name!r} (or {name}.tar.gz)", cache_dir)
        classes = 100 if label_mode == "fine" else 20
        (xtr, ytr), (xte, yte) = _synthetic_images("cifar100", 50_000, 10_000, (32, 32, 3), classes)
        return (xtr, ytr.astype(np.int64).reshape(-1, 1)), (
            xte,
            yte.astype(np.int64).reshape(-1, 1),
        )
    key = f"{label_mode}_labels".encode()
    x_train, y_train = _load_batch(read, "train", key, name)
    x_test, y_test = _load_batch(read, "test", key, name)
    return (
        (x_train.transpose(0, 2, 3, 1), np.reshape(y_train, (len(y_train), 1))),
        (x_test.transpose(0, 2, 3, 1), np.reshape(y_test, (len(y_test), 1))),
    )
