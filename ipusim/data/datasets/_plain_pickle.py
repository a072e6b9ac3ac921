"""Reading the Python pickles inside Keras' data set files without running pickle's code.

The CIFAR batches are pickled dicts and the IMDB / Reuters ``.npz`` files hold object arrays
(pickled lists of word ids). ipusim never unpickles files a user brings (pickle can call any
importable function), so these are read by :class:`PlainUnpickler`, a ``pickle.Unpickler`` whose
``find_class`` resolves only what NumPy needs to rebuild an array (its ``_reconstruct`` and the
``ndarray`` / ``dtype`` classes) and a latin-1-only stand-in for ``_codecs.encode`` (how Python
3's protocol-2 pickles store bytes); everything else a pickle may hold
without a global (dicts, lists, tuples, ints, floats, bytes, str) is built by the opcodes
themselves. Any other global named by the file raises :class:`DatasetFileError`, so a crafted
file cannot run code; the result is checked to be plain data afterwards.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ipusim._read_npz import NPZ_DAMAGE
from ipusim.errors import FileFormatError

__all__ = ["DatasetFileError", "PlainUnpickler", "load_plain_pickle", "read_npz"]

_RECONSTRUCT = np.ndarray((0,)).__reduce__()[0]  # numpy's array-rebuilding function
#: (module, name) -> object: the only globals a data set pickle may name.
_ALLOWED: dict[tuple[str, str], Any] = {
    (module, "_reconstruct"): _RECONSTRUCT
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
}


def _latin1_encode(value: Any, encoding: str = "latin1") -> bytes:
    """Python 3's protocol-2 pickles store bytes as ``_codecs.encode(text, "latin1")``."""
    if not isinstance(value, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is allowed only to rebuild latin-1 bytes")
    return value.encode("latin1")


_ALLOWED.update(
    {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): _latin1_encode,
    }
)


class DatasetFileError(FileFormatError):
    """A data set file on disk is damaged or holds something other than plain data."""


class PlainUnpickler(pickle.Unpickler):
    """An unpickler that rebuilds only numpy arrays and plain Python data."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"the pickle names {module}.{name}, which a data set file never needs; "
                "ipusim reads only numpy arrays and plain lists / dicts / numbers / bytes"
            ) from None


def _check_plain(value: Any, where: str) -> None:
    """Raise unless ``value`` is plain data (numbers, bytes, str, lists, dicts, arrays)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, np.ndarray):
            if item.dtype.hasobject:
                stack.extend(item.ravel().tolist())
        elif not isinstance(item, int | float | bytes | str | np.generic) and item is not None:
            raise DatasetFileError(f"{where} holds a {type(item).__name__}, not plain data")


def load_plain_pickle(data: bytes, where: str) -> Any:
    """Unpickle ``data`` (Python 2 strings read as bytes, as Keras reads CIFAR) safely.

    Raises:
        DatasetFileError: the stream is damaged or names anything but numpy's array rebuilders.
    """
    try:
        value = PlainUnpickler(io.BytesIO(data), encoding="bytes").load()
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        OverflowError,
        struct.error,
        RecursionError,
    ) as exc:  # what a damaged pickle stream raises
        raise DatasetFileError(
            f"{where} cannot be read as a data set pickle ({type(exc).__name__}: {exc}); delete "
            "it and put the file Keras downloads in its place"
        ) from None
    _check_plain(value, where)
    return value


def _read_npy(raw: bytes, where: str) -> np.ndarray:
    stream = io.BytesIO(raw)
    version = np.lib.format.read_magic(stream)
    header = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = header(stream)
    if not dtype.hasobject:
        size = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if size > len(raw):  # a damaged header: never allocate what the data cannot fill
            raise DatasetFileError(f"{where}: its header announces {size} bytes, it holds fewer")
        stream.seek(0)
        return np.lib.format.read_array(stream, allow_pickle=False)
    array = load_plain_pickle(stream.read(), where)
    if not isinstance(array, np.ndarray) or array.shape != tuple(shape):
        raise DatasetFileError(f"{where}: the object array does not have its header's shape")
    return array


def read_npz(file: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of a ``.npz`` archive, object arrays read by :class:`PlainUnpickler`.

    Raises:
        DatasetFileError: the archive is damaged or lacks one of ``keys``.
    """
    try:
        with zipfile.ZipFile(file) as archive:
            names = set(archive.namelist())
            missing = [key for key in keys if f"{key}.npy" not in names]
            if missing:
                raise DatasetFileError(
                    f"{file} lacks the arrays {missing} (it holds "
                    f"{sorted(n.removesuffix('.npy') for n in names)}); delete it and put the "
                    "file Keras downloads in its place"
                )
            return {key: _read_npy(archive.read(f"{key}.npy"), f"{file}[{key}]") for key in keys}
    except NPZ_DAMAGE as exc:
        if isinstance(exc, DatasetFileError):
            raise
        raise DatasetFileError(
            f"{file} is not a readable .npz archive ({type(exc).__name__}: {exc}); delete it and "
            "put the file Keras downloads in its place"
        ) from None
