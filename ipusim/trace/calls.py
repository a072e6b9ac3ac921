"""Repeated calls of one compiled program as one report: :class:`CallSeries`.

A program that calls the same step function many times (``strategy.run`` in a Python loop, or
``fit`` called again on the same model) makes one simulated run per call. A :class:`CallSeries`
joins them, in call order, into one :class:`~ipusim.trace.Report`:

- the calls are laid end to end on one timeline (call ``k`` starts where call ``k - 1`` ended;
  the host Python between calls is not simulated, as the simulated clock of
  :mod:`ipusim.session.clock` does not advance there either);
- the trace keeps the records of the first calls (each call's own kept records) while their
  total stays within the record budget, and counters for every call (the whole run's figures
  stay exact, as for one long run at the ``auto`` detail);
- steps and samples are the sums over the calls; :meth:`CallSeries.table` has one row per call.

Adding a call costs a few array operations, so joining 10,000 calls stays cheap; nothing is built
until :meth:`CallSeries.report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ipusim.errors import ConfigurationError
from ipusim.trace._schema import MAX_TIME_PS
from ipusim.trace.counters import Counters
from ipusim.trace.detail import TraceDetail
from ipusim.trace.expand import INSTANCE_FIELDS
from ipusim.trace.records import Trace
from ipusim.trace.report import Report

__all__ = ["CALL_COLUMNS", "CallSeries"]

#: Columns of :meth:`CallSeries.table` (times in simulated seconds).
CALL_COLUMNS = ("call", "start_s", "end_s", "seconds", "executions", "steps", "samples")


@dataclass
class CallSeries:
    """The calls of one compiled program, joined as they arrive.

    Args:
        first: the report of the first call.
        record_budget: records (at the calls' detail) the joined trace keeps at most; the first
            call's records are always kept (its own trace is already bounded by the engine).
    """

    first: Report
    record_budget: int
    _rows: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    _kept: list[dict[str, np.ndarray]] = field(default_factory=list)
    _ends: list[np.ndarray] = field(default_factory=list)
    _records: int = 0
    _kept_records: int = 0
    _keeping: bool = True
    _kept_executions: int = 0
    _kept_steps: int = 0
    _count: np.ndarray | None = None
    _stretch: np.ndarray | None = None
    _waiting: np.ndarray | None = None
    _end_ps: int = 0
    _steps: int = 0
    _executions: int = 0

    def __post_init__(self) -> None:
        self.add(self.first)

    def accepts(self, report: Report) -> bool:
        """Whether ``report`` is a call of the same program: the same templates (names,
        durations, FLOPs and bytes: the same shapes on the same system) on the same IPUs."""
        mine, other = self.first.trace, report.trace
        if not (
            report.kind == self.first.kind
            and len(other.templates) == len(mine.templates)
            and other.counters.slots == mine.counters.slots
            and other.replicas == mine.replicas
            and other.ipus_per_replica == mine.ipus_per_replica
            and other.names == mine.names
        ):
            return False
        a, b = mine.templates, other.templates
        return (
            np.array_equal(a.duration_ps, b.duration_ps)
            and np.array_equal(a.records["flops"], b.records["flops"])
            and np.array_equal(a.records["bytes"], b.records["bytes"])
        )

    def add(self, report: Report) -> None:
        """Append one call (its trace starts at 0; it is moved to the end of the series)."""
        trace = report.trace
        offset, step_offset = self._end_ps, self._steps
        if offset + report.end_ps > MAX_TIME_PS:  # checked before anything is added
            raise ConfigurationError(
                f"call {len(self._rows) + 1} of this program ends {(offset + report.end_ps) / 1e12:.4g}"
                f" s into the series of its calls, beyond the longest run ipusim simulates "
                f"({MAX_TIME_PS / 8.64e16:.1f} days); simulate fewer calls or steps"
            )
        counters = trace.counters
        if self._count is None:
            self._count = counters.count.copy()
            self._stretch = counters.stretch_ps.copy()
            self._waiting = counters.waiting_ps.copy()
        else:
            self._count += counters.count
            self._stretch += counters.stretch_ps
            self._waiting += counters.waiting_ps
        kept = len(trace)
        if self._keeping and (not self._rows or self._kept_records + kept <= self.record_budget):
            shifted = dict(trace.instances)
            for name in ("start_ps", "end_ps"):
                shifted[name] = shifted[name] + np.int64(offset)
            shifted["step"] = shifted["step"] + np.int64(step_offset)
            self._kept.append(shifted)
            self._kept_records += kept
            detail = trace.detail
            self._kept_executions += detail.kept_executions
            self._kept_steps += detail.kept_steps
            self._keeping = detail.complete
        else:
            self._keeping = False
        self._ends.append(np.asarray(trace.execution_end_ps, dtype=np.int64) + np.int64(offset))
        end = report.end_ps
        executions = int(report.extra.get("executions", 1) or 1)
        self._rows.append((offset, offset + end, executions, report.steps, report.samples))
        self._records += trace.detail.records
        self._end_ps = offset + end
        self._steps += report.steps
        self._executions += executions

    def __len__(self) -> int:
        return len(self._rows)

    def table(self) -> pd.DataFrame:
        """One row per call: its place on the joined timeline, executions, steps and samples."""
        rows = np.array(self._rows, dtype=np.int64).reshape(-1, 5)
        start, end = rows[:, 0] / 1e12, rows[:, 1] / 1e12
        return pd.DataFrame(
            {
                "call": np.arange(1, len(rows) + 1),
                "start_s": start,
                "end_s": end,
                "seconds": end - start,
                "executions": rows[:, 2],
                "steps": rows[:, 3],
                "samples": rows[:, 4],
            },
            columns=list(CALL_COLUMNS),
        )

    def report(self) -> Report:
        """The joined report (the first call's report when there was one call)."""
        if len(self._rows) == 1:
            return self.first
        first = self.first.trace
        instances = {
            name: np.concatenate([part[name] for part in self._kept]) for name in INSTANCE_FIELDS
        }
        level = first.detail.level if self._kept_executions else "summary"
        detail = TraceDetail(
            level,
            self._kept_executions,
            self._executions,
            self._kept_steps,
            self._steps,
            self._records,
        )
        assert self._count is not None and self._stretch is not None and self._waiting is not None
        trace = Trace.build(
            first.templates,
            instances,
            Counters(first.counters.slots, self._count, self._stretch, self._waiting),
            self._end_ps,
            replicas=first.replicas,
            ipus_per_replica=first.ipus_per_replica,
            detail=detail,
            execution_end_ps=np.concatenate(self._ends),
        )
        extra: dict[str, object] = dict(self.first.extra)
        extra["executions"] = self._executions
        extra["calls"] = len(self._rows)
        samples = sum(row[4] for row in self._rows)
        return Report(
            trace=trace,
            samples=samples,
            steps=self._steps,
            seconds=self._end_ps / 1e12,
            memory_plans=self.first.memory_plans,
            peak_flops_per_s=self.first.peak_flops_per_s,
            system_name=self.first.system_name,
            kind=self.first.kind,
            extra=extra,
        )
