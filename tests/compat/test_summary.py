"""``tf.summary`` writes the event files real TensorFlow writes (issue 22, item 4).

The fixture ``bench/tf_summary/fixtures/summary/events.out.tfevents.fixture.v2`` was written by TensorFlow 2.21 with
TensorBoard 2.21 (``bench/tf_summary/generate.py``); the same summaries written by ipusim must
decode to the same records (wall times, the file version and the writer's name aside; PNGs
compared by their pixels, which is what TensorBoard shows).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from bench.tf_summary.generate import cases
from ipusim._events import masked_crc32c
from ipusim._events_read import read_events, read_records
from ipusim.compat import tf
from ipusim.errors import ConfigurationError

FIXTURES = Path(__file__).resolve().parents[2] / "bench" / "tf_summary" / "fixtures"


def _png_pixels(data: bytes) -> np.ndarray:
    """A naive decoder of 8-bit, non-interlaced PNGs of any filter type (the test's own)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(
            kind + body
        )
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and interlace == 0
    channels = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], [0] * stride
    for y in range(height):
        kind, line = raw[y * (stride + 1)], list(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            p = a + b - c
            pred = [
                0,
                a,
                b,
                (a + b) // 2,
                a
                if abs(p - a) <= min(abs(p - b), abs(p - c))
                else (b if abs(p - b) <= abs(p - c) else c),
            ][kind]
            line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        prev = line
    return np.array(rows, dtype=np.uint8).reshape(height, width, channels)


def _comparable(events: list[dict]) -> list[dict]:
    out = []
    for event in events:
        event = {k: v for k, v in event.items() if k not in ("wall_time", "source_metadata")}
        event.pop("file_version", None)
        for value in event.get("summary", {}).get("value", []):
            meta = value.get("metadata", {}).get("plugin_data", {})
            if meta.get("plugin_name") == "images":
                strings = value["tensor"]["string_val"]
                value["tensor"]["string_val"] = strings[:2] + [
                    _png_pixels(s).tobytes() for s in strings[2:]
                ]
        out.append(event)
    return out


def _write_like_the_fixture(logdir: Path) -> Path:
    data = cases()
    writer = tf.summary.create_file_writer(str(logdir))
    with writer.as_default():
        tf.summary.scalar("loss", 0.5, step=0)
        tf.summary.scalar("loss", 0.25, step=1, description="half of it")
        tf.summary.histogram("weights", data["weights"], step=1)
        tf.summary.histogram("weights5", data["weights"], step=2, buckets=5)
        tf.summary.histogram("constant", data["constant"], step=2)
        tf.summary.text("note", "hello ipusim", step=3)
        tf.summary.image("rgb", data["rgb"], step=4, max_outputs=3)
        tf.summary.image("grey", data["grey"], step=4)
        with tf.summary.record_if(False):
            assert tf.summary.scalar("hidden", 1.0, step=5) is False
        writer.flush()
    writer.close()
    (path,) = logdir.glob("events.out.tfevents.*.v2")
    return path


def test_events_decode_to_the_records_tensorflow_writes(tmp_path):
    ours = read_events(_write_like_the_fixture(tmp_path))
    theirs = read_events(FIXTURES / "summary" / "events.out.tfevents.fixture.v2")
    assert ours[0]["file_version"] == theirs[0]["file_version"] == "brain.Event:2"
    assert len(ours) == len(theirs) == 9
    assert _comparable(ours) == _comparable(theirs)


def test_png_pixels_are_the_images_given(tmp_path):
    data = cases()
    events = read_events(_write_like_the_fixture(tmp_path))
    rgb = events[7]["summary"]["value"][0]["tensor"]["string_val"]
    assert rgb[:2] == [b"5", b"4"]  # width, height
    for k in range(2):
        np.testing.assert_array_equal(_png_pixels(rgb[2 + k]), data["rgb"][k])


def test_records_are_framed_with_masked_crc32c(tmp_path):
    # CRC-32C check value of "123456789" (RFC 3720 appendix B.4 test vectors): 0xE3069283.
    from ipusim._events import crc32c

    assert crc32c(b"123456789") == 0xE3069283
    path = _write_like_the_fixture(tmp_path)
    first = path.read_bytes()[:8]
    assert struct.unpack("<I", path.read_bytes()[8:12])[0] == masked_crc32c(first)
    damaged = bytearray(path.read_bytes())
    damaged[40] ^= 0xFF
    bad = tmp_path / "bad" / "events.out.tfevents.bad.v2"
    bad.parent.mkdir()
    bad.write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="CRC|record"):
        read_records(bad)


def test_step_comes_from_as_default_or_set_step_and_is_required(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=7):
        assert tf.summary.scalar("a", 1.0)
    with writer.as_default():
        with pytest.raises(ConfigurationError, match="no step"):
            tf.summary.scalar("b", 1.0)
        tf.summary.experimental.set_step(9)
        assert tf.summary.scalar("c", 2.0)
        tf.summary.experimental.set_step(None)
        with tf.summary.record_if(lambda: False):
            assert not tf.summary.should_record_summaries()
    assert not tf.summary.scalar("outside", 1.0, step=1)  # no default writer
    writer.close()
    (path,) = tmp_path.glob("events.out.tfevents.*")
    steps = [(e["summary"]["value"][0]["tag"], e.get("step", 0)) for e in read_events(path)[1:]]
    assert steps == [("a", 7), ("c", 9)]


def test_a_summary_of_a_traced_tensor_is_refused_with_the_way_out(tmp_path):
    from ipusim.errors import UnsupportedError

    writer = tf.summary.create_file_writer(str(tmp_path))

    @tf.function
    def step(x):
        with writer.as_default():
            tf.summary.scalar("inside", tf.reduce_sum(x), step=0)
        return x

    with pytest.raises(UnsupportedError, match="host values.*outfeed"):
        step(np.ones(3, np.float32))
