"""TensorBoard event files, written without TensorFlow, protobuf or TensorBoard.

An event file is a sequence of TFRecords (tensorflow/core/lib/io/record_writer.cc): a little-endian
uint64 length, its masked CRC-32C, the data, the data's masked CRC-32C. Each record is an
``Event`` protobuf (tensorflow/core/util/event.proto): the first holds ``file_version``
``brain.Event:2``; the others a ``Summary`` of ``Value`` s, each a tag, a ``TensorProto``
(tensorflow/core/framework/tensor.proto) and a ``SummaryMetadata`` naming the TensorBoard plugin,
as TensorFlow 2's summary writer writes them (fields in field-number order, proto3 defaults
left out). :mod:`ipusim._events_read` reads them back.

The file is rewritten whole (atomically, :mod:`ipusim._files`) at each flush, so a reader never
sees a torn record.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import time
from pathlib import Path

import numpy as np

from ipusim._files import write_bytes_atomic

__all__ = [
    "EventFileWriter",
    "crc32c",
    "masked_crc32c",
    "summary_value",
    "tensor_proto",
]

_CRC_TABLE: list[int] = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1  # Castagnoli polynomial, reflected
    _CRC_TABLE.append(_c)

#: TensorFlow's DataType enum values (tensorflow/core/framework/types.proto).
DTYPES: dict[str, int] = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "string": 7,
    "int64": 9,
    "bool": 10,
    "uint16": 17,
    "float16": 19,
    "uint32": 22,
    "uint64": 23,
}

_UID = itertools.count()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of ``data``, as TFRecords use."""
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The masked CRC TFRecords store: rotated right by 15 bits plus 0xa282ead8."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tf_record(data: bytes) -> bytes:
    """One TFRecord: length, masked CRC of the length, data, masked CRC of the data."""
    length = struct.pack("<Q", len(data))
    return (
        length
        + struct.pack("<I", masked_crc32c(length))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf does
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def f_varint(field: int, value: int) -> bytes:
    """A varint field (int32/int64/enum); empty for 0, proto3's default."""
    return _key(field, 0) + _varint(value) if value else b""


def f_double(field: int, value: float) -> bytes:
    return _key(field, 1) + struct.pack("<d", value)


def f_bytes(field: int, value: bytes | str, always: bool = False) -> bytes:
    """A length-delimited field (bytes, string, message); empty ones left out unless
    ``always`` (a set sub-message, even an empty one, is written)."""
    data = value.encode() if isinstance(value, str) else value
    if not data and not always:
        return b""
    return _key(field, 2) + _varint(len(data)) + data


def tensor_proto(array: np.ndarray | list[bytes], dtype: str | None = None) -> bytes:
    """A ``TensorProto``: numbers as ``tensor_content`` (little-endian), strings as
    ``string_val``, as TensorFlow's summary writer serialises tensors."""
    if isinstance(array, list):  # a vector of byte strings
        shape_pb = f_bytes(2, f_varint(1, len(array)), always=True)
        return (
            f_varint(1, DTYPES["string"])
            + f_bytes(2, shape_pb, always=True)
            + b"".join(f_bytes(8, item, always=True) for item in array)
        )
    name = dtype or array.dtype.name
    dims = b"".join(f_bytes(2, f_varint(1, int(d)), always=True) for d in array.shape)
    content = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return f_varint(1, DTYPES[name]) + f_bytes(2, dims, always=True) + f_bytes(4, content)


def string_tensor_proto(value: bytes) -> bytes:
    """A scalar ``DT_STRING`` ``TensorProto``."""
    return f_varint(1, DTYPES["string"]) + f_bytes(2, b"", always=True) + f_bytes(8, value, True)


def summary_metadata(plugin: str, content: bytes = b"", description: str = "") -> bytes:
    """A ``SummaryMetadata``: the plugin (name, content) and the description."""
    plugin_data = f_bytes(1, plugin) + f_bytes(2, content)
    return f_bytes(1, plugin_data, always=True) + f_bytes(3, description)


def summary_value(tag: str, tensor: bytes, metadata: bytes) -> bytes:
    """A ``Summary.Value``: tag (1), tensor (8), metadata (9)."""
    return f_bytes(1, tag) + f_bytes(8, tensor, always=True) + f_bytes(9, metadata, always=True)


def event(wall_time: float, step: int = 0, summary_values: tuple[bytes, ...] = ()) -> bytes:
    """An ``Event`` holding a ``Summary`` of ``summary_values``."""
    summary = b"".join(f_bytes(1, value, always=True) for value in summary_values)
    return f_double(1, wall_time) + f_varint(2, step) + f_bytes(5, summary, always=True)


def file_version_event(wall_time: float) -> bytes:
    """The first ``Event`` of a file: ``file_version`` and the writer (``source_metadata``)."""
    source = f_bytes(1, "ipusim._events")
    return f_double(1, wall_time) + f_bytes(3, "brain.Event:2") + f_bytes(10, source, True)


class EventFileWriter:
    """Writes one event file in ``logdir`` (named as TensorFlow 2 names them).

    Args:
        logdir: the folder (made if missing).
        max_queue: events kept in memory before the file is written again.
        filename_suffix: appended to the file name (TensorFlow 2 writers add ``.v2``).
    """

    def __init__(
        self, logdir: str | os.PathLike[str], max_queue: int = 10, filename_suffix: str = ".v2"
    ) -> None:
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        name = (
            f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}."
            f"{next(_UID)}{filename_suffix}"
        )
        self.path = self.logdir / name
        self.max_queue = max(1, int(max_queue))
        self._written = bytearray()
        self._pending: list[bytes] = [tf_record(file_version_event(float(int(now))))]
        self.flush()

    def add(self, event_bytes: bytes) -> None:
        """Queue one serialised ``Event``; the file is rewritten when the queue is full."""
        self._pending.append(tf_record(event_bytes))
        if len(self._pending) >= self.max_queue:
            self.flush()

    def flush(self) -> None:
        """Write every queued event to the file (atomically)."""
        if not self._pending and self.path.exists():
            return
        self._written += b"".join(self._pending)
        self._pending.clear()
        write_bytes_atomic(self.path, bytes(self._written))
