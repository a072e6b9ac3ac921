"""keras.datasets: files in Keras' layout are read (safely), absent ones give synthetic data of the
real shapes that is announced and marked in the reports; nothing is downloaded.

The expected shapes, dtypes and ranges are the real data sets' published figures (keras.io/api/
datasets/*, the CIFAR and IMDB pages), not ipusim's output.
"""

from __future__ import annotations

import gzip
import io
import pickle
import tarfile
import warnings

import numpy as np
import pytest

from ipusim.data.datasets import (
    DatasetFileError,
    SyntheticDataWarning,
    data_note,
    reset_provenance,
)
from ipusim.data.datasets._plain_pickle import load_plain_pickle, read_npz
from ipusim.errors import DatasetNotFoundError, IPUSimError
from ipusim.keras import datasets, utils


@pytest.fixture(autouse=True)
def _no_data(monkeypatch, tmp_path):
    """An empty IPUSIM_DATA_DIR and home: every loader falls back to synthetic data."""
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("IPUSIM_DATA_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    reset_provenance()
    yield folder
    reset_provenance()


def _synthetic(load, *args, **kwargs):
    with pytest.warns(SyntheticDataWarning, match="SYNTHETIC"):
        return load(*args, **kwargs)


# (loader, train count, test count, image shape, label shape suffix, label dtype, classes)
IMAGE_SETS = [
    (datasets.mnist.load_data, 60_000, 10_000, (28, 28), (), np.uint8, 10),
    (datasets.fashion_mnist.load_data, 60_000, 10_000, (28, 28), (), np.uint8, 10),
    (datasets.cifar10.load_data, 50_000, 10_000, (32, 32, 3), (1,), np.uint8, 10),
    (datasets.cifar100.load_data, 50_000, 10_000, (32, 32, 3), (1,), np.int64, 100),
]


@pytest.mark.parametrize(("load", "n_train", "n_test", "shape", "label", "dtype", "classes"),
                         IMAGE_SETS, ids=["mnist", "fashion_mnist", "cifar10", "cifar100"])  # fmt: skip
def test_synthetic_images_have_the_real_shapes(load, n_train, n_test, shape, label, dtype, classes):
    (x, y), (xt, yt) = _synthetic(load)
    assert x.shape == (n_train, *shape) and xt.shape == (n_test, *shape)
    assert x.dtype == np.uint8 and xt.dtype == np.uint8
    assert y.shape == (n_train, *label) and yt.shape == (n_test, *label)
    assert y.dtype == dtype and yt.dtype == dtype
    assert y.min() == 0 and y.max() == classes - 1
    assert load.__name__.removeprefix("load_") in data_note()


def test_synthetic_cifar100_coarse_labels_have_20_classes():
    (_, y), _ = _synthetic(datasets.cifar100.load_data, label_mode="coarse")
    assert y.max() == 19
    with pytest.raises(ValueError, match="label_mode"):
        datasets.cifar100.load_data(label_mode="medium")


@pytest.fixture(scope="module")
def imdb_default():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntheticDataWarning)
        return datasets.imdb.load_data(num_words=10_000)


def test_synthetic_imdb_has_the_real_sizes_and_keras_conventions(imdb_default):
    (x, y), (xt, yt) = imdb_default
    assert len(x) == len(xt) == 25_000  # keras.io: 25,000 reviews per split
    assert x.dtype == object and y.dtype == np.int64 and set(np.unique(y)) == {0, 1}
    assert all(seq[0] == 1 for seq in x[:100])  # start_char
    flat = np.concatenate([np.asarray(s) for s in x[:2000]])
    assert flat.max() < 10_000 and 2 in flat  # num_words bound; oov_char 2 replaces the rest
    assert flat[flat != 1].min() >= 2  # ids below index_from + 1 are only start / oov
    lengths = np.array([len(s) for s in x])
    assert 150 < np.median(lengths) < 210  # the real training median is 178 (+1 start char)


def test_imdb_word_index_has_the_real_vocabulary_size():
    index = _synthetic(datasets.imdb.get_word_index)
    assert len(index) == 88_584 and sorted(index.values())[:3] == [1, 2, 3]


def test_synthetic_reuters_split_and_topics():
    (x, y), (xt, yt) = _synthetic(datasets.reuters.load_data, num_words=1000, test_split=0.2)
    assert len(x) + len(xt) == 11_228 and len(x) == int(11_228 * 0.8)
    assert y.max() == 45 and y.min() == 0 and y.dtype == np.int64
    assert len(datasets.reuters.get_label_names()) == 46
    assert len(_synthetic(datasets.reuters.get_word_index)) == 30_979


def test_synthetic_boston_housing_shapes():
    (x, y), (xt, yt) = _synthetic(datasets.boston_housing.load_data)
    assert x.shape == (404, 13) and xt.shape == (102, 13)  # 506 samples, 20% test
    assert x.dtype == np.float64 and y.dtype == np.float64
    assert y.min() >= 5.0 and y.max() <= 50.0


def test_synthetic_data_is_deterministic():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntheticDataWarning)
        a = datasets.cifar10.load_data()[1][0]
        b = datasets.cifar10.load_data()[1][0]
    np.testing.assert_array_equal(a, b)


def test_unknown_keyword_is_a_type_error_as_in_keras():
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        datasets.imdb.load_data(bogus=1)


# ----------------------------------------------------------------------------- real files
def _cifar_batch(rng, n: int) -> dict:
    return {
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        b"labels": [int(v) for v in rng.integers(0, 10, n)],
    }


def _expected_cifar(batches: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Keras' layout written out by hand: rows are R, G, B planes of 32x32, then channels last."""
    data = np.concatenate([b[b"data"] for b in batches])
    images = np.stack(
        [data[:, c * 1024 : (c + 1) * 1024].reshape(-1, 32, 32) for c in range(3)], -1
    )
    labels = np.concatenate([b[b"labels"] for b in batches]).astype(np.uint8).reshape(-1, 1)
    return images, labels


@pytest.mark.parametrize("packed", [False, True], ids=["folder", "tar.gz"])
def test_cifar10_reads_the_keras_folder_or_archive(_no_data, packed):
    rng = np.random.default_rng(0)
    batches = [_cifar_batch(rng, 4) for _ in range(6)]
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    blobs = {name: pickle.dumps(b, protocol=2) for name, b in zip(names, batches, strict=True)}
    if packed:
        with tarfile.open(_no_data / "cifar-10-batches-py.tar.gz", "w:gz") as tar:
            for name, blob in blobs.items():
                info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
    else:
        folder = _no_data / "cifar-10-batches-py"
        folder.mkdir()
        for name, blob in blobs.items():
            (folder / name).write_bytes(blob)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x, y), (xt, yt) = datasets.cifar10.load_data()
    ex, ey = _expected_cifar(batches[:5])
    np.testing.assert_array_equal(x, ex)
    np.testing.assert_array_equal(y, ey)
    ext, eyt = _expected_cifar(batches[5:])
    np.testing.assert_array_equal(xt, ext)
    np.testing.assert_array_equal(yt, eyt)
    assert data_note() is None


def test_fashion_mnist_reads_the_keras_folder(_no_data):
    folder = _no_data / "fashion-mnist"
    folder.mkdir()
    rng = np.random.default_rng(1)
    images = {
        s: rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for s, n in (("train", 3), ("t10k", 2))
    }
    labels = {s: rng.integers(0, 10, len(images[s])).astype(np.uint8) for s in images}
    for split in images:
        n = len(images[split])
        header = np.array([2051, n, 28, 28], ">u4").tobytes()
        (folder / f"{split}-images-idx3-ubyte.gz").write_bytes(
            gzip.compress(header + images[split].tobytes())
        )
        label_header = np.array([2049, n], ">u4").tobytes()
        (folder / f"{split}-labels-idx1-ubyte.gz").write_bytes(
            gzip.compress(label_header + labels[split].tobytes())
        )
    (x, y), (xt, yt) = datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x, images["train"])
    np.testing.assert_array_equal(yt, labels["t10k"])


class _Exploit:
    """A pickle that would run a command when loaded by pickle.load."""

    def __reduce__(self):
        import os

        return (os.system, ("touch /tmp/ipusim_pickle_exploit_ran",))


def test_plain_unpickler_refuses_code_and_runs_nothing(tmp_path):
    import os

    marker = "/tmp/ipusim_pickle_exploit_ran"
    if os.path.exists(marker):
        os.remove(marker)
    blob = pickle.dumps({b"data": _Exploit()}, protocol=2)
    with pytest.raises(DatasetFileError, match="posix.system|os.system|nt.system") as info:
        load_plain_pickle(blob, "evil")
    assert isinstance(info.value, IPUSimError) and isinstance(info.value, ValueError)
    assert not os.path.exists(marker)
    archive = tmp_path / "imdb.npz"
    evil = np.empty(1, dtype=object)
    evil[0] = _Exploit()
    np.savez(archive, x_train=evil)
    with pytest.raises(DatasetFileError):
        read_npz(archive, ("x_train",))
    assert not os.path.exists(marker)


def test_damaged_npz_is_a_dataset_file_error(_no_data):
    (_no_data / "imdb.npz").write_bytes(b"not a zip")
    with pytest.raises(DatasetFileError, match="not a readable .npz"):
        datasets.imdb.load_data()


# -------------------------------------------------------------------------- keras.utils
def test_get_file_returns_the_cached_file_and_never_downloads(_no_data):
    (_no_data / "thing.txt").write_bytes(b"abc")
    sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc")
    assert utils.get_file("thing.txt", "https://x/thing.txt", file_hash=sha).endswith("thing.txt")
    with pytest.raises(ValueError, match="does not match"):
        utils.get_file("thing.txt", "https://x/thing.txt", file_hash="0" * 64)
    with pytest.raises(DatasetNotFoundError, match="never downloads"):
        utils.get_file("missing.bin", "https://x/missing.bin")
    assert utils.get_file(origin="https://x/thing.txt?raw=1").endswith("thing.txt")


def test_sequence_iterates_its_batches():
    class Two(utils.Sequence):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            return np.full(3, index)

    assert [b.tolist() for b in Two()] == [[0, 0, 0], [1, 1, 1]]
