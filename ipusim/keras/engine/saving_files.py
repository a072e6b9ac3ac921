"""The model and weights files on disk: written atomically, read back only after checking them.

A file is a zip of ``.npy`` arrays (what ``np.savez`` writes, stored uncompressed) with the JSON
header stored as a uint8 array under ``__ipusim_model__``. Reading checks, before any array is
allocated, that every member is an uncompressed ``.npy`` array whose header (shape, dtype) agrees
with the member's size, so a flipped byte or a cut-off file can never ask for gigabytes or reach
a decoder path numpy does not expect; zip's CRC-32 then catches a flipped byte in the data.
Everything that can go wrong becomes a :class:`~ipusim.errors.ModelFileError` naming the file,
the member or header field, and the fix.
"""

from __future__ import annotations

import json
import math
import os
import struct
import zipfile
import zlib
from typing import Any

import numpy as np

from ipusim._files import atomic_output
from ipusim.errors import ModelFileError

__all__ = [
    "CONFIG_KEY",
    "FORMAT",
    "VERSION",
    "ModelFileExistsError",
    "WEIGHTS_FORMAT",
    "check_weights_fit",
    "file_error",
    "read_header",
    "read_npz",
    "weight_arrays",
    "write_npz",
]

FORMAT = "ipusim-model"
WEIGHTS_FORMAT = "ipusim-weights"
VERSION = 1
CONFIG_KEY = "__ipusim_model__"

#: What decoding a damaged zip / .npy member can raise (zipfile, zlib and numpy's header parser).
_DECODE_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    ValueError,
    OSError,
    EOFError,
    KeyError,
    UnicodeError,
    OverflowError,
    SyntaxError,
    TypeError,
    IndexError,
    NotImplementedError,
)

_RESAVE = "The file is damaged or was not written by ipusim's model.save(); save the model again."


class ModelFileExistsError(ModelFileError, FileExistsError):
    """``save`` / ``save_weights`` with ``overwrite=False`` onto a file that exists."""


def file_error(path: str, field: str, problem: str, fix: str = _RESAVE) -> ModelFileError:
    """A :class:`ModelFileError` saying which file, which field, what is wrong and the fix."""
    return ModelFileError(f"{path!r}, {field}: {problem}. {fix}")


def write_npz(filepath: Any, arrays: dict[str, np.ndarray], overwrite: bool) -> None:
    """Write ``arrays`` as an ``.npz`` file atomically (a crash never leaves half a file)."""
    path = os.fspath(filepath)
    if os.path.isdir(path):
        raise ModelFileError(
            f"{path!r} is a folder; give a file path such as '{path.rstrip('/')}.npz'"
        )
    if not overwrite and os.path.exists(path):
        raise ModelFileExistsError(
            f"{path!r} exists and overwrite=False; pass overwrite=True or another path"
        )
    with atomic_output(path) as handle:
        # numpy's stub matches ``**arrays`` against ``allow_pickle: bool``; the keys here are
        # the payload's own names (w00000, o00000, the config key), never "allow_pickle".
        np.savez(handle, **arrays)  # type: ignore[arg-type]


def _npy_header(handle: Any, path: str, member: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
    else:
        raise file_error(path, f"array {member!r}", f".npy format version {version} is unknown")
    if dtype.hasobject:
        raise file_error(path, f"array {member!r}", "holds Python objects (ipusim never does)")
    return tuple(int(d) for d in shape), bool(fortran), dtype


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str) -> np.ndarray:
    member = info.filename
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        raise file_error(
            path, f"array {member!r}", "is compressed or encrypted (ipusim stores arrays as is)"
        )
    with archive.open(info) as handle:
        shape, fortran, dtype = _npy_header(handle, path, member)
        nbytes = math.prod(shape) * dtype.itemsize
        data_start = handle.tell()
        if data_start + nbytes != info.file_size:
            raise file_error(
                path,
                f"array {member!r}",
                f"its header says shape {shape} of {dtype} ({nbytes} bytes) but the member holds "
                f"{info.file_size - data_start} bytes of data",
            )
        raw = handle.read(nbytes)
        if len(raw) != nbytes or handle.read(1):
            raise file_error(path, f"array {member!r}", "is truncated")
    array = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return array.copy()


def read_npz(filepath: Any) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, checked member by member before it is allocated.

    Raises:
        ModelFileError: no such file, or the file is not an intact ``.npz`` of ``.npy`` arrays.
    """
    path = os.fspath(filepath)
    if not os.path.isfile(path):
        raise ModelFileError(f"no file at {path!r}; check the path (model.save() writes one)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            size = os.path.getsize(path)
            for info in infos:
                key = info.filename[:-4] if info.filename.endswith(".npy") else None
                if key is None or key in arrays:
                    problem = "is not a .npy array" if key is None else "appears twice"
                    raise file_error(path, f"zip member {info.filename!r}", problem)
                if info.file_size > size:
                    raise file_error(
                        path, f"array {key!r}", f"claims {info.file_size} bytes, more than the file"
                    )
                arrays[key] = _read_member(archive, info, path)
    except ModelFileError:
        raise
    except _DECODE_ERRORS as exc:
        raise ModelFileError(
            f"{path!r} is not a readable ipusim model/weights file ({type(exc).__name__}: {exc}). "
            + _RESAVE
        ) from None
    return arrays


def _int_field(header: dict[str, Any], key: str, path: str, low: int, high: int) -> int:
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise file_error(
            path,
            f"header field {key!r}",
            f"expected an integer in [{low}, {high}], found {value!r}",
        )
    return value


def read_header(data: dict[str, np.ndarray], filepath: Any, kind: str) -> dict[str, Any]:
    """The checked JSON header of a model (``kind`` :data:`FORMAT`) or weights file.

    Checks: the header decodes to an object of the right format and a known version, and names
    one weight array per ``wNNNNN`` member (no more, no fewer).

    Raises:
        ModelFileError: naming the field that is wrong.
    """
    path = os.fspath(filepath)
    raw = data.get(CONFIG_KEY)
    if raw is None:
        raise ModelFileError(f"{path!r} has no ipusim header; it was not written by ipusim")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise file_error(path, f"array {CONFIG_KEY!r}", f"is {raw.dtype} {raw.shape}, not bytes")
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise file_error(path, "header", f"is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise file_error(path, "header", f"is a {type(header).__name__}, not a JSON object")
    if header.get("format") != kind:
        raise ModelFileError(
            f"{path!r} holds {header.get('format')!r}, expected {kind!r}"
            + (
                " (load it with model.load_weights())"
                if header.get("format") == WEIGHTS_FORMAT
                else " (load it with keras.models.load_model())"
                if header.get("format") == FORMAT
                else ""
            )  # fmt: skip
        )
    version = header.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise ModelFileError(
            f"{path!r} was written by a newer ipusim (format version {version}); upgrade ipusim"
        )
    _int_field(header, "version", path, 1, VERSION)
    names = header.get("weight_names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise file_error(path, "header field 'weight_names'", "expected a list of names")
    stored = sum(1 for key in data if key.startswith("w"))
    missing = [f"w{i:05d}" for i in range(len(names)) if f"w{i:05d}" not in data]
    if missing or stored != len(names):
        raise file_error(
            path,
            "header field 'weight_names'",
            f"names {len(names)} weights but the file holds {stored} weight arrays"
            + (f" (missing {missing[:3]})" if missing else ""),
        )
    return header


def weight_arrays(data: dict[str, np.ndarray], header: dict[str, Any]) -> list[np.ndarray]:
    """The weight arrays in the order of the header's ``weight_names`` (checked by
    :func:`read_header`)."""
    return [data[f"w{i:05d}"] for i in range(len(header["weight_names"]))]


def check_weights_fit(model: Any, arrays: list[np.ndarray], path: str, exact: bool) -> None:
    """Each saved array has the shape and dtype of the model's weight at its position (with
    ``exact`` False, a dtype of the same kind: float weights into float16 variables, as Keras).

    Raises:
        ModelFileError: the counts, a shape or a dtype differ (nothing has been assigned).
    """
    weights = model.weights
    if len(weights) != len(arrays):
        raise file_error(
            path,
            "header field 'weight_names'",
            f"does not match model {model.name!r}: the file holds {len(arrays)} weights, the "
            f"model has {len(weights)}",
            "Load the file into the model it was saved from.",
        )
    for i, (weight, array) in enumerate(zip(weights, arrays, strict=True)):
        dtype = np.dtype(weight.dtype)  # the spec's: never materialises a lazy weight
        same = array.dtype == dtype if exact else array.dtype.kind == dtype.kind
        if tuple(array.shape) != tuple(weight.shape) or not same:
            raise file_error(
                path,
                f"weight {i} ({weight.name!r})",
                f"does not match model {model.name!r}: the file holds {array.dtype} "
                f"{tuple(array.shape)}, the model needs {dtype} {tuple(weight.shape)}",
                "Load the file into the model it was saved from.",
            )
