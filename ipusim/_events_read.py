"""Read TensorBoard event files (what :mod:`ipusim._events` or TensorFlow wrote) into dicts.

:func:`read_events` checks each TFRecord's CRCs and decodes the ``Event`` fields TensorFlow 2's
summaries use into plain dicts, e.g.::

    {"wall_time": 1.7e9, "step": 3, "summary": {"value": [{"tag": "loss", "tensor": {...},
     "metadata": {"plugin_data": {"plugin_name": "scalars"}}}]}}

Fields left at their proto3 default are absent, as protobuf leaves them out.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from ipusim._events import masked_crc32c
from ipusim.errors import TraceFileError

__all__ = ["read_events", "read_records"]

# field number -> (name, kind, schema of a sub-message, repeated)
_Schema = dict[int, tuple[str, str, Any, bool]]
_DIM: _Schema = {1: ("size", "varint", None, False), 2: ("name", "string", None, False)}
_SHAPE: _Schema = {2: ("dim", "message", _DIM, True), 3: ("unknown_rank", "varint", None, False)}
_TENSOR: _Schema = {
    1: ("dtype", "varint", None, False),
    2: ("tensor_shape", "message", _SHAPE, False),
    4: ("tensor_content", "bytes", None, False),
    8: ("string_val", "bytes", None, True),
}
_PLUGIN: _Schema = {1: ("plugin_name", "string", None, False), 2: ("content", "bytes", None, False)}
_METADATA: _Schema = {
    1: ("plugin_data", "message", _PLUGIN, False),
    2: ("display_name", "string", None, False),
    3: ("summary_description", "string", None, False),
    4: ("data_class", "varint", None, False),
}
_VALUE: _Schema = {
    1: ("tag", "string", None, False),
    2: ("simple_value", "float", None, False),
    7: ("node_name", "string", None, False),
    8: ("tensor", "message", _TENSOR, False),
    9: ("metadata", "message", _METADATA, False),
}
_SUMMARY: _Schema = {1: ("value", "message", _VALUE, True)}
_SOURCE: _Schema = {1: ("writer", "string", None, False)}
_EVENT: _Schema = {
    1: ("wall_time", "double", None, False),
    2: ("step", "varint", None, False),
    3: ("file_version", "string", None, False),
    5: ("summary", "message", _SUMMARY, False),
    10: ("source_metadata", "message", _SOURCE, False),
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _decode(data: bytes, schema: _Schema) -> dict[str, Any]:
    """Decode a protobuf message; fields not in ``schema`` are skipped."""
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            raw: Any
            raw, pos = _varint(data, pos)
        elif wire == 1:
            raw, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            raw, pos = data[pos : pos + 4], pos + 4
        elif wire == 2:
            length, pos = _varint(data, pos)
            raw, pos = data[pos : pos + length], pos + length
        else:
            raise TraceFileError(f"unsupported protobuf wire type {wire} (field {field})")
        if field not in schema:
            continue
        name, kind, sub, repeated = schema[field]
        value = _convert(raw, kind, sub)
        if repeated:
            out.setdefault(name, []).append(value)
        else:
            out[name] = value
    return out


def _convert(raw: Any, kind: str, sub: _Schema | None) -> Any:
    if kind == "double":
        return struct.unpack("<d", raw)[0]
    if kind == "float":
        return struct.unpack("<f", raw)[0]
    if kind == "string":
        return raw.decode()
    if kind == "message":
        return _decode(raw, sub or {})
    return raw  # varint ints and bytes as they are


def read_records(path: str | Path) -> list[bytes]:
    """The records of a TFRecord file, each CRC checked.

    Raises:
        ValueError: a record is truncated or a CRC does not match.
    """
    data = Path(path).read_bytes()
    records = []
    pos = 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise TraceFileError(f"{path}: truncated record header at byte {pos}")
        header = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        body = data[pos + 12 : pos + 12 + length]
        if length_crc != masked_crc32c(header) or len(body) != length:
            raise TraceFileError(f"{path}: bad or truncated record at byte {pos}")
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length : pos + 16 + length])
        if body_crc != masked_crc32c(body):
            raise TraceFileError(f"{path}: data CRC mismatch in the record at byte {pos}")
        records.append(body)
        pos += 16 + length
    return records


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """The ``Event`` s of an event file, decoded (see the module docstring)."""
    return [_decode(record, _EVENT) for record in read_records(path)]
