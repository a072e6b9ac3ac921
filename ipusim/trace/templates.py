"""Templates: the records one activity stands for, with every string as an integer code.

A simulated run repeats a few activities many times: a stage's forward block, an all-reduce, an
infeed copy. Each distinct activity is a *template*: its records (track, name, layer, op, phase,
start and end relative to the activity's start, bytes, FLOPs), every string an index into one
table of names. The engine appends *instances* (template, IPU, start, end, step, micro-batch) and
never builds a record in Python; records are materialised from instances by vectorised copies
when a consumer asks for them.

Two kinds of template:

- **fixed**: a block of supersteps (up to three records each: compute, exchange, sync) or one
  transfer; every instance lasts the template's ``duration_ps``;
- **stretch**: one record spanning its instance, however long (an infeed stall, a record added
  by hand).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ipusim.errors import ConfigurationError, TraceError
from ipusim.trace._schema import _TRACK_INDEX, MAX_TIME_PS, TRACE_PHASES, TRACKS

_PHASE_CODE = {p: i for i, p in enumerate(TRACE_PHASES)}

#: Record fields of a template, in storage order.
RECORD_FIELDS = ("track", "name", "layer", "op", "phase", "rel_start", "rel_end", "bytes", "flops")


@dataclass(frozen=True, eq=False)
class TemplateTable:
    """Every template of a run and the table of names its records use.

    Attributes:
        names: code -> string (code 0 is ``""``); names of records, layers and ops share it.
        ptr: template ``t``'s records are rows ``ptr[t]:ptr[t + 1]`` of the record arrays.
        stretch: whether template ``t`` is one record spanning its instance.
        duration_ps: how long an instance of a fixed template lasts (0 for stretch templates).
        label: name code of the one record a template becomes at ``blocks`` detail.
        records: the record arrays (:data:`RECORD_FIELDS`): ``track`` (index in
            :data:`~ipusim.trace.TRACKS`), ``name`` / ``layer`` / ``op`` (name codes), ``phase``
            (index in :data:`~ipusim.trace.TRACE_PHASES`), ``rel_start`` / ``rel_end``
            (picoseconds from the instance's start; ``rel_end`` -1 means the instance's end),
            ``bytes``, ``flops``.
    """

    names: tuple[str, ...]
    ptr: np.ndarray
    stretch: np.ndarray
    duration_ps: np.ndarray
    label: np.ndarray
    records: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.stretch)

    @property
    def sizes(self) -> np.ndarray:
        """Records per template."""
        return np.diff(self.ptr)

    def name_code(self, name: str) -> int:
        """The code of ``name`` (-1 when the table does not hold it)."""
        try:
            return self.names.index(name)
        except ValueError:
            return -1

    def same_as(self, other: TemplateTable) -> bool:
        if self is other:
            return True
        if self.names != other.names or len(self) != len(other):
            return False
        pairs = [(self.ptr, other.ptr), (self.stretch, other.stretch)]
        pairs += [(self.duration_ps, other.duration_ps), (self.label, other.label)]
        pairs += [(self.records[f], other.records[f]) for f in RECORD_FIELDS]
        return all(np.array_equal(a, b) for a, b in pairs)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array of the table (for files and fingerprints), names as one string array."""
        out = {
            "ptr": self.ptr,
            "stretch": self.stretch.astype(np.int8),
            "duration_ps": self.duration_ps,
            "label": self.label,
        }
        out.update({f"rec_{f}": self.records[f] for f in RECORD_FIELDS})
        out["names"] = np.array(self.names, dtype=str) if self.names else np.zeros(0, "<U1")
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TemplateTable:
        """Rebuild a table written by :meth:`arrays` (checks its consistency)."""
        try:
            names = tuple(str(n) for n in arrays["names"].tolist())
            ptr = np.asarray(arrays["ptr"], dtype=np.int64)
            table = cls(
                names,
                ptr,
                np.asarray(arrays["stretch"]).astype(bool),
                np.asarray(arrays["duration_ps"], dtype=np.int64),
                np.asarray(arrays["label"], dtype=np.int32),
                {
                    f: np.asarray(arrays[f"rec_{f}"]).astype(_DTYPES[f], copy=False)
                    for f in RECORD_FIELDS
                },
            )
        except KeyError as exc:
            raise TraceError(f"the trace's template table lacks {exc.args[0]!r}") from None
        table.check()
        return table

    def check(self) -> None:
        """Raise :class:`TraceError` when the table is inconsistent."""
        n = len(self.stretch)
        r = len(self.records["track"])
        ok = (
            len(self.ptr) == n + 1
            and (n == 0 or (self.ptr[0] == 0 and self.ptr[-1] == r))
            and bool(np.all(np.diff(self.ptr) >= 0))
            and len(self.duration_ps) == n
            and len(self.label) == n
            and all(len(self.records[f]) == r for f in RECORD_FIELDS)
        )
        if ok and r:
            codes = np.concatenate([self.records[f] for f in ("name", "layer", "op")])
            ok = (
                int(codes.min()) >= 0
                and int(codes.max()) < len(self.names)
                and int(self.records["track"].max()) < len(TRACKS)
                and int(self.records["phase"].max()) < len(TRACE_PHASES)
                and int(self.records["track"].min()) >= 0
                and int(self.records["phase"].min()) >= 0
            )
        if not ok:
            raise TraceError("the trace's template table is inconsistent (a damaged file?)")


_DTYPES = {
    "track": np.int8,
    "name": np.int32,
    "layer": np.int32,
    "op": np.int32,
    "phase": np.int8,
    "rel_start": np.int64,
    "rel_end": np.int64,
    "bytes": np.int64,
    "flops": np.int64,
}


class TemplateBuilder:
    """Collects templates (deduplicated by content) and interns their strings."""

    def __init__(self) -> None:
        self._names: dict[str, int] = {"": 0}
        self._rows: list[tuple[int, ...]] = []
        self._ptr: list[int] = [0]
        self._stretch: list[bool] = []
        self._duration: list[int] = []
        self._label: list[int] = []
        self._index: dict[tuple[tuple[tuple[int, ...], ...], bool, int, int], int] = {}

    def __len__(self) -> int:
        return len(self._stretch)

    def intern(self, text: str) -> int:
        """The code of ``text`` (added to the table when new)."""
        code = self._names.get(text)
        if code is None:
            code = self._names[text] = len(self._names)
        return code

    def template(
        self,
        records: Sequence[tuple[str, str, str, str, str, int, int, int, int]],
        *,
        stretch: bool = False,
        label: str = "",
    ) -> int:
        """The id of the template of ``records`` (made when new).

        Args:
            records: ``(track, name, layer, op, phase, rel_start, rel_end, bytes, flops)`` per
                record, relative times in picoseconds, in time order.
            stretch: one record spanning each instance (``rel_end`` ignored).
            label: the name of the template's one record at ``blocks`` detail (default: the
                first record's name).
        """
        if stretch and len(records) != 1:
            raise TraceError("a stretch template holds exactly one record")
        rows = []
        for track, name, layer, op, phase, start, end, num_bytes, flops in records:
            if max(int(start), int(end)) > MAX_TIME_PS:
                raise ConfigurationError(
                    f"the activity {name!r} lasts {int(end) / 1e12:.4g} s, beyond the longest "
                    f"run ipusim simulates ({MAX_TIME_PS / 8.64e16:.1f} days): a hardware figure "
                    "(clock, bandwidth) or a host setting is implausible"
                )
            if track not in _TRACK_INDEX:
                raise TraceError(f"track must be one of {TRACKS}; got {track!r}")
            if phase not in _PHASE_CODE:
                raise TraceError(f"phase must be one of {TRACE_PHASES}; got {phase!r}")
            rows.append(
                (
                    _TRACK_INDEX[track],
                    self.intern(name),
                    self.intern(layer),
                    self.intern(op),
                    _PHASE_CODE[phase],
                    int(start),
                    -1 if stretch else int(end),
                    int(num_bytes),
                    int(flops),
                )
            )
        label_code = self.intern(label or (records[0][1] if records else ""))
        duration = 0 if stretch or not rows else max(r[6] for r in rows)
        key = (tuple(rows), stretch, label_code, duration)
        found = self._index.get(key)
        if found is not None:
            return found
        tid = len(self._stretch)
        self._index[key] = tid
        self._rows.extend(rows)
        self._ptr.append(len(self._rows))
        self._stretch.append(stretch)
        self._duration.append(duration)
        self._label.append(label_code)
        return tid

    def single(
        self,
        track: str,
        name: str,
        phase: str,
        duration_ps: int | None,
        *,
        num_bytes: int = 0,
        flops: int = 0,
        layer: str = "",
        op: str = "",
    ) -> int:
        """A template of one record: fixed (``duration_ps``) or stretch (``None``)."""
        end = 0 if duration_ps is None else int(duration_ps)
        record = (track, name, layer, op, phase, 0, end, num_bytes, flops)
        return self.template([record], stretch=duration_ps is None)

    def build(self) -> TemplateTable:
        """The table of everything added so far."""
        names = tuple(sorted(self._names, key=self._names.__getitem__))
        rows = np.array(self._rows, dtype=np.int64).reshape(-1, len(RECORD_FIELDS))
        records = {
            f: np.ascontiguousarray(rows[:, k]).astype(_DTYPES[f])
            for k, f in enumerate(RECORD_FIELDS)
        }
        return TemplateTable(
            names=names,
            ptr=np.array(self._ptr, dtype=np.int64),
            stretch=np.array(self._stretch, dtype=bool),
            duration_ps=np.array(self._duration, dtype=np.int64),
            label=np.array(self._label, dtype=np.int32),
            records=records,
        )
