"""Counters: the totals of a whole run, kept whatever detail the trace keeps.

The engine counts, per template and per IPU (the host included), how many instances ran and how
long the stretch instances lasted; with the templates that gives every total the reports need
(time per IPU, track and phase, FLOPs, bytes, records, time under a given name) for the whole run,
in arrays of (templates x IPUs), however long the run. ``waiting_ps`` is each IPU's idle time
that overlaps the host's per-execution work, which the bottleneck report attributes to the host
round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ipusim.trace._schema import HOST, STATE_CODES, TRACE_PHASES, TRACKS
from ipusim.trace.templates import TemplateTable

_N_TRACKS = len(TRACKS)
_N_PHASES = len(TRACE_PHASES)


@dataclass(frozen=True, eq=False)
class Counters:
    """Whole-run totals per template and IPU.

    Attributes:
        slots: the IPU index of each column (the host is :data:`~ipusim.trace.HOST`), ascending.
        count: instances of template ``t`` on slot ``s`` (shape templates x slots).
        stretch_ps: summed durations of the stretch instances (same shape).
        waiting_ps: per slot, idle time overlapping the host's per-execution work (picoseconds).
    """

    slots: tuple[int, ...]
    count: np.ndarray
    stretch_ps: np.ndarray
    waiting_ps: np.ndarray

    def slot(self, ipu: int) -> int:
        """Column of ``ipu`` (-1 when absent)."""
        try:
            return self.slots.index(int(ipu))
        except ValueError:
            return -1

    @property
    def ipus(self) -> tuple[int, ...]:
        """IPUs (not the host) that ran at least one instance."""
        used = (self.count.sum(axis=0) > 0) if self.count.size else np.zeros(len(self.slots), bool)
        return tuple(i for i, u in zip(self.slots, used.tolist()) if i != HOST and u)

    def same_as(self, other: Counters) -> bool:
        return (
            self.slots == other.slots
            and np.array_equal(self.count, other.count)
            and np.array_equal(self.stretch_ps, other.stretch_ps)
            and np.array_equal(self.waiting_ps, other.waiting_ps)
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "slots": np.array(self.slots, dtype=np.int64),
            "count": self.count,
            "stretch_ps": self.stretch_ps,
            "waiting_ps": self.waiting_ps,
        }

    @classmethod
    def empty(cls, templates: int, slots: Sequence[int]) -> Counters:
        shape = (templates, len(slots))
        return cls(
            tuple(int(s) for s in slots),
            np.zeros(shape, dtype=np.int64),
            np.zeros(shape, dtype=np.int64),
            np.zeros(len(slots), dtype=np.int64),
        )


@dataclass(frozen=True)
class Totals:
    """Whole-run totals by slot, track and phase (arrays of shape slots x tracks x phases).

    Attributes:
        slots: IPU index of each row (host included).
        duration_ps / flops / bytes / records: summed over every record of the run.
    """

    slots: tuple[int, ...]
    duration_ps: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    records: np.ndarray

    def state_ps(self) -> np.ndarray:
        """Per slot, time in each of :data:`~ipusim.trace.IPU_STATE_TRACKS` (slots x states)."""
        states: np.ndarray = self.duration_ps.sum(axis=2)[:, STATE_CODES]
        return states

    def busy_ps(self) -> np.ndarray:
        """Per slot, time in any state track."""
        busy: np.ndarray = self.state_ps().sum(axis=1)
        return busy


def _per_template(templates: TemplateTable) -> tuple[np.ndarray, ...]:
    """Per template and (track, phase) cell: fixed durations, FLOPs, bytes, records, and which
    cell a stretch template's instance time goes to."""
    n = len(templates)
    cells = _N_TRACKS * _N_PHASES
    rec = templates.records
    owner = np.repeat(np.arange(n), templates.sizes)
    cell = rec["track"].astype(np.int64) * _N_PHASES + rec["phase"].astype(np.int64)
    fixed = ~templates.stretch[owner] if n else np.zeros(0, bool)
    dur = np.zeros((n, cells), dtype=np.int64)
    flops = np.zeros((n, cells), dtype=np.int64)
    nbytes = np.zeros((n, cells), dtype=np.int64)
    records = np.zeros((n, cells), dtype=np.int64)
    stretch_cell = np.zeros((n, cells), dtype=np.int64)
    np.add.at(dur, (owner[fixed], cell[fixed]), (rec["rel_end"] - rec["rel_start"])[fixed])
    np.add.at(flops, (owner, cell), rec["flops"])
    np.add.at(nbytes, (owner, cell), rec["bytes"])
    np.add.at(records, (owner, cell), 1)
    np.add.at(stretch_cell, (owner[~fixed], cell[~fixed]), 1)
    return dur, flops, nbytes, records, stretch_cell


def totals(templates: TemplateTable, counters: Counters) -> Totals:
    """Every record's duration, FLOPs, bytes and count, summed by slot, track and phase."""
    dur, flops, nbytes, records, stretch_cell = _per_template(templates)
    count = counters.count
    shape = (len(counters.slots), _N_TRACKS, _N_PHASES)
    if count.size == 0:
        zero = np.zeros(shape, dtype=np.int64)
        return Totals(counters.slots, zero, zero.copy(), zero.copy(), zero.copy())
    duration = count.T @ dur + counters.stretch_ps.T @ stretch_cell
    return Totals(
        counters.slots,
        duration.reshape(shape),
        (count.T @ flops).reshape(shape),
        (count.T @ nbytes).reshape(shape),
        (count.T @ records).reshape(shape),
    )


def time_named(templates: TemplateTable, counters: Counters, names: Sequence[str]) -> np.ndarray:
    """Per slot, the summed duration of every record whose name is one of ``names``."""
    codes = [c for c in (templates.name_code(n) for n in names) if c >= 0]
    out = np.zeros(len(counters.slots), dtype=np.int64)
    if not codes or counters.count.size == 0:
        return out
    rec = templates.records
    owner = np.repeat(np.arange(len(templates)), templates.sizes)
    match = np.isin(rec["name"], codes)
    fixed_ps = np.zeros(len(templates), dtype=np.int64)
    keep = match & ~templates.stretch[owner]
    np.add.at(fixed_ps, owner[keep], (rec["rel_end"] - rec["rel_start"])[keep])
    stretch = np.zeros(len(templates), dtype=np.int64)
    np.add.at(stretch, owner[match & templates.stretch[owner]], 1)
    return counters.count.T @ fixed_ps + counters.stretch_ps.T @ stretch


def count_named(templates: TemplateTable, counters: Counters, name: str) -> np.ndarray:
    """Per slot, how many records are named ``name``."""
    code = templates.name_code(name)
    out = np.zeros(len(counters.slots), dtype=np.int64)
    if code < 0 or counters.count.size == 0:
        return out
    owner = np.repeat(np.arange(len(templates)), templates.sizes)
    per_template = np.zeros(len(templates), dtype=np.int64)
    np.add.at(per_template, owner[templates.records["name"] == code], 1)
    return counters.count.T @ per_template
