"""Read an ``.npz`` file that may be damaged, without trusting its headers.

``numpy.load`` allocates the array a member's header announces before it reads the data, so one
flipped byte in a shape can ask for terabytes; a damaged zip directory raises ``BadZipFile``,
``zlib.error``, ``NotImplementedError`` (an unknown compression method) or ``EOFError``. Here
every member's announced size is compared with the bytes the member really holds before any
array is made, and every failure is a :class:`~ipusim.errors.FileFormatError` naming the file,
the member and the fix.
"""

from __future__ import annotations

import struct
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np
from numpy.lib import format as npformat

from ipusim.errors import FileFormatError

__all__ = ["NPZ_DAMAGE", "read_npz"]

#: Errors a damaged zip archive or .npy member raises from the standard library and NumPy.
NPZ_DAMAGE = (
    ValueError,
    OSError,
    EOFError,
    KeyError,
    IndexError,
    OverflowError,
    NotImplementedError,
    RuntimeError,
    SyntaxError,  # a .npy header is a Python literal
    tokenize.TokenError,
    TypeError,
    struct.error,
    zipfile.BadZipFile,
    zlib.error,
)


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    with archive.open(info) as stream:
        version = npformat.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(stream)
        else:
            shape, fortran, dtype = npformat.read_array_header_2_0(stream)
        if dtype.hasobject:
            raise FileFormatError("it holds Python objects (a pickle), which ipusim never writes")
        count = 1
        for n in shape:
            count *= int(n)
        if count * dtype.itemsize > info.file_size:
            raise FileFormatError(
                f"its header announces {count * dtype.itemsize} bytes of data but the member "
                f"holds {info.file_size}"
            )
        data = stream.read(count * dtype.itemsize)
    if len(data) != count * dtype.itemsize:
        raise FileFormatError("its data is truncated")
    array = np.frombuffer(data, dtype=dtype, count=count)
    return array.reshape(shape, order="F" if fortran else "C").copy()


def read_npz(path: str | Path, what: str, fix: str) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file at ``path``, by member name (``.npy`` dropped).

    Args:
        path: the file.
        what: what the file should be, for messages ("an ipusim trace", "MNIST").
        fix: what the user can do about a damaged file (one sentence).

    Raises:
        FileFormatError: the file is not a readable ``.npz`` or a member is damaged.
        FileNotFoundError: there is no file at ``path``.
    """
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    name = "the zip directory"
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename
                key = name[:-4] if name.endswith(".npy") else name
                arrays[key] = _member(archive, info)
    except FileNotFoundError:
        raise
    except NPZ_DAMAGE as exc:
        raise FileFormatError(
            f"{str(path)!r} is not a readable .npz file of {what}: {name}: "
            f"{type(exc).__name__}: {exc}. The file is damaged or truncated. {fix}"
        ) from None
    return arrays
