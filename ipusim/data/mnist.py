"""MNIST loader with the Keras signature: ``load_data(path="mnist.npz", split=None)``.

Where the data comes from, in order:

1. the directory named by the environment variable ``IPUSIM_DATA_DIR``;
2. ``~/.keras/datasets`` (where Keras caches its download).

In each directory either the Keras file (``mnist.npz``) or the four original IDX files from
Yann LeCun's site are accepted, gzipped or not. ``split="test"`` needs only the two ``t10k``
files. Nothing is downloaded unless the caller asks (``download=True``): then, when nothing
usable is found, the Keras file is downloaded into ``~/.keras/datasets`` and its SHA-256 is
checked. Offline by default, as ipusim itself never needs the network.

Parsed arrays are cached in memory per file (keyed by path, modification time and size), and
callers always receive fresh copies, so editing a returned array never affects a later call.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import urllib.request
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, overload

import numpy as np

from ipusim._files import atomic_output
from ipusim._read_npz import read_npz
from ipusim.errors import ConfigurationError, DatasetNotFoundError, FileFormatError

__all__ = [
    "ENV_VAR",
    "IDX_FILES",
    "KERAS_DATASETS_DIR",
    "MNIST_NPZ_SHA256",
    "MNIST_NPZ_URL",
    "DatasetNotFoundError",
    "load_data",
]

#: Environment variable naming a directory that holds the MNIST files (searched first).
ENV_VAR = "IPUSIM_DATA_DIR"
#: Keras' cache directory (searched second, and where a download is written); ``~`` expanded.
KERAS_DATASETS_DIR = "~/.keras/datasets"
#: Where Keras downloads MNIST from, and the checksum of that file.
MNIST_NPZ_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
MNIST_NPZ_SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
#: Seconds before a stalled download is abandoned.
DOWNLOAD_TIMEOUT_S = 60.0

#: split -> (images file, labels file), without the optional ``.gz`` suffix.
IDX_FILES: dict[str, tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}

_IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
_LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension
_NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")
_SPLITS = (None, "train", "test")

# The opener used for downloads; tests replace it so they never touch the network.
_urlopen = urllib.request.urlopen

_T = TypeVar("_T")

# (path, mtime_ns, size) -> read-only arrays parsed from that file.
_CACHE: dict[tuple[str, int, int], Any] = {}


#: One split: ``(x, y)``.
_Pair = tuple[np.ndarray, np.ndarray]


@overload
def load_data(path: str = ..., split: None = None, download: bool = ...) -> tuple[_Pair, _Pair]: ...


@overload
def load_data(path: str = ..., *, split: str, download: bool = ...) -> _Pair: ...


@overload
def load_data(path: str, split: str, download: bool = ...) -> _Pair: ...


@overload
def load_data(
    path: str = ..., split: str | None = ..., download: bool = ...
) -> tuple[_Pair, _Pair] | _Pair: ...


def load_data(
    path: str = "mnist.npz", split: str | None = None, download: bool = False
) -> tuple[_Pair, _Pair] | _Pair:
    """Load MNIST as uint8 arrays, like ``keras.datasets.mnist.load_data``.

    Args:
        path: name of the Keras file inside each searched directory (an absolute path is
            used as is), and where a download is stored relative to ``~/.keras/datasets``.
        split: ``None`` for both splits, ``"train"`` or ``"test"`` for one.
        download: fetch the Keras file when nothing is found locally (an ipusim extension; off
            by default, so a missing file fails at once, offline, with the places searched).

    Returns:
        With ``split=None``: ``((x_train, y_train), (x_test, y_test))``; otherwise the one
        ``(x, y)`` pair. ``x`` is uint8 of shape (N, 28, 28) and ``y`` uint8 of shape (N,).

    Raises:
        ValueError: for an unknown ``split`` or a corrupt / truncated file.
        DatasetNotFoundError: if the files are not found (and, with ``download=True``, the
            download fails).
    """
    if split not in _SPLITS:
        raise ConfigurationError(
            f"load_data(split={split!r}): split must be None (both), 'train' or 'test'"
        )
    wanted = ("train", "test") if split is None else (split,)
    found = _load_from_disk(path, wanted)
    if found is None:
        if not download:
            raise DatasetNotFoundError(
                _not_found_message(path, "nothing was downloaded (load_data's download=False)")
            )
        target, failure = _download(path)
        if failure is not None:  # one line that says how to get the data, no chained traceback
            raise DatasetNotFoundError(_not_found_message(path, failure))
        found = _cached(target, _parse_npz)
    pairs = [(found[f"x_{name}"].copy(), found[f"y_{name}"].copy()) for name in wanted]
    return (pairs[0], pairs[1]) if split is None else pairs[0]


def search_dirs(cache_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """The folders searched, in order: ``IPUSIM_DATA_DIR``, then ``cache_dir``'s ``datasets``
    folder when given (tf.keras' ``cache_dir`` argument), else ``~/.keras/datasets``."""
    dirs = []
    env_dir = os.environ.get(ENV_VAR)
    if env_dir:
        dirs.append(Path(env_dir).expanduser())
    if cache_dir is not None:
        base = Path(cache_dir).expanduser()
        dirs += [base / "datasets", base]
    else:
        dirs.append(Path(KERAS_DATASETS_DIR).expanduser())
    return dirs


def _load_from_disk(path: str, wanted: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    for directory in search_dirs():
        npz = directory / path
        if npz.is_file():
            return _cached(npz, _parse_npz)
        arrays = {}
        for split in wanted:
            images_file, labels_file = [_find_idx(directory, name) for name in IDX_FILES[split]]
            if images_file is None or labels_file is None:
                break
            images, labels = _load_idx_pair(images_file, labels_file)
            arrays[f"x_{split}"], arrays[f"y_{split}"] = images, labels
        else:
            return arrays
    return None


def _find_idx(directory: Path, name: str) -> Path | None:
    for candidate in (directory / f"{name}.gz", directory / name):
        if candidate.is_file():
            return candidate
    return None


# ---------------------------------------------------------------------------------------------
# Parsing


def _cached(file: Path, parse: Callable[[Path], _T]) -> _T:
    stat = file.stat()
    key = (str(file.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        _CACHE[key] = parse(file)
    parsed: _T = _CACHE[key]  # the key names the file, and each file has one parser
    return parsed


def _parse_npz(file: Path) -> dict[str, np.ndarray]:
    everything = read_npz(file, "MNIST", "Delete it to have it downloaded again.")
    arrays = {key: everything[key] for key in _NPZ_KEYS if key in everything}
    missing = [key for key in _NPZ_KEYS if key not in arrays]
    if missing:
        raise FileFormatError(
            f"MNIST file {file} lacks the arrays {missing}; a Keras mnist.npz holds "
            f"{list(_NPZ_KEYS)}. Delete it to have it downloaded again"
        )
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.ndim != 3 or y.ndim != 1 or x.shape[0] != y.shape[0]:
            raise FileFormatError(
                f"MNIST file {file}: x_{split} has shape {x.shape} and y_{split} {y.shape}; "
                f"expected (N, rows, cols) images and (N,) labels with the same N"
            )
        _check_values(file, f"x_{split}", x, 255)
        _check_values(file, f"y_{split}", y, 9)
    for array in arrays.values():
        array.flags.writeable = False
    return arrays


def _check_values(file: Path, key: str, array: np.ndarray, largest: int) -> None:
    """MNIST holds whole numbers: pixels 0..255, digit labels 0..9."""
    numeric = array.dtype.kind in "iuf"
    low = array.min() if numeric and array.size else 0
    high = array.max() if numeric and array.size else 0
    if not numeric or not (low >= 0 and high <= largest):  # NaN fails both comparisons
        raise FileFormatError(
            f"MNIST file {file}: {key} must hold whole numbers in 0..{largest}; got dtype "
            f"{array.dtype}"
            + (f" with values {low}..{high}" if numeric else "")
            + ". Delete it to have it downloaded again"
        )


def _load_idx_pair(images_file: Path, labels_file: Path) -> tuple[np.ndarray, np.ndarray]:
    images = _cached(images_file, _parse_idx_images)
    labels = _cached(labels_file, _parse_idx_labels)
    if images.shape[0] != labels.shape[0]:
        raise FileFormatError(
            f"MNIST files disagree: {images_file} holds {images.shape[0]} images but "
            f"{labels_file} holds {labels.shape[0]} labels; re-download the pair"
        )
    return images, labels


def _read_bytes(file: Path) -> bytes:
    if file.suffix != ".gz":
        return file.read_bytes()
    try:
        return gzip.decompress(file.read_bytes())
    except (gzip.BadGzipFile, EOFError, zlib.error, OSError) as exc:
        raise FileFormatError(
            f"MNIST file {file} is not a valid gzip file or is truncated ({exc}); re-download it"
        ) from None


def _parse_idx_images(file: Path) -> np.ndarray:
    data = _read_bytes(file)
    count, rows, cols = _idx_header(file, data, _IMAGES_MAGIC, "images", 3)
    pixels = _idx_payload(file, data, 16, count * rows * cols, f"{count}x{rows}x{cols} pixels")
    images = pixels.reshape(count, rows, cols)
    images.flags.writeable = False
    return images


def _parse_idx_labels(file: Path) -> np.ndarray:
    data = _read_bytes(file)
    (count,) = _idx_header(file, data, _LABELS_MAGIC, "labels", 1)
    labels = _idx_payload(file, data, 8, count, f"{count} labels")
    if labels.size and labels.max() > 9:
        raise FileFormatError(
            f"MNIST labels file {file} contains the label {int(labels.max())}; digit labels "
            f"are 0..9, so the file is corrupt; re-download it"
        )
    labels.flags.writeable = False
    return labels


def _idx_header(file: Path, data: bytes, magic: int, kind: str, ndim: int) -> tuple[int, ...]:
    header_bytes = 4 + 4 * ndim
    if len(data) < header_bytes:
        raise FileFormatError(
            f"MNIST {kind} file {file} is truncated: {len(data)} bytes, shorter than the "
            f"{header_bytes}-byte IDX header; re-download it"
        )
    header = np.frombuffer(data, dtype=">u4", count=1 + ndim).tolist()
    if header[0] != magic:
        raise FileFormatError(
            f"MNIST {kind} file {file} has magic number {header[0]}, expected {magic} for IDX "
            f"{kind}; check that the file is the right one (images vs labels) and not corrupt"
        )
    return tuple(header[1:])


def _idx_payload(file: Path, data: bytes, offset: int, expected: int, what: str) -> np.ndarray:
    found = len(data) - offset
    if found != expected:
        problem = "truncated" if found < expected else "longer than its header says"
        raise FileFormatError(
            f"MNIST file {file} is {problem}: the header announces {what} ({expected} bytes) "
            f"but {found} bytes follow it; re-download the file"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=offset).copy()


# ---------------------------------------------------------------------------------------------
# Download


def _download(path: str) -> tuple[Path, str | None]:
    """Fetch the Keras file into the Keras cache directory: its path, and why that failed (None
    when it worked)."""
    target = Path(KERAS_DATASETS_DIR).expanduser() / path
    try:
        download(MNIST_NPZ_URL, target, MNIST_NPZ_SHA256)
    except OSError as exc:  # URLError, timeouts and an unwritable cache are all OSErrors
        reason = getattr(exc, "reason", None) or exc
        return target, f"the download from {MNIST_NPZ_URL} failed: {reason}"
    return target, None


def download(url: str, target: Path, sha256: str) -> None:
    """Download ``url`` to ``target`` atomically, checking its SHA-256.

    The bytes go to a temporary file in the target's folder, which replaces ``target`` only
    when the checksum matches; on a mismatch it is deleted.

    Raises:
        OSError: if the download or the write fails.
        ValueError: if the checksum does not match.
    """
    with atomic_output(target) as out:
        digest = _copy_hashing(url, out)
        if digest != sha256:
            raise FileFormatError(
                f"the file downloaded from {url} has SHA-256 {digest}, expected {sha256}; the "
                f"download is corrupt or the server changed; nothing was saved, try again"
            )


def _copy_hashing(url: str, out: BinaryIO) -> str:
    digest = hashlib.sha256()
    with _urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
        while block := response.read(1 << 20):
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


def _inventory(directory: Path, path: str) -> str:
    """Which MNIST files a directory holds, for the not-found message."""
    if not directory.is_dir():
        return " (does not exist)"
    names = [path] + [name for pair in IDX_FILES.values() for name in pair]
    present = [f.name for n in names for f in (directory / n, directory / f"{n}.gz") if f.is_file()]
    return f" (has {', '.join(present)})" if present else " (no MNIST files)"


def _not_found_message(path: str, failure: str) -> str:
    """One line: how to get MNIST, then what was searched and why the download failed."""
    places = "; ".join(f"{d}{_inventory(d, path)}" for d in search_dirs())
    env = os.environ.get(ENV_VAR)
    env_note = f"currently {env!r}" if env else "currently not set"
    idx = ", ".join(f"{name}.gz" for pair in IDX_FILES.values() for name in pair)
    test_only = " and ".join(f"{name}.gz" for name in IDX_FILES["test"])
    return (
        f"MNIST is not on disk: set {ENV_VAR} ({env_note}) to a folder holding the Keras file "
        f"{path!r} or the four IDX files ({idx}; uncompressed copies work too; "
        f'load_data(split="test") needs only {test_only}), or on a machine with network access '
        f"pass download=True to fetch it into {KERAS_DATASETS_DIR}. Searched: {places}; "
        f"{failure}."
    )
