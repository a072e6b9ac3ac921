"""Export a :class:`~ipusim.trace.Trace` to the Chrome Trace Event Format (Perfetto, chrome://tracing).

Layout: one process per IPU (``"IPU 0"``, ``"IPU 1"``, …; ``pid = ipu + 1``) and one for the host
(``"Host"``, ``pid =`` :data:`HOST_PID`, sorted first); one thread per track, in the order of
:data:`~ipusim.trace.TRACKS`. Metadata events name and order them. The host's pid is not 0:
Perfetto treats pid 0 as the Linux idle process and its maintainers advise synthetic traces to
avoid it (google/perfetto#394).

Every record with a duration becomes a complete event (``"ph": "X"``). A viewer needs the
complete events of one thread to be strictly nested, so records of one (process, track) that
overlap (the host's infeed copies sharing a link, say) are spread over extra threads ("lanes",
named ``"host-io #2"``, ``"host-io #3"``, …) by greedy interval partitioning: in order of start,
each record takes the lowest-numbered lane that is free by then. Records on one lane never overlap,
so every thread is a sequence of disjoint slices.

Zero-duration records become thread-scoped instant events (``"ph": "i"``) on the track's first lane.

Times: ``ts`` and ``dur`` are microseconds (floats), as the format requires. Both ends of every
record are first rounded down to whole nanoseconds, the resolution Perfetto imports at (it
converts ``ts`` and ``dur`` separately to integer nanoseconds): rounding each end of the
picosecond interval keeps back-to-back records back to back, where rounding ``start`` and
``duration`` separately could push one record 1 ns into the next. The exact picosecond times stay
in the trace's ``.npz`` and DataFrame.

Events are sorted (metadata first, then by process, thread, time), so the same trace always gives
the same JSON text.

**Replicas** are written out here (replica 0's records copied to every replica's IPUs) unless
``replicas=False``. **Windows**: ``window_ps=(start, end)`` keeps the records that overlap the
window, ``executions=(first, stop)`` the records of those executions (0-based, ``stop``
excluded). **Dense stretches** are aggregated when the export would exceed ``max_events``
events: on each lane, consecutive records shorter than a resolution ``r`` and less than ``r``
apart become one slice named ``"<n> <track> records"`` (their FLOPs and bytes summed in
``args``), ``r`` doubling from 1 ns until the export fits; long records stay as they are. A path
ending in ``.gz`` is written gzip-compressed (deterministic: no time stamp in the header).
"""

from __future__ import annotations

import gzip
import heapq
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ipusim._files import write_bytes_atomic
from ipusim.trace._schema import _TRACK_INDEX, TRACE_PHASES
from ipusim.trace.expand import replicate
from ipusim.trace.records import HOST, TRACKS, Trace, TraceError

#: Chrome process id of the host (IPU ``i`` is ``i + 1``); its sort index is 0, so it shows first.
HOST_PID = 1_000_000
#: Spacing of the thread sort indices of one track's lanes.
_LANE_SORT_STRIDE = 1_000_000


def pid_of(ipu: int) -> int:
    """The Chrome process id of an IPU (``ipu + 1``; the host is :data:`HOST_PID`)."""
    return HOST_PID if ipu == HOST else int(ipu) + 1


def tid_of(track: str, lane: int = 0) -> int:
    """The Chrome thread id of lane ``lane`` of ``track`` (lane 0 of the tracks: 1..7)."""
    return lane * len(TRACKS) + _TRACK_INDEX[track] + 1


def _greedy_lanes(start: np.ndarray, end: np.ndarray) -> list[int]:
    """Lane of each interval (given sorted by start): the lowest lane free at its start."""
    busy: list[tuple[int, int]] = []  # (end, lane)
    free: list[int] = []
    lanes = []
    next_lane = 0
    for s, e in zip(start.tolist(), end.tolist()):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, next_lane = next_lane, next_lane + 1
        heapq.heappush(busy, (e, lane))
        lanes.append(lane)
    return lanes


def assign_lanes(cols: Mapping[str, np.ndarray]) -> np.ndarray:
    """Lane of every record (0 unless it overlaps records of its IPU and track).

    Args:
        cols: coded record columns (``ipu``, ``track`` codes, ``start_ps``, ``end_ps``), or a
            :class:`Trace` (its kept records, replica 0).

    Zero-duration records get lane 0.
    """
    if isinstance(cols, Trace):
        cols = {c: cols.codes(c) for c in ("ipu", "track", "start_ps", "end_ps")}
    ipu, codes_all = cols["ipu"], cols["track"].astype(np.int64)
    start, end = cols["start_ps"], cols["end_ps"]
    n = len(ipu)
    lanes = np.zeros(n, dtype=np.int64)
    timed = np.flatnonzero(end > start)
    if len(timed) < 2:
        return lanes
    codes = codes_all[timed]
    order = np.lexsort((timed, end[timed], start[timed], codes, ipu[timed]))
    idx = timed[order]
    g_ipu, g_code = ipu[idx], codes[order]
    s, e = start[idx], end[idx]
    same = (g_ipu[1:] == g_ipu[:-1]) & (g_code[1:] == g_code[:-1])
    overlapping = same & (s[1:] < e[:-1])
    if not overlapping.any():
        return lanes
    # Greedy partitioning, only for the (ipu, track) groups that hold an overlap.
    group_start = np.flatnonzero(np.concatenate(([True], ~same)))
    group_end = np.append(group_start[1:], len(idx))
    for g0, g1 in zip(group_start.tolist(), group_end.tolist()):
        if not overlapping[g0 : g1 - 1].any():
            continue
        lanes[idx[g0:g1]] = _greedy_lanes(s[g0:g1], e[g0:g1])
    return lanes


_X_EVENT = (
    '{"name":%s,"cat":%s,"ph":"X","ts":%r,"pid":%d,"tid":%d,"dur":%r,'
    '"args":{"layer":%s,"op":%s,"phase":%s,"step":%d,"micro_batch":%d,"bytes":%d,"flops":%d}}'
)
_I_EVENT = (
    '{"name":%s,"cat":%s,"ph":"i","ts":%r,"pid":%d,"tid":%d,"s":"t",'
    '"args":{"layer":%s,"op":%s,"phase":%s,"step":%d,"micro_batch":%d,"bytes":%d,"flops":%d}}'
)
_AGG_EVENT = (
    '{"name":%s,"cat":%s,"ph":"X","ts":%r,"pid":%d,"tid":%d,"dur":%r,'
    '"args":{"records":%d,"bytes":%d,"flops":%d}}'
)
_OTHER_DATA = {"generator": "ipusim", "clock": "simulated", "resolution": "1 ns"}
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


_AGGREGATE_FIELDS = ("name", "track", "phase", "layer", "op")


def to_chrome_json(
    trace: Trace,
    path: str | os.PathLike[str] | None = None,
    *,
    process_names: Mapping[int, str] | None = None,
    window_ps: tuple[int, int] | None = None,
    executions: tuple[int, int] | None = None,
    replicas: bool = True,
    max_events: int | None = None,
    level: str | None = None,
) -> dict[str, Any]:
    """Convert ``trace`` to a Trace Event Format document, and write it when ``path`` is given.

    Args:
        trace: the trace to export.
        path: where to write the JSON (atomically; gzip-compressed when it ends in ``.gz``);
            nothing is written when ``None``.
        process_names: IPU index (-1 for the host) → process name, replacing ``"IPU <i>"`` /
            ``"Host"`` for the indices given.
        window_ps: keep only the records overlapping ``[start, end)`` picoseconds.
        executions: keep only the records of executions ``first`` to ``stop - 1`` (0-based).
        replicas: write every replica's IPUs (copies of replica 0's records).
        max_events: aggregate dense stretches until the export holds at most this many events
            (default: no limit).
        level: ``"full"`` or ``"blocks"`` (default: the trace's own level).

    Returns:
        The document: ``{"traceEvents": [...], "otherData": {...}}`` (what the file holds).
    """
    text = chrome_json_text(
        trace,
        process_names=process_names,
        window_ps=window_ps,
        executions=executions,
        replicas=replicas,
        max_events=max_events,
        level=level,
    )
    if path is not None:
        data = text.encode("utf-8")
        if str(path).endswith(".gz"):
            data = gzip.compress(data, compresslevel=6, mtime=0)
        write_bytes_atomic(path, data)
    document: dict[str, Any] = json.loads(text)
    return document


def execution_window(trace: Trace, executions: tuple[int, int]) -> tuple[int, int]:
    """The picoseconds ``[start, end)`` of executions ``first`` to ``stop - 1`` of ``trace``.

    Raises:
        TraceError: the range is empty, outside the run, or not kept by the trace.
    """
    first, stop = (int(x) for x in executions)
    ends = trace.execution_end_ps
    if not len(ends):
        raise TraceError("this trace does not know its executions (it was built from records)")
    if not 0 <= first < stop <= len(ends):
        raise TraceError(
            f"executions=({first}, {stop}) is not a range of the run's {len(ends)} executions "
            "(0-based, stop excluded)"
        )
    kept = trace.detail.kept_executions
    if trace.detail.level == "summary" or stop > kept:
        raise TraceError(
            f"executions {first}-{stop - 1} are not all kept: {trace.detail.describe()}. "
            "Raise IPUConfig.ipusim.trace_records or set IPUConfig.ipusim.trace_detail to "
            "'full' to keep them."
        )
    start = int(ends[first - 1]) if first else 0
    return start, int(ends[stop - 1])


def chrome_json_text(
    trace: Trace,
    *,
    process_names: Mapping[int, str] | None = None,
    window_ps: tuple[int, int] | None = None,
    executions: tuple[int, int] | None = None,
    replicas: bool = True,
    max_events: int | None = None,
    level: str | None = None,
) -> str:
    """The JSON text of :func:`to_chrome_json`: compact, one event per line, deterministic."""
    names = {} if process_names is None else {int(k): str(v) for k, v in process_names.items()}
    coded = trace._coded(level)
    cols = {c: coded[c] for c in coded}
    if executions is not None:
        window_ps = execution_window(trace, executions)
    if window_ps is not None:
        lo, hi = (int(x) for x in window_ps)
        if hi < lo:
            raise TraceError(f"window_ps=({lo}, {hi}) ends before it starts")
        keep = (cols["end_ps"] > lo) & (cols["start_ps"] < hi)
        keep |= (
            (cols["start_ps"] == cols["end_ps"])
            & (cols["start_ps"] >= lo)
            & (cols["start_ps"] < hi)
        )
        cols = {c: a[keep] for c, a in cols.items()}
    if replicas and trace.replicas > 1:
        cols = replicate(cols, trace.replicas, trace.ipus_per_replica)
    tables = {
        "track": np.array(TRACKS, dtype=object),
        "phase": np.array(TRACE_PHASES, dtype=object),
    }
    names_table = np.array(trace.names, dtype=object)  # of the name, layer and op codes
    lanes = assign_lanes(cols)
    labels = {c: tables.get(c, names_table)[cols[c]] for c in _AGGREGATE_FIELDS}
    events = _events(cols, lanes, labels)
    if max_events is not None:
        events = _aggregate(events, max_events)
    return _render(events, names)


def _events(
    cols: Mapping[str, np.ndarray], lanes: np.ndarray, labels: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Event columns, sorted by process, thread and start (longer first at an equal start)."""
    ipu = cols["ipu"].astype(np.int64)
    codes = cols["track"].astype(np.int64)
    n = len(ipu)
    pid = np.where(ipu == HOST, HOST_PID, ipu + 1)
    tid = lanes * len(TRACKS) + codes + 1
    start_ns = cols["start_ps"] // 1000
    end_ns = cols["end_ps"] // 1000
    order = np.lexsort((np.arange(n), -(end_ns - start_ns), start_ns, tid, pid))
    out = {
        "ipu": ipu,
        "code": codes,
        "lane": lanes,
        "pid": pid,
        "tid": tid,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "zero": cols["end_ps"] == cols["start_ps"],
        **{k: cols[k] for k in ("step", "micro_batch", "bytes", "flops")},
        "count": np.ones(n, dtype=np.int64),
    }
    out.update(labels)
    return {k: np.asarray(v)[order] for k, v in out.items()}


def _aggregate(events: dict[str, np.ndarray], max_events: int) -> dict[str, np.ndarray]:
    """Merge dense stretches of short records (see the module docstring) until at most
    ``max_events`` events remain (or nothing more can merge)."""
    if max_events < 1:
        raise TraceError(f"max_events must be >= 1; got {max_events}")
    n = len(events["pid"])
    if n <= max_events:
        return events
    timed = ~events["zero"]
    same_lane = np.zeros(n, dtype=bool)
    same_lane[1:] = (events["pid"][1:] == events["pid"][:-1]) & (
        events["tid"][1:] == events["tid"][:-1]
    )
    start, end = events["start_ns"], events["end_ns"]
    duration = end - start
    gap = np.zeros(n, dtype=np.int64)
    gap[1:] = start[1:] - end[:-1]
    resolution = 1
    span = int(end.max() - start.min()) + 1 if n else 1
    while True:
        short = timed & (duration < resolution)
        join = np.zeros(n, dtype=bool)
        join[1:] = same_lane[1:] & short[1:] & short[:-1] & (gap[1:] < resolution)
        groups = n - int(join.sum())
        if groups <= max_events or resolution > span:
            break
        resolution *= 2
    if not join.any():
        return events
    first = np.flatnonzero(~join)
    merged = {k: v[first] for k, v in events.items()}
    count = np.diff(np.append(first, n))
    merged["end_ns"] = np.maximum.reduceat(end, first)
    merged["bytes"] = np.add.reduceat(events["bytes"], first)
    merged["flops"] = np.add.reduceat(events["flops"], first)
    merged["count"] = count
    many = count > 1
    if many.any():
        track = np.array(TRACKS, dtype=object)[merged["code"][many]]
        merged["name"] = merged["name"].copy()
        merged["name"][many] = [f"{c} {t} records" for c, t in zip(count[many].tolist(), track)]
        for field, blank in (("layer", ""), ("op", ""), ("step", -1), ("micro_batch", -1)):
            merged[field] = merged[field].copy()
            merged[field][many] = blank
    return merged


def _render(events: Mapping[str, np.ndarray], names: Mapping[int, str]) -> str:
    def encoded(column: str) -> list[str]:
        values = events[column]
        unique, inverse = np.unique(values.astype(str), return_inverse=True)
        table = [_ENCODER.encode(str(u)) for u in unique]
        return [table[k] for k in inverse.reshape(-1).tolist()]

    n = len(events["pid"])
    if n:
        columns = (
            encoded("name"),
            encoded("track"),
            (events["start_ns"] / 1000).tolist(),
            events["pid"].tolist(),
            events["tid"].tolist(),
            ((events["end_ns"] - events["start_ns"]) / 1000).tolist(),
            encoded("layer"),
            encoded("op"),
            encoded("phase"),
            events["step"].tolist(),
            events["micro_batch"].tolist(),
            events["bytes"].tolist(),
            events["flops"].tolist(),
        )
        rows = list(zip(*columns))
    else:
        rows = []
    lines = [
        _ENCODER.encode(event)
        for event in _metadata(events["ipu"], events["code"], events["lane"], names)
    ]
    counts = events["count"].tolist()
    for is_zero, count, row in zip(events["zero"].tolist(), counts, rows):
        if is_zero:
            lines.append(_I_EVENT % (row[:5] + row[6:]))
        elif count > 1:
            lines.append(_AGG_EVENT % (*row[:6], count, *row[11:]))
        else:
            lines.append(_X_EVENT % row)
    tail = _ENCODER.encode({"otherData": _OTHER_DATA})[1:]
    return '{"traceEvents":[\n' + ",\n".join(lines) + "\n]," + tail + "\n"


def _metadata(
    ipu: np.ndarray, codes: np.ndarray, lanes: np.ndarray, names: Mapping[int, str]
) -> list[dict[str, Any]]:
    """Name and order every process and every thread used."""
    events: list[dict[str, Any]] = []
    if len(ipu) == 0:
        return events
    threads = np.unique(np.stack([ipu, codes, lanes]), axis=1).T.tolist()
    last_ipu = None
    for ipu_index, code, lane in threads:  # sorted by IPU, track, lane
        pid = pid_of(ipu_index)
        if ipu_index != last_ipu:
            process = names.get(ipu_index, "Host" if ipu_index == HOST else f"IPU {ipu_index}")
            events.append(_meta("process_name", pid, 0, {"name": process}))
            sort_index = 0 if ipu_index == HOST else pid
            events.append(_meta("process_sort_index", pid, 0, {"sort_index": sort_index}))
            last_ipu = ipu_index
        track = TRACKS[code]
        tid = tid_of(track, lane)
        name = track if lane == 0 else f"{track} #{lane + 1}"
        events.append(_meta("thread_name", pid, tid, {"name": name}))
        sort_index = code * _LANE_SORT_STRIDE + lane
        events.append(_meta("thread_sort_index", pid, tid, {"sort_index": sort_index}))
    return events


def _meta(kind: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": kind, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}
