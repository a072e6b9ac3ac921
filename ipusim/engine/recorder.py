"""What the engine keeps of a run: counters for every instance, instances for the kept steps.

:func:`keep_plan` decides, before the run and the same way for both backends, which executions
keep their instances: the trace's ``detail`` (``"auto"``, ``"full"``, ``"blocks"``,
``"summary"``) and, for ``"auto"``, a budget of records: full detail for the first executions
while the records they make (at most) fit the budget, then one record per block while the
instances fit, counters for the rest. An instance is kept when its step belongs to a kept
execution (host work is numbered with the step it serves).

:class:`InstanceRecorder` is the SimPy backend's sink: one call per instance (a block of
supersteps, a transfer, a stall), no record built, no validation.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from ipusim.engine.options import RunPlan
from ipusim.engine.tables import OP_INFEED, OP_OUTFEED, RunTables, TimeStep
from ipusim.errors import ConfigurationError
from ipusim.trace import HOST, TraceDetail
from ipusim.trace.counters import Counters
from ipusim.trace.expand import INSTANCE_FIELDS
from ipusim.trace.intervals import complement, overlap, union

#: ``IPUConfig.ipusim.trace_detail`` values.
DETAILS = ("auto", "full", "blocks", "summary")

#: Records the ``"auto"`` detail keeps at most (full detail, replica 0 and the host).
DEFAULT_RECORD_BUDGET = 1_000_000


@dataclass(frozen=True)
class KeepPlan:
    """Which executions keep their instances, and at which level.

    Attributes:
        level: ``"full"``, ``"blocks"`` or ``"summary"``.
        executions: executions kept, from the first.
        steps: the steps of those executions (instances of steps below it are kept).
        records: records of the whole run at full detail (an upper bound when the host can
            make the IPUs wait: every possible stall counted).
    """

    level: str
    executions: int
    steps: int
    records: int


def execution_sizes(tables: RunTables, plan: RunPlan) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds of the records (full detail) and instances of each execution."""
    sizes = tables.templates.sizes

    def counts(step: TimeStep) -> tuple[int, int]:
        records = instances = 0
        for _, ops in step.work:
            for op in ops:
                if op.kind == OP_INFEED or op.kind == OP_OUTFEED:  # a stall and a copy
                    records, instances = records + 2, instances + 2
                else:
                    records += int(sizes[op.template])
                    instances += 1
        n_copies = len(step.copies) + (len(tables.ipus) if tables.sync_template >= 0 else 0)
        return records + n_copies, instances + n_copies

    per_step = [counts(step) for step in tables.steps]
    rec_prefix = np.concatenate(([0], np.cumsum([r for r, _ in per_step])))
    inst_prefix = np.concatenate(([0], np.cumsum([i for _, i in per_step])))
    update = counts(tables.update) if tables.update is not None else (0, 0)
    host_per_step = 4  # infeed copy, dataset, outfeed drain, callback
    records, instances = [], []
    first = 0
    for n in plan.executions:
        r = i = 3 + host_per_step * n  # overhead, read-back, callbacks
        for _, lo, hi in tables.pieces(first, n):
            steps = tables.step_range(lo, hi)
            r += int(rec_prefix[steps.stop] - rec_prefix[steps.start])
            i += int(inst_prefix[steps.stop] - inst_prefix[steps.start])
            if hi == tables.micro_batches:
                r, i = r + update[0], i + update[1]
        records.append(r)
        instances.append(i)
        first += n
    return np.array(records, dtype=np.int64), np.array(instances, dtype=np.int64)


def keep_plan(tables: RunTables, plan: RunPlan, detail: str, budget: int) -> KeepPlan:
    """What the trace of ``plan`` keeps (see the module docstring).

    Raises:
        ValueError: an unknown ``detail`` or a budget below 0.
    """
    if detail not in DETAILS:
        raise ConfigurationError(f"trace detail must be one of {DETAILS}, received {detail!r}")
    if budget < 0:
        raise ConfigurationError(f"the trace's record budget must be >= 0, received {budget}")
    records, instances = execution_sizes(tables, plan)
    total = int(records.sum())
    steps = np.concatenate(([0], np.cumsum(plan.executions)))
    everything = len(plan.executions)
    if detail in ("full", "blocks"):
        return KeepPlan(detail, everything, int(steps[-1]), total)
    if detail == "summary":
        return KeepPlan("summary", 0, 0, total)
    kept = int(np.searchsorted(np.cumsum(records), budget, side="right"))
    if kept:
        return KeepPlan("full", kept, int(steps[kept]), total)
    kept = int(np.searchsorted(np.cumsum(instances), budget, side="right"))
    if kept:
        return KeepPlan("blocks", kept, int(steps[kept]), total)
    return KeepPlan("summary", 0, 0, total)


def trace_detail(keep: KeepPlan, plan: RunPlan) -> TraceDetail:
    return TraceDetail(
        keep.level,
        keep.executions,
        len(plan.executions),
        keep.steps,
        plan.total_steps,
        keep.records,
    )


class InstanceRecorder:
    """The SimPy backend's sink: counts every instance, keeps those of the kept steps.

    Args:
        tables: the run's tables (templates and slots).
        keep_steps: instances of steps below this are kept.
        drain_overlap: the host's outfeed drains can overlap the IPUs' work, so each IPU's idle
            time under them is measured execution by execution.
    """

    def __init__(self, tables: RunTables, keep_steps: int, drain_overlap: bool) -> None:
        self.tables = tables
        self.slots = tables.slots
        self.slot_of = {ipu: k for k, ipu in enumerate(self.slots)}
        self._n_slots = len(self.slots)
        size = len(tables.templates) * self._n_slots
        self._count = [0] * size
        self._stretch = [0] * size
        self._stretch_flag = tables.templates.stretch.tolist()
        self.keep_steps = keep_steps
        # Growable int64 buffers, one per instance field (no Python object per instance).
        self._kept = tuple(array("q") for _ in INSTANCE_FIELDS)
        self._append = tuple(column.append for column in self._kept)
        self.waiting = [0] * self._n_slots
        self._drain_overlap = drain_overlap
        self._window: list[tuple[int, int, int]] = []  # (slot, start, end) of this execution
        self._drains: list[tuple[int, int]] = []
        self._drain = tables.host.drain

    def add(self, template: int, ipu: int, start: int, end: int, step: int, mb: int) -> None:
        """One instance of ``template`` on ``ipu`` from ``start`` to ``end`` (picoseconds)."""
        slot = self.slot_of[ipu]
        k = template * self._n_slots + slot
        self._count[k] += 1
        if self._stretch_flag[template]:
            self._stretch[k] += end - start
        if step < self.keep_steps:
            a_template, a_ipu, a_start, a_end, a_step, a_mb = self._append
            a_template(template)
            a_ipu(ipu)
            a_start(start)
            a_end(end)
            a_step(step)
            a_mb(mb)
        if self._drain_overlap:
            if ipu != HOST:
                self._window.append((slot, start, end))
            elif template == self._drain:
                self._drains.append((start, end))

    def host_round_trip(self, duration_ps: int) -> None:
        """The host's per-execution work (overhead, read-back, callbacks) of ``duration_ps``:
        every IPU is idle then, waiting for the host."""
        for k, ipu in enumerate(self.slots):
            if ipu != HOST:
                self.waiting[k] += duration_ps

    def execution_done(self, start_ps: int, end_ps: int) -> None:
        """Close the execution that ran from ``start_ps`` to ``end_ps``: add each IPU's idle
        time under the outfeed drains of the execution to its waiting time."""
        if not self._drain_overlap:
            return
        if self._drains:
            drains = np.array(self._drains, dtype=np.int64)
            work = union(drains[:, 0], drains[:, 1])
            window = np.array(self._window, dtype=np.int64).reshape(-1, 3)
            for k, ipu in enumerate(self.slots):
                if ipu == HOST:
                    continue
                mine = window[window[:, 0] == k]
                idle = complement(union(mine[:, 1], mine[:, 2]), start_ps, end_ps)
                self.waiting[k] += overlap(idle, work)
        self._window.clear()
        self._drains.clear()

    def counters(self) -> Counters:
        shape = (len(self.tables.templates), self._n_slots)
        return Counters(
            self.slots,
            np.array(self._count, dtype=np.int64).reshape(shape),
            np.array(self._stretch, dtype=np.int64).reshape(shape),
            np.array(self.waiting, dtype=np.int64),
        )

    def instances(self) -> dict[str, np.ndarray]:
        return {
            f: np.array(column, dtype=np.int64) for f, column in zip(INSTANCE_FIELDS, self._kept)
        }
