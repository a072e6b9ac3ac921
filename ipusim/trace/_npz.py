"""A trace as an ``.npz`` file: its templates, kept instances, counters and layout (no pickles).

Version 2 stores the compact form; version 1 files (one string or integer array per record
column) are still read, as a trace of records.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ipusim.errors import MissingFileError, TraceFileError
from ipusim.trace._schema import COLUMNS, TraceError
from ipusim.trace.counters import Counters
from ipusim.trace.expand import INSTANCE_FIELDS
from ipusim.trace.records import Trace, TraceDetail
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
        **arrays,
    )
    return buffer.getvalue()


def trace_from_npz(path: Path) -> Trace:
    """Read a trace file (see the module docstring)."""
    if not path.is_file():
        raise MissingFileError(f"no trace file at {str(path)!r}")
    try:
        with np.load(path, allow_pickle=False) as data:
            members = {key: data[key] for key in data.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise TraceFileError(
            f"{str(path)!r} is not a readable .npz trace file ({type(exc).__name__}: {exc}); "
            "it is damaged or truncated. Save the trace again (Trace.save / Report.save)."
        ) from None
    if "__format__" not in members or str(members["__format__"]) != _FORMAT:
        raise TraceFileError(f"{str(path)!r} is an .npz file but not an ipusim trace")
    version = int(members["__version__"]) if "__version__" in members else -1
    if version == 1:
        try:
            return Trace({name: members[name] for name in COLUMNS if name in members})
        except TraceError as exc:
            raise TraceFileError(f"{str(path)!r} holds an inconsistent trace: {exc}") from None
    if version != _VERSION:
        raise TraceFileError(
            f"{str(path)!r} is trace format version {version}; this ipusim reads versions 1 and "
            f"{_VERSION}"
        )
    try:
        meta = json.loads(str(members["__meta__"]))
        templates = TemplateTable.from_arrays(
            {k[2:]: v for k, v in members.items() if k.startswith("t_")}
        )
        instances = {f: members[f"i_{f}"] for f in INSTANCE_FIELDS}
        counters = Counters(
            tuple(int(s) for s in members["c_slots"].tolist()),
            members["c_count"].astype(np.int64),
            members["c_stretch_ps"].astype(np.int64),
            members["c_waiting_ps"].astype(np.int64),
        )
        detail = TraceDetail(**meta["detail"])
        _check_consistent(templates, instances, counters)
        return Trace.build(
            templates,
            instances,
            counters,
            int(meta["end_ps"]),
            replicas=int(meta["replicas"]),
            ipus_per_replica=int(meta["ipus_per_replica"]),
            detail=detail,
            checked=bool(meta["states_checked"]),
            sort=False,
            execution_end_ps=members["execution_end_ps"],
        )
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        if isinstance(exc, TraceFileError):
            raise
        raise TraceFileError(f"{str(path)!r} holds a damaged ipusim trace ({exc!r})") from None


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
