"""The immutable :class:`Trace` of a run.

A trace holds, compactly:

- the run's **templates** (``ipusim.trace.templates``): each activity's records with every
  string an integer code into one table of names;
- the **instances** it kept (template, IPU, start, end, step, micro-batch) for replica 0 and the
  host, in a canonical order;
- **counters** (``ipusim.trace.counters``) for the whole run, whatever was kept;
- the **replica layout** (replicas x IPUs per replica): replicas are identical, so only replica 0
  is stored and the others are copies made on demand;
- its **detail** (:class:`TraceDetail`): ``full`` (every record), ``blocks`` (one record per
  block of supersteps) or ``summary`` (counters only), and which executions it kept.

Records are made from instances when asked for (``trace["name"]``, :meth:`Trace.to_dataframe`,
the Chrome export), by vectorised copies, in the canonical order: by ``start_ps``, then IPU (host
first), then track in :data:`TRACKS` order, then ``end_ps``. Times are integer picoseconds; IPU
index ``-1`` (:data:`HOST`) is the host. On an IPU the tracks of :data:`IPU_STATE_TRACKS` are its
states and never overlap; the host's tracks may overlap.

A trace can also be built record by record (``TraceRecorder().add(...)``, ``Trace(columns)``;
see :mod:`ipusim.trace.building`): each record is then an instance of a one-record template.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ipusim.cost.units import PS_PER_S
from ipusim.errors import KeyNotFoundError, TraceError
from ipusim.trace._schema import (
    COLUMNS,
    HOST,
    HOST_TRACKS,
    IPU_STATE_TRACKS,
    STATE_CODES,
    STRING_COLUMNS,
    TRACE_PHASES,
    TRACKS,
    int_column,
    str_column,
    validate,
)
from ipusim.trace.counters import Counters, Totals, totals
from ipusim.trace.detail import DETAIL_LEVELS, TraceDetail
from ipusim.trace.expand import INSTANCE_FIELDS, materialise, record_count
from ipusim.trace.templates import TemplateTable

__all__ = [
    "COLUMNS",
    "DETAIL_LEVELS",
    "HOST",
    "HOST_TRACKS",
    "IPU_STATE_TRACKS",
    "TRACE_PHASES",
    "TRACKS",
    "Trace",
    "TraceDetail",
    "TraceError",
]

_FINGERPRINT_TAG = b"ipusim-trace-v2"
#: The fixed tables of the ``track`` and ``phase`` codes.
_TABLES = {"track": np.array(TRACKS, dtype=str), "phase": np.array(TRACE_PHASES, dtype=str)}


@dataclass(slots=True)
class _Cache:
    """What a trace computed once from its compact form (it never changes after)."""

    totals: Totals | None = None
    length: int | None = None
    fingerprint: str | None = None
    coded: dict[tuple[str, bool], dict[str, np.ndarray]] = field(default_factory=dict)
    decoded: dict[tuple[str, str, bool], np.ndarray] = field(default_factory=dict)


class Trace:
    """An immutable trace: templates, kept instances, whole-run counters, replica layout.

    ``Trace(columns)`` builds a trace from records given column by column (every column of
    :data:`COLUMNS`, equal lengths; strings for ``track``, ``name``, ``layer``, ``op``,
    ``phase``, integers for the rest).

    Raises:
        TraceError: if a column is missing, of the wrong type or length, or a record is invalid.
    """

    __slots__ = (
        "_templates",
        "_instances",
        "_counters",
        "_end_ps",
        "_replicas",
        "_per_replica",
        "_detail",
        "_executions",
        "_checked",
        "_cache",
        "__weakref__",
    )
    _templates: TemplateTable
    _instances: dict[str, np.ndarray]
    _counters: Counters
    _end_ps: int
    _replicas: int
    _per_replica: int
    _detail: TraceDetail
    _executions: np.ndarray
    _checked: bool
    _cache: _Cache

    def __init__(self, columns: Mapping[str, ArrayLike]) -> None:
        missing = [name for name in COLUMNS if name not in columns]
        if missing:
            raise TraceError(f"trace columns {missing} are missing; expected all of {COLUMNS}")
        cols = {
            name: str_column(name, columns[name])
            if name in STRING_COLUMNS
            else int_column(name, columns[name])
            for name in COLUMNS
        }
        lengths = {name: len(arr) for name, arr in cols.items()}
        if len(set(lengths.values())) > 1:
            raise TraceError(f"trace columns must have equal lengths; got {lengths}")
        validate(cols)
        from ipusim.trace.building import from_string_records

        built = from_string_records(cols)
        for name in Trace.__slots__:
            if name != "__weakref__":
                object.__setattr__(self, name, getattr(built, name))

    @classmethod
    def build(
        cls,
        templates: TemplateTable,
        instances: Mapping[str, np.ndarray],
        counters: Counters,
        end_ps: int,
        *,
        replicas: int = 1,
        ipus_per_replica: int = 1,
        detail: TraceDetail | None = None,
        checked: bool = True,
        sort: bool = True,
        execution_end_ps: Sequence[int] | np.ndarray = (),
    ) -> Trace:
        """A trace from the engine's templates, kept instances and counters.

        Args:
            templates: the run's templates.
            instances: the kept instances (:data:`~ipusim.trace.expand.INSTANCE_FIELDS`).
            counters: whole-run counters.
            end_ps: end of the run (picoseconds).
            replicas / ipus_per_replica: the replica layout (instances are replica 0's).
            detail: what was kept (default: full detail of a trace built from records).
            checked: the IPU states are known not to overlap (engine traces).
            sort: put the instances in the canonical order (False when they already are).
            execution_end_ps: when each execution of the run ended (picoseconds).
        """
        if replicas < 1 or ipus_per_replica < 1:
            raise TraceError(
                f"replicas ({replicas}) and ipus_per_replica ({ipus_per_replica}) must be >= 1"
            )
        inst = {f: np.asarray(instances[f], dtype=np.int64) for f in INSTANCE_FIELDS}
        inst["template"] = inst["template"].astype(np.int32)
        inst["ipu"] = inst["ipu"].astype(np.int32)
        if sort and len(inst["template"]) > 1:
            keys = ("micro_batch", "step", "end_ps", "template", "ipu", "start_ps")
            order = np.lexsort(tuple(inst[k] for k in keys))
            inst = {f: a[order] for f, a in inst.items()}
        for arr in inst.values():
            arr.flags.writeable = False
        trace = cls.__new__(cls)
        trace._templates = templates
        trace._instances = inst
        trace._counters = counters
        trace._end_ps = int(end_ps)
        trace._replicas = int(replicas)
        trace._per_replica = int(ipus_per_replica)
        records = record_count(templates, inst, "full")
        trace._detail = detail or TraceDetail("full", records=records)
        trace._checked = checked
        ends = np.array(execution_end_ps, dtype=np.int64).reshape(-1)
        ends.flags.writeable = False
        trace._executions = ends
        trace._cache = _Cache()
        return trace

    @classmethod
    def empty(cls) -> Trace:
        """A trace with no records."""
        return cls({name: [] for name in COLUMNS})

    # ------------------------------------------------------------------ the compact form
    @property
    def templates(self) -> TemplateTable:
        """The run's templates and name table."""
        return self._templates

    @property
    def instances(self) -> Mapping[str, np.ndarray]:
        """The kept instances (replica 0 and the host), read-only arrays."""
        return self._instances

    @property
    def counters(self) -> Counters:
        """Whole-run counters (per template and IPU)."""
        return self._counters

    @property
    def detail(self) -> TraceDetail:
        """What the trace kept of its run."""
        return self._detail

    @property
    def replicas(self) -> int:
        """Replicas of the run (replica 0 is stored; the others are copies)."""
        return self._replicas

    @property
    def ipus_per_replica(self) -> int:
        """IPUs of each replica: replica r's IPU ``r * ipus_per_replica + i`` does what replica
        0's IPU ``i`` does."""
        return self._per_replica

    @property
    def execution_end_ps(self) -> np.ndarray:
        """When each execution of the run ended (picoseconds; empty for traces of records)."""
        return self._executions

    @property
    def names(self) -> tuple[str, ...]:
        """The table of names: record names, layers and ops are codes into it."""
        return self._templates.names

    def totals(self) -> Totals:
        """Whole-run totals per IPU (replica 0 and the host), track and phase."""
        cached = self._cache.totals
        if cached is None:
            cached = self._cache.totals = totals(self._templates, self._counters)
        return cached

    # ------------------------------------------------------------------ records
    def _coded(self, level: str | None = None, replicas: bool = False) -> dict[str, np.ndarray]:
        level = level or self._detail.level
        if level not in DETAIL_LEVELS:
            raise TraceError(f"level must be one of {DETAIL_LEVELS}; got {level!r}")
        key = (level, replicas)
        cols = self._cache.coded.get(key)
        if cols is None:
            r = self._replicas if replicas else 1
            cols = materialise(self._templates, self._instances, level, r, self._per_replica)
            for arr in cols.values():
                arr.flags.writeable = False
            self._cache.coded[key] = cols
        return cols

    def codes(self, column: str, *, level: str | None = None, replicas: bool = False) -> np.ndarray:
        """A record column as stored: integers, with ``track`` / ``phase`` as indices into
        :data:`TRACKS` / :data:`TRACE_PHASES` and ``name`` / ``layer`` / ``op`` as indices into
        :attr:`names`."""
        if column not in COLUMNS:
            raise KeyNotFoundError(f"no trace column {column!r}; columns are {COLUMNS}")
        return self._coded(level, replicas)[column]

    def _decoded(self, column: str, level: str | None = None, replicas: bool = False) -> np.ndarray:
        key = (column, level or self._detail.level, replicas)
        arr = self._cache.decoded.get(key)
        if arr is None:
            codes = self.codes(column, level=level, replicas=replicas)
            if column in STRING_COLUMNS:
                table = _TABLES.get(column)
                if table is None:
                    table = np.array(self._templates.names, dtype=str)
                arr = _narrow(table, codes)
            else:
                arr = codes
            arr.flags.writeable = False
            self._cache.decoded[key] = arr
        return arr

    def __len__(self) -> int:
        cached = self._cache.length
        if cached is None:
            cached = self._cache.length = record_count(
                self._templates, self._instances, self._detail.level
            )
        return cached

    def __getitem__(self, column: str) -> np.ndarray:
        """A record column (replica 0 and the host), strings decoded."""
        if column not in COLUMNS:
            raise KeyError(f"no trace column {column!r}; columns are {COLUMNS}")
        return self._decoded(column)

    @property
    def columns(self) -> Mapping[str, np.ndarray]:
        """Column name → read-only array, in :data:`COLUMNS` order (decoded on access)."""
        return _Columns(self)

    @property
    def ipus(self) -> tuple[int, ...]:
        """Sorted indices of every IPU of the run (all replicas; the host excluded)."""
        used = self._counters.ipus
        if not used:
            ipu = self._coded()["ipu"]
            used = tuple(int(i) for i in np.unique(ipu[ipu != HOST]))
        if self._replicas == 1:
            return used
        per = self._per_replica
        return tuple(r * per + i for r in range(self._replicas) for i in used)

    @property
    def end_ps(self) -> int:
        """The end of the run (picoseconds; 0 for an empty trace)."""
        return self._end_ps

    @property
    def start_ps(self) -> int:
        """The earliest start of a kept record (picoseconds; 0 when none is kept)."""
        start = self._coded()["start_ps"]
        return int(start[0]) if len(start) else 0

    def __repr__(self) -> str:
        layout = f", replicas={self._replicas}" if self._replicas > 1 else ""
        return (
            f"Trace({len(self)} records ({self._detail.level}), ipus="
            f"{list(self._counters.ipus)}{layout}, end={self._end_ps / PS_PER_S:.6g} s)"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        return self.fingerprint() == other.fingerprint()

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the content: the kept records (strings by value), the whole-run
        totals, the replica layout, the end and the detail. Equal traces have equal
        fingerprints, however their records were grouped into templates."""
        cached = self._cache.fingerprint
        if cached is not None:
            return cached
        digest = hashlib.sha256(_FINGERPRINT_TAG)
        cols = self._coded()
        names = self._templates.names
        used = np.unique(np.concatenate([cols["name"], cols["layer"], cols["op"]]))
        used_names = sorted(names[int(c)] for c in used)
        rank = np.zeros(max(len(names), 1), dtype=np.int64)
        rank[used] = [used_names.index(names[int(c)]) for c in used] if len(used) else []
        digest.update("\x00".join(used_names).encode("utf-8", "surrogatepass"))  # any str hashes
        for name in COLUMNS:
            arr = cols[name].astype(np.int64)
            if name in ("name", "layer", "op"):
                arr = rank[arr] if len(arr) else arr
            digest.update(f"|{name}:{len(arr)}|".encode())
            digest.update(np.ascontiguousarray(arr).tobytes())
        t = self.totals()
        digest.update(np.array(t.slots, dtype=np.int64).tobytes())
        for arr in (t.duration_ps, t.flops, t.bytes, t.records, self._counters.waiting_ps):
            digest.update(np.ascontiguousarray(arr, dtype=np.int64).tobytes())
        d = self._detail
        meta = (self._end_ps, self._replicas, self._per_replica, d.level, d.kept_executions)
        digest.update(repr(meta + (d.executions, d.kept_steps, d.steps)).encode())
        digest.update(np.ascontiguousarray(self._executions).tobytes())
        self._cache.fingerprint = out = digest.hexdigest()
        return out

    # ------------------------------------------------------------------ views
    def to_dataframe(self, *, replicas: bool = False, level: str | None = None) -> pd.DataFrame:
        """The kept records as a DataFrame, in canonical order (by start, IPU, track).

        Columns: the :data:`COLUMNS` plus ``start_s``, ``end_s`` and ``duration_s`` (float
        seconds).

        Args:
            replicas: every replica's records (copies of replica 0's, IPUs renumbered), not only
                replica 0's and the host's.
            level: ``"full"`` or ``"blocks"`` (default: the trace's own level).
        """
        data: dict[str, Any] = {
            name: self._decoded(name, level, replicas).copy() for name in COLUMNS
        }
        start, end = data["start_ps"], data["end_ps"]
        data["start_s"] = start / PS_PER_S
        data["end_s"] = end / PS_PER_S
        data["duration_s"] = (end - start) / PS_PER_S
        return pd.DataFrame(data)

    def select(
        self,
        ipu: int | Iterable[int] | None = None,
        track: str | Iterable[str] | None = None,
        phase: str | Iterable[str] | None = None,
        *,
        replicas: bool = False,
    ) -> Trace:
        """The kept records matching every given filter (each a value or an iterable of values),
        as a trace of records (replica 0 and the host unless ``replicas``)."""
        cols = self._coded(replicas=replicas)
        mask = np.ones(len(cols["ipu"]), dtype=bool)
        tables = {"track": TRACKS, "phase": TRACE_PHASES}
        for column, wanted in (("ipu", ipu), ("track", track), ("phase", phase)):
            if wanted is None:
                continue
            chosen: list[object] = (
                [wanted] if isinstance(wanted, int | np.integer | str) else list(wanted)
            )
            if column in tables:
                chosen = [tables[column].index(v) for v in chosen if v in tables[column]]
            mask &= np.isin(cols[column], np.asarray(chosen))
        picked = {name: arr[mask] for name, arr in cols.items()}
        from ipusim.trace.building import from_coded_records

        return from_coded_records(picked, self._templates.names)

    def shifted(self, offset_ps: int) -> Trace:
        """This trace's kept records moved later by ``offset_ps`` picoseconds (>= 0)."""
        if not isinstance(offset_ps, int | np.integer) or offset_ps < 0:
            raise TraceError(f"offset_ps must be an integer >= 0; got {offset_ps!r}")
        cols = dict(self._coded())
        cols["start_ps"] = cols["start_ps"] + np.int64(offset_ps)
        cols["end_ps"] = cols["end_ps"] + np.int64(offset_ps)
        from ipusim.trace.building import from_coded_records

        return from_coded_records(cols, self._templates.names)

    def check_ipu_states(self) -> None:
        """Check that no two kept records of one IPU's states overlap in time.

        Zero-duration records are ignored; records that touch (one ends where the next starts)
        are fine.

        Raises:
            TraceError: naming the first two overlapping records.
        """
        cols = self._coded()
        states = np.isin(cols["track"], STATE_CODES)
        keep = (cols["ipu"] != HOST) & (cols["end_ps"] > cols["start_ps"]) & states
        idx = np.flatnonzero(keep)
        if len(idx) < 2:
            return
        ipu, start, end = cols["ipu"][idx], cols["start_ps"][idx], cols["end_ps"][idx]
        order = np.lexsort((end, start, ipu))
        ipu, start, end, idx = ipu[order], start[order], end[order], idx[order]
        clash = (ipu[1:] == ipu[:-1]) & (start[1:] < end[:-1])
        if clash.any():
            k = int(np.flatnonzero(clash)[0])
            a, b = int(idx[k]), int(idx[k + 1])
            raise TraceError(
                f"IPU {int(ipu[k])} is in two states at once: {self._describe(a)} overlaps "
                f"{self._describe(b)}; an IPU's compute/exchange/sync/host-io/link/remote records "
                f"must not overlap"
            )

    def _describe(self, i: int) -> str:
        track, name = self["track"][i], self["name"][i]
        c = self._coded()
        return f"{track} {str(name)!r} [{c['start_ps'][i]}, {c['end_ps'][i]}) ps"

    @property
    def states_checked(self) -> bool:
        """Whether the IPU states are known not to overlap (traces made by the engine)."""
        return self._checked

    def to_chrome_json(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        process_names: Mapping[int, str] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Export to the Chrome Trace Event Format; see :func:`ipusim.trace.to_chrome_json`."""
        from ipusim.trace.chrome import to_chrome_json

        return to_chrome_json(self, path, process_names=process_names, **options)

    # ------------------------------------------------------------------ files
    def to_npz_bytes(self) -> bytes:
        """The ``.npz`` file contents :meth:`save` writes."""
        from ipusim.trace._npz import trace_to_npz

        return trace_to_npz(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace to ``path`` as an ``.npz`` (atomically; no pickles inside).

        Returns:
            The path written.
        """
        from ipusim._files import write_bytes_atomic

        return write_bytes_atomic(path, self.to_npz_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a trace written by :meth:`save` (this format, or the earlier one of string
        columns).

        Raises:
            FileNotFoundError: if there is no file at ``path``.
            TraceError: if the file is not an ipusim trace or is damaged.
        """
        from ipusim.trace._npz import trace_from_npz

        return trace_from_npz(Path(path))


class _Columns(Mapping[str, np.ndarray]):
    """The columns of a trace, decoded on access."""

    def __init__(self, trace: Trace) -> None:
        self._trace = trace

    def __getitem__(self, key: str) -> np.ndarray:
        return self._trace[key]

    def __iter__(self) -> Iterator[str]:
        return iter(COLUMNS)

    def __len__(self) -> int:
        return len(COLUMNS)


def _narrow(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]`` as a unicode array of the narrowest width that holds it."""
    if len(codes) == 0:
        return np.zeros(0, dtype="<U1")
    used = np.unique(codes)
    width = max(1, int(np.char.str_len(table[used]).max()))
    narrowed: np.ndarray = table.astype(f"<U{width}")[codes]
    return narrowed
