"""The MNIST loader: search order, both file formats, corrupt files, download and caching.

Synthetic IDX / npz files are written into tmp_path; the network is never used (the opener is
replaced by a fake for every test). The one test on the real data reads IPUSIM_DATA_DIR.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import struct
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from ipusim.data import mnist

#: The real data, when the environment provides it (read before the fixtures clear the env var).
REAL_DATA_DIR = os.environ.get(mnist.ENV_VAR)
#: Without the env var, the shared data folder beside the repository (the CI layout).
SHARED_DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist"

T10K_IMAGES_MD5 = "9fb629c4189551a2d022fa330f9573f3"
T10K_LABELS_MD5 = "ec29112dd5afa0611ce80d1b7f02629c"


def idx_images(images: np.ndarray, magic: int = 2051) -> bytes:
    n, rows, cols = images.shape
    return struct.pack(">iiii", magic, n, rows, cols) + images.astype(np.uint8).tobytes()


def idx_labels(labels: np.ndarray, magic: int = 2049) -> bytes:
    return struct.pack(">ii", magic, len(labels)) + labels.astype(np.uint8).tobytes()


def write(path: Path, payload: bytes, compress: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress:
        path = path.with_name(path.name + ".gz")
        payload = gzip.compress(payload)
    path.write_bytes(payload)
    return path


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    return images, labels


def write_split(directory: Path, split: str, n: int, seed: int, compress: bool = True):
    images, labels = synthetic(n, seed)
    images_name, labels_name = mnist.IDX_FILES[split]
    write(directory / images_name, idx_images(images), compress)
    write(directory / labels_name, idx_labels(labels), compress)
    return images, labels


def npz_bytes(train_n: int = 6, test_n: int = 4) -> tuple[bytes, dict[str, np.ndarray]]:
    (xa, ya), (xb, yb) = synthetic(train_n, 1), synthetic(test_n, 2)
    arrays = {"x_train": xa, "y_train": ya, "x_test": xb, "y_test": yb}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue(), arrays


class FakeResponse(io.BytesIO):
    """What urlopen returns: a readable, closable byte stream."""


def fake_opener(payload: bytes, calls: list | None = None):
    def urlopen(url: str, timeout: float | None = None) -> FakeResponse:
        if calls is not None:
            calls.append(url)
        return FakeResponse(payload)

    return urlopen


def offline(url: str, timeout: float | None = None):
    raise urllib.error.URLError("network is unreachable")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Point the Keras cache at tmp, clear the env var and the in-memory cache, forbid network."""
    keras_dir = tmp_path / "keras" / "datasets"
    monkeypatch.setattr(mnist, "KERAS_DATASETS_DIR", str(keras_dir))
    monkeypatch.delenv(mnist.ENV_VAR, raising=False)
    monkeypatch.setattr(mnist, "_CACHE", {})

    def no_network(url, timeout=None):
        raise AssertionError(f"a test tried to download {url}")

    monkeypatch.setattr(mnist, "_urlopen", no_network)
    return keras_dir


@pytest.fixture
def env_dir(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "data"
    directory.mkdir()
    monkeypatch.setenv(mnist.ENV_VAR, str(directory))
    return directory


# ---------------------------------------------------------------------------------------------
# Finding and parsing files


def test_test_split_needs_only_t10k_files(env_dir):
    images, labels = write_split(env_dir, "test", 5, seed=0)
    x, y = mnist.load_data(split="test")
    np.testing.assert_array_equal(x, images)
    np.testing.assert_array_equal(y, labels)
    assert x.dtype == np.uint8 and y.dtype == np.uint8 and x.shape == (5, 28, 28)


def test_all_four_uncompressed_files_give_keras_layout(env_dir):
    train = write_split(env_dir, "train", 7, seed=1, compress=False)
    test = write_split(env_dir, "test", 3, seed=2, compress=False)
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    for got, want in zip((x_train, y_train, x_test, y_test), (*train, *test), strict=True):
        np.testing.assert_array_equal(got, want)
    x, y = mnist.load_data(split="train")
    np.testing.assert_array_equal(y, train[1])


def test_env_dir_is_searched_before_keras_dir(env_dir, isolated):
    from_env = write_split(env_dir, "test", 3, seed=3)
    write_split(isolated, "test", 4, seed=4)
    np.testing.assert_array_equal(mnist.load_data(split="test")[1], from_env[1])


def test_keras_dir_is_used_when_env_dir_lacks_files(env_dir, isolated):
    write_split(env_dir, "test", 3, seed=3)  # enough for the test split only
    write_split(isolated, "train", 5, seed=5)
    write_split(isolated, "test", 2, seed=6)
    (x_train, _), (x_test, _) = mnist.load_data()
    assert x_train.shape[0] == 5 and x_test.shape[0] == 2


def test_npz_variant(isolated):
    payload, arrays = npz_bytes()
    isolated.mkdir(parents=True)
    (isolated / "mnist.npz").write_bytes(payload)
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, arrays["y_test"])
    x, y = mnist.load_data(split="test")
    np.testing.assert_array_equal(x, arrays["x_test"])


def test_npz_with_missing_keys_is_rejected(isolated):
    isolated.mkdir(parents=True)
    np.savez(isolated / "mnist.npz", x_train=np.zeros((1, 28, 28), np.uint8))
    with pytest.raises(ValueError, match=r"mnist\.npz lacks the arrays \['y_train'"):
        mnist.load_data()


def test_garbage_npz_is_rejected(isolated):
    isolated.mkdir(parents=True)
    (isolated / "mnist.npz").write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="mnist.npz"):
        mnist.load_data()


def test_wrong_magic_names_the_file(env_dir):
    images, labels = synthetic(2, 0)
    write(env_dir / "t10k-images-idx3-ubyte", idx_images(images, magic=2049))
    write(env_dir / "t10k-labels-idx1-ubyte", idx_labels(labels))
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte\.gz has magic number 2049"):
        mnist.load_data(split="test")


def test_truncated_payload(env_dir):
    images, labels = synthetic(3, 0)
    write(env_dir / "t10k-images-idx3-ubyte", idx_images(images)[:-10])
    write(env_dir / "t10k-labels-idx1-ubyte", idx_labels(labels))
    with pytest.raises(ValueError, match=r"t10k-images.*is truncated.*3x28x28"):
        mnist.load_data(split="test")


def test_truncated_header(env_dir):
    images, _ = synthetic(1, 0)
    write(env_dir / "t10k-images-idx3-ubyte", idx_images(images))
    write(env_dir / "t10k-labels-idx1-ubyte", b"\x00\x00\x08")
    with pytest.raises(ValueError, match="t10k-labels.*truncated.*header"):
        mnist.load_data(split="test")


def test_truncated_gzip_stream(env_dir):
    images, labels = synthetic(3, 0)
    path = write(env_dir / "t10k-images-idx3-ubyte", idx_images(images))
    path.write_bytes(path.read_bytes()[:50])
    write(env_dir / "t10k-labels-idx1-ubyte", idx_labels(labels))
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte\.gz is not a valid gzip"):
        mnist.load_data(split="test")


def test_count_mismatch_names_both_files(env_dir):
    images, _ = synthetic(3, 0)
    _, labels = synthetic(4, 0)
    write(env_dir / "t10k-images-idx3-ubyte", idx_images(images))
    write(env_dir / "t10k-labels-idx1-ubyte", idx_labels(labels))
    with pytest.raises(ValueError, match=r"3 images but .*t10k-labels.* 4 labels"):
        mnist.load_data(split="test")


def test_label_out_of_range(env_dir):
    images, _ = synthetic(2, 0)
    write(env_dir / "t10k-images-idx3-ubyte", idx_images(images))
    write(env_dir / "t10k-labels-idx1-ubyte", idx_labels(np.array([1, 12])))
    with pytest.raises(ValueError, match="label 12"):
        mnist.load_data(split="test")


def test_unknown_split():
    with pytest.raises(ValueError, match="split must be None"):
        mnist.load_data(split="validation")


# ---------------------------------------------------------------------------------------------
# Caching


def test_repeated_loads_hit_the_cache_and_return_private_copies(env_dir, monkeypatch):
    images, _ = write_split(env_dir, "test", 4, seed=0)
    x1, _ = mnist.load_data(split="test")
    x1[:] = 0  # the caller owns its copy
    parses = []
    original = mnist._parse_idx_images
    monkeypatch.setattr(mnist, "_parse_idx_images", lambda f: parses.append(f) or original(f))
    x2, _ = mnist.load_data(split="test")
    np.testing.assert_array_equal(x2, images)
    assert parses == []


def test_cache_notices_a_changed_file(env_dir):
    write_split(env_dir, "test", 4, seed=0)
    assert mnist.load_data(split="test")[0].shape[0] == 4
    path = env_dir / "t10k-images-idx3-ubyte.gz"
    images, labels = write_split(env_dir, "test", 6, seed=9)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    x, _ = mnist.load_data(split="test")
    np.testing.assert_array_equal(x, images)


# ---------------------------------------------------------------------------------------------
# Download


def test_download_when_nothing_is_on_disk(isolated, monkeypatch):
    payload, arrays = npz_bytes()
    calls = []
    monkeypatch.setattr(mnist, "_urlopen", fake_opener(payload, calls))
    monkeypatch.setattr(mnist, "MNIST_NPZ_SHA256", hashlib.sha256(payload).hexdigest())
    x, y = mnist.load_data(split="test", download=True)
    np.testing.assert_array_equal(y, arrays["y_test"])
    assert calls == [mnist.MNIST_NPZ_URL]
    assert (isolated / "mnist.npz").read_bytes() == payload
    assert sorted(p.name for p in isolated.iterdir()) == ["mnist.npz"]  # no temp file left
    mnist.load_data()  # now served from disk
    assert len(calls) == 1


def test_nothing_is_downloaded_unless_asked(isolated):
    # The autouse fixture's opener fails the test if called: by default a missing file is an
    # error at once, which says how to get the data (and how to ask for the download).
    with pytest.raises(mnist.DatasetNotFoundError) as info:
        mnist.load_data(split="test")
    message = str(info.value)
    assert "nothing was downloaded" in message and "download=True" in message
    assert mnist.ENV_VAR in message and str(isolated) in message
    assert not isolated.exists()  # nothing written either


def test_checksum_mismatch_saves_nothing(isolated, monkeypatch):
    payload, _ = npz_bytes()
    monkeypatch.setattr(mnist, "_urlopen", fake_opener(payload))
    with pytest.raises(ValueError, match=f"expected {mnist.MNIST_NPZ_SHA256}"):
        mnist.load_data(download=True)
    assert list(isolated.iterdir()) == []


def test_download_function_is_atomic_and_checked(tmp_path, monkeypatch):
    target = tmp_path / "sub" / "file.bin"
    monkeypatch.setattr(mnist, "_urlopen", fake_opener(b"abc"))
    mnist.download("http://example.invalid/x", target, hashlib.sha256(b"abc").hexdigest())
    assert target.read_bytes() == b"abc"
    target.write_bytes(b"old")
    with pytest.raises(ValueError, match="SHA-256"):
        mnist.download("http://example.invalid/x", target, "0" * 64)
    assert target.read_bytes() == b"old"  # a failed download leaves the old file alone
    assert [p.name for p in target.parent.iterdir()] == ["file.bin"]


def test_offline_error_lists_places_files_and_env_var(env_dir, isolated, monkeypatch):
    write_split(env_dir, "test", 2, seed=0)  # only t10k: not enough for both splits
    monkeypatch.setattr(mnist, "_urlopen", offline)
    with pytest.raises(mnist.DatasetNotFoundError) as info:
        mnist.load_data(download=True)
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert str(env_dir) in message and str(isolated) in message
    assert message.index(str(env_dir)) < message.index(str(isolated))  # search order
    for name in (
        "mnist.npz",
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ):
        assert name in message
    assert mnist.ENV_VAR in message
    assert 'load_data(split="test")' in message
    assert "network is unreachable" in message
    assert "has t10k-images-idx3-ubyte.gz" in message  # what was found where
    assert mnist.load_data(split="test")[0].shape == (2, 28, 28)


# ---------------------------------------------------------------------------------------------
# Real data


def real_data_dir() -> Path:
    for candidate in (REAL_DATA_DIR, SHARED_DATA_DIR):
        if candidate and (Path(candidate) / "t10k-images-idx3-ubyte.gz").is_file():
            return Path(candidate)
    pytest.skip(
        f"real MNIST t10k files not found: set {mnist.ENV_VAR} to a folder holding "
        f"t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz"
    )


def test_real_t10k_files(monkeypatch):
    directory = real_data_dir()
    md5 = {f: hashlib.md5((directory / f).read_bytes()).hexdigest() for f in os.listdir(directory)}
    assert md5.get("t10k-images-idx3-ubyte.gz") == T10K_IMAGES_MD5
    assert md5.get("t10k-labels-idx1-ubyte.gz") == T10K_LABELS_MD5
    monkeypatch.setenv(mnist.ENV_VAR, str(directory))
    x, y = mnist.load_data(split="test")
    assert x.shape == (10000, 28, 28) and x.dtype == np.uint8
    assert y.shape == (10000,) and y.dtype == np.uint8
    assert y[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    # the published class counts of the MNIST test set
    assert np.bincount(y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert x.min() == 0 and x.max() == 255
