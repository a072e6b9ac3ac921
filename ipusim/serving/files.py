"""The export directory: written whole into a temporary sibling, then moved into place.

Files: ``serving.json`` (format, kind, signature, the inference program's nodes, pipeline, system
and simulated figures), ``program.npz`` (the program's arrays: frozen weights and constants, no
pickled objects) and ``trace.npz`` (the simulated execution, :meth:`ipusim.trace.Trace.save`
format).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ipusim._files import atomic_folder
from ipusim.errors import ConfigurationError
from ipusim.keras.engine.saving_files import read_npz
from ipusim.serving.manifest import ExportNotFoundError, check_manifest, export_error

__all__ = ["FORMAT", "VERSION", "check_export_dir", "read_export", "write_export"]

FORMAT = "ipusim-serving"
VERSION = 1
MANIFEST = "serving.json"
ARRAYS = "program.npz"
TRACE = "trace.npz"
#: A manifest beyond this is not one ipusim wrote (a program of a million nodes is ~200 MB). E
_MAX_MANIFEST_BYTES = 1 << 30


def check_export_dir(export_dir: Any) -> Path:
    """``export_dir`` as a Path, if it is new or an empty directory.

    Raises:
        ConfigurationError: it is a file or a directory that is not empty.
    """
    path = Path(os.fspath(export_dir))
    if path.is_dir() and any(path.iterdir()):
        raise ConfigurationError(
            f"export_dir {str(path)!r} is a directory that is not empty; pass a new or empty "
            "directory (IPU TensorFlow refuses to overwrite an export too)"
        )
    if path.exists() and not path.is_dir():
        raise ConfigurationError(
            f"export_dir {str(path)!r} is a file; pass a new or empty directory"
        )
    return path


def write_export(
    export_dir: Any, manifest: dict[str, Any], arrays: dict[str, np.ndarray], trace_bytes: bytes
) -> Path:
    """Write the export atomically: nothing appears at ``export_dir`` unless all of it does.

    The files are written into a temporary sibling folder, which then takes the place of
    ``export_dir`` in one rename (:func:`ipusim._files.atomic_folder`).
    """
    path = check_export_dir(export_dir)
    manifest = {"format": FORMAT, "version": VERSION, **manifest}
    buffer = io.BytesIO()
    # The stubs fear a key named allow_pickle; the keys are encode_program's a0, a1, ...
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    files = {
        MANIFEST: (json.dumps(manifest, indent=1, allow_nan=True) + "\n").encode("utf-8"),
        ARRAYS: buffer.getvalue(),
        TRACE: trace_bytes,
    }
    if path.is_dir():
        path.rmdir()  # empty (checked above), so that the export appears in one rename
    atomic_folder(path, files)
    return path


def _read_manifest(path: Path) -> dict[str, Any]:
    manifest_file = path / MANIFEST
    if not manifest_file.is_file():
        raise ExportNotFoundError(
            f"{str(path)!r} holds no ipusim serving export (no {MANIFEST}); create one with "
            "model.export_for_ipu_serving(...) or ipusim.serving.export_*"
        )
    size = manifest_file.stat().st_size
    if size > _MAX_MANIFEST_BYTES:
        raise export_error(
            manifest_file, "size", f"{size} bytes is implausible for a manifest (at most "
            f"{_MAX_MANIFEST_BYTES})",
        )  # fmt: skip
    try:
        manifest = json.loads(manifest_file.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise export_error(manifest_file, "contents", f"not valid JSON ({exc})") from None
    return check_manifest(manifest, manifest_file, FORMAT, VERSION)


def read_export(export_dir: Any) -> tuple[dict[str, Any], dict[str, np.ndarray], Path]:
    """The manifest, the arrays and the trace file of an export, each checked before use.

    Raises:
        ExportNotFoundError: ``export_dir`` holds no ipusim export (a ``FileNotFoundError``).
        ModelFileError: a file of the export is damaged, of another format or a newer version;
            the message names the file and the field.
    """
    path = Path(os.fspath(export_dir))
    manifest = _read_manifest(path)
    arrays = read_npz(path / ARRAYS)
    trace = path / TRACE
    if not trace.is_file():
        raise export_error(trace, "file", "is missing (the simulated execution)")
    return manifest, arrays, trace
