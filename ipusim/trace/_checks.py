"""Plausibility checks of a trace read from a file, before anything uses it.

A trace file holds integer arrays that the reports combine without further checks (a negative
counter would give a negative utilisation, a record ending before it starts a negative duration,
a count large enough overflows int64 sums silently). A trace made by the engine satisfies every
rule below; a file that does not was damaged or edited, and :func:`check_trace` says which field
breaks which rule.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ipusim.errors import TraceFileError
from ipusim.trace._schema import HOST, MAX_TIME_PS, STATE_CODES
from ipusim.trace.counters import Counters
from ipusim.trace.detail import TraceDetail
from ipusim.trace.templates import TemplateTable

__all__ = ["MAX_REPLICA_IPUS", "MAX_TIME_PS", "check_meta", "check_trace"]

#: Replicas, or IPUs per replica, a trace may name at most. E: 64x the largest IPU-POD Graphcore
#: built (IPU-POD1024, https://www.graphcore.ai/products/ipu-pod); larger is a damaged file, and
#: a replicated view would allocate records for every replica.
MAX_REPLICA_IPUS = 65_536


_FIX = "the file is damaged or was edited; save the trace again (Trace.save / Report.save)"


def _fail(path: Path, field: str, rule: str) -> TraceFileError:
    return TraceFileError(f"{str(path)!r}: {field}: {rule}; {_FIX}")


def _int(path: Path, field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(path, field, f"expected an integer in [{low}, {high}], got {value!r}")
    return value


def check_meta(path: Path, meta: object) -> tuple[int, int, int, TraceDetail, bool]:
    """The checked scalars of a version 2 file: end, replicas, IPUs per replica, detail, and
    whether the IPU states were checked."""
    if not isinstance(meta, dict):
        raise _fail(path, "__meta__", f"expected a JSON object, got {type(meta).__name__}")
    end = _int(path, "__meta__.end_ps", meta.get("end_ps"), 0, MAX_TIME_PS)
    replicas = _int(path, "__meta__.replicas", meta.get("replicas"), 1, MAX_REPLICA_IPUS)
    per = _int(path, "__meta__.ipus_per_replica", meta.get("ipus_per_replica"), 1, MAX_REPLICA_IPUS)
    checked = meta.get("states_checked")
    if not isinstance(checked, bool):
        raise _fail(path, "__meta__.states_checked", f"expected true or false, got {checked!r}")
    raw = meta.get("detail")
    if not isinstance(raw, dict) or not isinstance(raw.get("level"), str):
        raise _fail(path, "__meta__.detail", f"expected an object with a level, got {raw!r}")
    counts = {
        key: _int(path, f"__meta__.detail.{key}", raw.get(key), 0, MAX_TIME_PS)
        for key in ("kept_executions", "executions", "kept_steps", "steps", "records")
    }
    if counts["kept_executions"] > counts["executions"] or counts["kept_steps"] > counts["steps"]:
        raise _fail(path, "__meta__.detail", f"keeps more than the run had: {raw!r}")
    try:
        detail = TraceDetail(raw["level"], **counts)
    except ValueError as exc:
        raise _fail(path, "__meta__.detail.level", str(exc)) from None
    return end, replicas, per, detail, checked


def _check_templates(path: Path, templates: TemplateTable) -> None:
    rec = templates.records
    names = len(templates.names)
    if len(templates) and (templates.label.min() < 0 or templates.label.max() >= names):
        raise _fail(path, "t_label", f"name codes must lie in [0, {names})")
    if (templates.duration_ps < 0).any() or (templates.duration_ps > MAX_TIME_PS).any():
        raise _fail(path, "t_duration_ps", f"durations must lie in [0, {MAX_TIME_PS}] ps")
    for field in ("bytes", "flops"):
        if (rec[field] < 0).any():
            raise _fail(path, f"t_rec_{field}", "counts of bytes and FLOPs must be >= 0")
    owner = np.repeat(np.arange(len(templates)), templates.sizes)
    stretch = templates.stretch[owner] if len(owner) else np.zeros(0, bool)
    if (templates.stretch & (templates.sizes != 1)).any() or (rec["rel_end"][stretch] != -1).any():
        raise _fail(path, "t_stretch", "a stretch template holds one record ending with it")
    start, end = rec["rel_start"][~stretch], rec["rel_end"][~stretch]
    limit = templates.duration_ps[owner[~stretch]]
    if (rec["rel_start"] < 0).any() or (end < start).any() or (end > limit).any():
        raise _fail(
            path,
            "t_rec_rel_start / t_rec_rel_end",
            "every record must start at or after its block's start and end at or after its "
            "start, within the block's duration",
        )


def _check_instances(
    path: Path, templates: TemplateTable, inst: dict[str, np.ndarray], end_ps: int, per: int
) -> None:
    tid, ipu = inst["template"].astype(np.int64), inst["ipu"].astype(np.int64)
    start, end = inst["start_ps"], inst["end_ps"]
    if ((ipu < HOST) | (ipu >= per)).any():
        raise _fail(
            path, "i_ipu", f"IPU indices must lie in [{HOST}, {per}) (replica 0 and the host)"
        )
    if (start < 0).any() or (end < start).any() or (end > end_ps).any():
        raise _fail(
            path,
            "i_start_ps / i_end_ps",
            f"every record must start at or after 0, end at or after its start, and end by the "
            f"end of the run ({end_ps} ps)",
        )
    fixed = ~templates.stretch[tid] if len(tid) else np.zeros(0, bool)
    if ((end - start)[fixed] != templates.duration_ps[tid[fixed]]).any():
        raise _fail(path, "i_end_ps", "a block's instance must last its template's duration_ps")
    for field in ("step", "micro_batch"):
        if (inst[field] < -1).any():
            raise _fail(path, f"i_{field}", "indices must be >= 0 (or -1 for none)")
    if len(tid) > 1 and (np.diff(start) < 0).any():  # every trace keeps them by start
        raise _fail(path, "i_start_ps", "instances must be in order of their start")


def _check_counters(
    path: Path,
    templates: TemplateTable,
    counters: Counters,
    inst: dict[str, np.ndarray],
    end_ps: int,
    per: int,
) -> None:
    slots = np.array(counters.slots, dtype=np.int64)
    if len(slots) and ((np.diff(slots) <= 0).any() or slots[0] < HOST or slots[-1] >= per):
        raise _fail(path, "c_slots", f"IPU indices must be ascending and lie in [{HOST}, {per})")
    for field in ("count", "stretch_ps", "waiting_ps"):
        if (getattr(counters, field) < 0).any():
            raise _fail(path, f"c_{field}", "counters must be >= 0")
    if (counters.waiting_ps > end_ps).any():
        raise _fail(path, "c_waiting_ps", f"idle time cannot exceed the run ({end_ps} ps)")
    if len(inst["template"]):
        kept = np.zeros(counters.count.shape, dtype=np.int64)
        column = np.searchsorted(slots, inst["ipu"].astype(np.int64))
        column = np.minimum(column, max(len(slots) - 1, 0))
        if len(slots) == 0 or (slots[column] != inst["ipu"]).any():
            raise _fail(path, "c_slots", "every IPU with records needs a counter column")
        np.add.at(kept, (inst["template"].astype(np.int64), column), 1)
        if (counters.count < kept).any():
            raise _fail(path, "c_count", "counts are below the records the file keeps")


def _check_busy(path: Path, templates: TemplateTable, counters: Counters, end_ps: int) -> None:
    """An IPU is in one state at a time, so its state time fits in the run (floats: no wrap)."""
    if counters.count.size == 0:
        return
    owner = np.repeat(np.arange(len(templates)), templates.sizes)
    rec = templates.records
    state = np.isin(rec["track"], STATE_CODES)
    fixed = state & ~templates.stretch[owner]
    per_template = np.zeros(len(templates))
    np.add.at(per_template, owner[fixed], (rec["rel_end"] - rec["rel_start"])[fixed])
    stretch = np.zeros(len(templates))
    np.add.at(stretch, owner[state & templates.stretch[owner]], 1.0)
    busy = counters.count.T.astype(float) @ per_template
    busy += counters.stretch_ps.T.astype(float) @ stretch
    ipus = np.array(counters.slots) != HOST
    if (busy[ipus] > end_ps * (1 + 1e-9) + 1).any():
        raise _fail(
            path,
            "c_count / c_stretch_ps",
            f"an IPU's counted state time exceeds the run ({end_ps} ps); an IPU is in one "
            "state at a time",
        )


def check_trace(
    path: Path,
    templates: TemplateTable,
    instances: dict[str, np.ndarray],
    counters: Counters,
    end_ps: int,
    replicas: int,
    ipus_per_replica: int,
    execution_end_ps: np.ndarray,
    detail: TraceDetail,
    states_checked: bool,
) -> None:
    """Raise :class:`TraceFileError` naming the file and the field when a loaded trace breaks a
    rule every trace the engine makes follows (see the module docstring)."""
    # A replicated trace stores replica 0's IPUs; a trace of records may use any IPU index.
    ipus = ipus_per_replica if replicas > 1 else MAX_REPLICA_IPUS
    _check_templates(path, templates)
    _check_instances(path, templates, instances, end_ps, ipus)
    _check_counters(path, templates, counters, instances, end_ps, ipus)
    if states_checked:  # traces of records may hold overlapping states; the engine's never do
        _check_busy(path, templates, counters, end_ps)
    ends = np.asarray(execution_end_ps)
    if ends.ndim != 1 or ends.dtype.kind not in "iu":
        raise _fail(path, "execution_end_ps", "expected a one-dimensional integer array")
    if len(ends) and ((np.diff(ends) < 0).any() or ends[0] < 0 or ends[-1] > end_ps):
        raise _fail(path, "execution_end_ps", f"execution ends must ascend within [0, {end_ps}] ps")
    if detail.executions and len(ends) != detail.executions:
        raise _fail(
            path,
            "execution_end_ps",
            f"{len(ends)} execution ends for {detail.executions} executions (detail)",
        )
