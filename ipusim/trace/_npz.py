"""A trace as an ``.npz`` file: its templates, kept instances, counters and layout (no pickles).

Version 2 stores the compact form; version 1 files (one string or integer array per record
column) are still read, as a trace of records.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from ipusim._read_npz import read_npz
from ipusim.errors import FileFormatError, MissingFileError, TraceError, TraceFileError
from ipusim.trace._checks import MAX_TIME_PS, check_meta, check_trace
from ipusim.trace._schema import COLUMNS
from ipusim.trace.counters import Counters
from ipusim.trace.expand import INSTANCE_FIELDS
from ipusim.trace.records import Trace
from ipusim.trace.templates import TemplateTable

_FORMAT = "ipusim-trace"
_VERSION = 2


def trace_to_npz(trace: Trace) -> bytes:
    """The ``.npz`` bytes of ``trace``."""
    arrays: dict[str, np.ndarray] = {}
    arrays.update({f"t_{k}": v for k, v in trace.templates.arrays().items()})
    arrays.update({f"i_{k}": np.asarray(v) for k, v in trace.instances.items()})
    arrays.update({f"c_{k}": v for k, v in trace.counters.arrays().items()})
    arrays["execution_end_ps"] = np.asarray(trace.execution_end_ps, dtype=np.int64)
    d = trace.detail
    meta = {
        "end_ps": trace.end_ps,
        "replicas": trace.replicas,
        "ipus_per_replica": trace.ipus_per_replica,
        "states_checked": trace.states_checked,
        "detail": {
            "level": d.level,
            "kept_executions": d.kept_executions,
            "executions": d.executions,
            "kept_steps": d.kept_steps,
            "steps": d.steps,
            "records": d.records,
        },
    }
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        __format__=np.array(_FORMAT),
        __version__=np.array(_VERSION),
        __meta__=np.array(json.dumps(meta, sort_keys=True)),
        **arrays,  # type: ignore[arg-type]  # numpy's stub takes ** as allow_pickle's type
    )
    return buffer.getvalue()


def trace_from_npz(path: Path) -> Trace:
    """Read a trace file (see the module docstring)."""
    if not path.is_file():
        raise MissingFileError(f"no trace file at {str(path)!r}")
    try:
        members = read_npz(
            path, "an ipusim trace", "Save the trace again (Trace.save / Report.save)."
        )
    except FileFormatError as exc:
        raise TraceFileError(str(exc)) from None
    if "__format__" not in members or str(members["__format__"]) != _FORMAT:
        raise TraceFileError(f"{str(path)!r} is an .npz file but not an ipusim trace")
    try:
        version = int(members.get("__version__", -1))
    except (TypeError, ValueError):
        version = -1
    if version == 1:
        return _version_1(path, members)
    if version != _VERSION:
        raise TraceFileError(
            f"{str(path)!r} is trace format version {version}; this ipusim reads versions 1 and "
            f"{_VERSION}"
        )
    try:
        meta = json.loads(str(members["__meta__"]))
        end_ps, replicas, per_replica, detail, checked = check_meta(path, meta)
        templates = TemplateTable.from_arrays(
            {k[2:]: v for k, v in members.items() if k.startswith("t_")}
        )
        instances = {f: _ints(path, f"i_{f}", members[f"i_{f}"]) for f in INSTANCE_FIELDS}
        counters = Counters(
            tuple(int(s) for s in _ints(path, "c_slots", members["c_slots"]).tolist()),
            _ints(path, "c_count", members["c_count"], ndim=2),
            _ints(path, "c_stretch_ps", members["c_stretch_ps"], ndim=2),
            _ints(path, "c_waiting_ps", members["c_waiting_ps"]),
        )
        ends = _ints(path, "execution_end_ps", members["execution_end_ps"])
        _check_consistent(templates, instances, counters)
        check_trace(
            path,
            templates,
            instances,
            counters,
            end_ps,
            replicas,
            per_replica,
            ends,
            detail,
            checked,
        )
        return Trace.build(
            templates,
            instances,
            counters,
            end_ps,
            replicas=replicas,
            ipus_per_replica=per_replica,
            detail=detail,
            checked=checked,
            sort=False,
            execution_end_ps=ends,
        )
    except (KeyError, TypeError, ValueError, OverflowError, json.JSONDecodeError) as exc:
        if isinstance(exc, TraceFileError):
            raise
        raise TraceFileError(
            f"{str(path)!r} holds a damaged ipusim trace ({exc!r}); save the trace again "
            "(Trace.save / Report.save)"
        ) from None


def _version_1(path: Path, members: dict[str, np.ndarray]) -> Trace:
    """A version 1 file: one array per record column, checked as a trace of records."""
    try:
        trace = Trace({name: members[name] for name in COLUMNS if name in members})
        _check_v1(path, trace)
        return trace
    except (TraceError, TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, TraceFileError):
            raise
        raise TraceFileError(f"{str(path)!r} holds an inconsistent trace: {exc}") from None


def _check_v1(path: Path, trace: Trace) -> None:
    """A version 1 trace (records) passed the record checks; its counts must be >= 0 too."""
    for field in ("bytes", "flops"):
        if (trace[field] < 0).any():
            raise TraceFileError(
                f"{str(path)!r}: {field}: counts must be >= 0; the file is damaged or was "
                "edited; save the trace again (Trace.save / Report.save)"
            )
    if trace.end_ps > MAX_TIME_PS:
        raise TraceFileError(f"{str(path)!r}: end_ps: beyond {MAX_TIME_PS} ps (~53 days)")


def _ints(path: Path, field: str, value: np.ndarray, ndim: int = 1) -> np.ndarray:
    """``value`` as int64, when it is an integer array of ``ndim`` dimensions."""
    arr = np.asarray(value)
    if arr.ndim != ndim or arr.dtype.kind not in "iub":
        raise TraceFileError(
            f"{str(path)!r}: {field}: expected a {ndim}-dimensional integer array, got dtype "
            f"{arr.dtype} and shape {arr.shape}; the file is damaged or was edited; save the "
            "trace again (Trace.save / Report.save)"
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise TraceFileError(f"{str(path)!r}: {field}: a value exceeds the int64 range")
    return arr.astype(np.int64)


def _check_consistent(
    templates: TemplateTable, instances: dict[str, np.ndarray], counters: Counters
) -> None:
    lengths = {len(np.asarray(v)) for v in instances.values()}
    tid = np.asarray(instances["template"])
    shape = (len(templates), len(counters.slots))
    ok = (
        len(lengths) <= 1
        and (len(tid) == 0 or (int(tid.min()) >= 0 and int(tid.max()) < len(templates)))
        and counters.count.shape == shape
        and counters.stretch_ps.shape == shape
        and counters.waiting_ps.shape == (len(counters.slots),)
    )
    if not ok:
        raise TraceError("the trace file's instances or counters do not match its templates")
