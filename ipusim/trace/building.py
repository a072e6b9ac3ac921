"""Traces built from records: by hand (:class:`TraceRecorder`, ``Trace(columns)``), by selection or
shifting (:meth:`Trace.select`, :meth:`Trace.shifted`), by joining (:func:`concat`).

Each distinct record content (track, name, layer, op, phase, bytes, FLOPs) becomes a one-record
stretch template and each record an instance of it; the counters come from the records, each
IPU's idle time under the host's round-trip work by interval arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ipusim.errors import TraceError
from ipusim.trace._schema import (
    COLUMNS,
    HOST,
    HOST_ROUND_TRIP_WORK,
    STATE_CODES,
    TRACE_PHASES,
    TRACKS,
    check_record,
)
from ipusim.trace.counters import Counters
from ipusim.trace.intervals import complement, overlap, union
from ipusim.trace.records import Trace, TraceDetail
from ipusim.trace.templates import _DTYPES, RECORD_FIELDS, TemplateTable

__all__ = ["TraceRecorder", "concat", "counters_from_records", "expand_replicas"]


def from_string_records(cols: Mapping[str, np.ndarray]) -> Trace:
    """A trace of validated records with string columns (one template per distinct record
    content)."""
    pool = np.concatenate([[""], cols["name"], cols["layer"], cols["op"]]).astype(str)
    names, inverse = np.unique(pool, return_inverse=True)
    n = len(cols["ipu"])
    coded = {
        "ipu": cols["ipu"],
        "track": _codes_in(cols["track"], TRACKS),
        "phase": _codes_in(cols["phase"], TRACE_PHASES),
        "name": inverse[1 : 1 + n],
        "layer": inverse[1 + n : 1 + 2 * n],
        "op": inverse[1 + 2 * n :],
    }
    for name in ("step", "micro_batch", "start_ps", "end_ps", "bytes", "flops"):
        coded[name] = cols[name]
    return from_coded_records(coded, tuple(str(x) for x in names.tolist()))


def _codes_in(values: np.ndarray, table: Sequence[str]) -> np.ndarray:
    """Index in ``table`` of every value (values already validated)."""
    unique, inverse = np.unique(values, return_inverse=True)
    return np.array([table.index(str(u)) for u in unique], dtype=np.int64)[inverse]


def from_coded_records(cols: Mapping[str, np.ndarray], names: tuple[str, ...]) -> Trace:
    """A trace of coded records: each distinct record content is a one-record stretch template,
    each record an instance; counters are computed from the records."""
    n = len(cols["ipu"])
    cols = {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}
    order = np.lexsort((np.arange(n), cols["end_ps"], cols["track"], cols["ipu"], cols["start_ps"]))
    cols = {k: v[order] for k, v in cols.items()}
    if "" not in names:
        names = ("", *names)
        for key in ("name", "layer", "op"):
            cols[key] = cols[key] + 1
    # A one-record stretch template spans its instance: from 0 to the end (-1).
    spans = {"rel_start": 0, "rel_end": -1}
    content = np.stack(
        [np.full(n, spans[f], np.int64) if f in spans else cols[f] for f in RECORD_FIELDS], axis=1
    ).reshape(n, len(RECORD_FIELDS))
    unique, template = np.unique(content, axis=0, return_inverse=True)
    template = template.reshape(-1)
    t = len(unique)
    records = {f: unique[:, k].astype(_DTYPES[f]) for k, f in enumerate(RECORD_FIELDS)}
    table = TemplateTable(
        names=names,
        ptr=np.arange(t + 1, dtype=np.int64),
        stretch=np.ones(t, dtype=bool),
        duration_ps=np.zeros(t, dtype=np.int64),
        label=records["name"].copy(),
        records=records,
    )
    kept = ("ipu", "start_ps", "end_ps", "step", "micro_batch")
    instances = {"template": template, **{k: cols[k] for k in kept}}
    end_ps = int(cols["end_ps"].max()) if n else 0
    counters = counters_from_records(table, instances, end_ps)
    return Trace.build(
        table,
        instances,
        counters,
        end_ps,
        detail=TraceDetail("full", records=n),
        checked=False,
        sort=False,
    )


def counters_from_records(
    templates: TemplateTable, instances: Mapping[str, np.ndarray], end_ps: int
) -> Counters:
    """Counters of a trace whose every instance is kept (each IPU's idle time overlapping the
    host's round-trip work found by interval arithmetic)."""
    ipu = np.asarray(instances["ipu"], dtype=np.int64)
    slots = tuple(int(i) for i in np.unique(np.concatenate([[HOST], ipu])))
    slot_of = np.searchsorted(np.array(slots), ipu)
    counters = Counters.empty(len(templates), slots)
    tid = np.asarray(instances["template"], dtype=np.int64)
    start = np.asarray(instances["start_ps"], dtype=np.int64)
    end = np.asarray(instances["end_ps"], dtype=np.int64)
    np.add.at(counters.count, (tid, slot_of), 1)
    stretch = templates.stretch[tid] if len(tid) else np.zeros(0, bool)
    np.add.at(counters.stretch_ps, (tid[stretch], slot_of[stretch]), (end - start)[stretch])
    if len(tid):
        first = templates.ptr[:-1][tid]
        track = templates.records["track"][np.minimum(first, len(templates.records["track"]) - 1)]
        name = templates.records["name"][np.minimum(first, len(templates.records["name"]) - 1)]
        work_codes = [templates.name_code(n) for n in HOST_ROUND_TRIP_WORK]
        host_work = (ipu == HOST) & np.isin(name, work_codes)
        work = union(start[host_work], end[host_work])
        for k, slot_ipu in enumerate(slots):
            if slot_ipu == HOST:
                continue
            mine = (ipu == slot_ipu) & np.isin(track, STATE_CODES)
            idle = complement(union(start[mine], end[mine]), 0, end_ps)
            counters.waiting_ps[k] = overlap(idle, work)
    return counters


# ---------------------------------------------------------------------- building by hand
class TraceRecorder:
    """Append-only, validated collector of trace records, for traces built by hand.

    :meth:`add` checks each record (track, phase, times); :meth:`freeze` turns the records into
    an immutable :class:`Trace`. (The engine does not use it: it appends instances of templates.)
    """

    def __init__(self) -> None:
        self._cols: dict[str, list[int | str]] = {name: [] for name in COLUMNS}

    def __len__(self) -> int:
        return len(self._cols["ipu"])

    def add(
        self,
        ipu: int,
        track: str,
        name: str,
        start_ps: int,
        end_ps: int,
        *,
        layer: str = "",
        op: str = "",
        phase: str = "",
        step: int = -1,
        micro_batch: int = -1,
        bytes: int = 0,
        flops: int = 0,
    ) -> None:
        """Append one record.

        Args:
            ipu: IPU index, or :data:`HOST` (-1) for the host.
            track: one of :data:`TRACKS` (IPUs: :data:`IPU_STATE_TRACKS`; host: :data:`HOST_TRACKS`).
            name: label shown in traces (e.g. ``"dense/matmul"``).
            start_ps: start of the interval (picoseconds, >= 0).
            end_ps: end of the interval (picoseconds, >= ``start_ps``).
            layer: layer name ('' when none).
            op: op name ('' when none).
            phase: one of :data:`TRACE_PHASES`.
            step: micro-batch step index (-1 when not tied to a step).
            micro_batch: micro-batch index (-1 when none).
            bytes: bytes moved by the record (exchange, link, host-io, remote).
            flops: floating-point operations done by the record.

        Raises:
            TraceError: if the track, phase or times are invalid.
        """
        check_record(ipu, track, name, phase, start_ps, end_ps)
        for label, text in (("name", name), ("layer", layer), ("op", op)):
            if not isinstance(text, str):
                raise TraceError(
                    f"{label} must be a str; got {text!r} of type {type(text).__name__}"
                )
        values: tuple[int | str, ...] = (
            *(ipu, track, name, layer, op, phase, step, micro_batch, start_ps, end_ps),
            bytes,
            flops,
        )
        for column, value in zip(COLUMNS, values):
            self._cols[column].append(value)

    def freeze(self) -> Trace:
        """Return an immutable :class:`Trace` of every record added so far.

        Raises:
            TraceError: if an integer column holds a non-integer value.
        """
        return Trace(self._cols)


def concat(traces: Sequence[Trace], offsets_ps: Sequence[int] | None = None) -> Trace:
    """Join the kept records of traces into one, shifting trace ``k`` by ``offsets_ps[k]``.

    Args:
        traces: the traces to join.
        offsets_ps: one offset (>= 0) per trace; all zero when omitted.

    Returns:
        A trace holding every record (in canonical order).
    """
    traces = list(traces)
    if offsets_ps is None:
        offsets_ps = [0] * len(traces)
    offsets_ps = list(offsets_ps)
    if len(offsets_ps) != len(traces):
        raise TraceError(
            f"offsets_ps has {len(offsets_ps)} entries for {len(traces)} traces; give one per trace"
        )
    if not traces:
        return Trace.empty()
    shifted = [t.shifted(int(o)) if o else t for t, o in zip(traces, offsets_ps)]
    return Trace({name: np.concatenate([t[name] for t in shifted]) for name in COLUMNS})


def expand_replicas(trace: Trace, replicas: int, ipus_per_replica: int) -> Trace:
    """``trace`` (replica 0's) as the trace of ``replicas`` replicas of ``ipus_per_replica``
    IPUs each. Nothing is copied: the replicas stay implicit until a consumer asks for every
    IPU (:meth:`Trace.to_dataframe` with ``replicas=True``, the Chrome export)."""
    if replicas < 1 or ipus_per_replica < 1:
        raise TraceError(
            f"replicas ({replicas}) and ipus_per_replica ({ipus_per_replica}) must be at least 1"
        )
    used = trace.counters.ipus
    if used and max(used) >= ipus_per_replica:
        raise TraceError(
            f"the trace uses IPU {max(used)}, more than the {ipus_per_replica} IPUs of one replica"
        )
    return Trace.build(
        trace.templates,
        trace.instances,
        trace.counters,
        trace.end_ps,
        replicas=replicas,
        ipus_per_replica=ipus_per_replica,
        detail=trace.detail,
        checked=trace.states_checked,
        sort=False,
        execution_end_ps=trace.execution_end_ps,
    )
