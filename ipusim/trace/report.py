"""The :class:`Report` one simulated ``fit`` / ``evaluate`` / ``predict`` returns, and its files.

A report folder holds::

    trace.json          the trace in Chrome Trace Event Format (open in Perfetto)
    trace.npz           the trace, exact (Trace.load)
    utilisation.csv     per-IPU time by state (reports.utilisation)
    memory.csv          per-IPU SRAM by category (reports.memory_report)
    memory_items.csv    every memory item (reports.memory_items)
    liveness.csv        live bytes per IPU and program step by category (reports.liveness_report)
    tiles.csv           bytes of every tile at the fullest tile's worst step (tiles.tile_table)
    summary.txt         Report.summary()
    report.json         the scalar figures

:meth:`Report.save` stages every file before moving any into place; :meth:`Report.load` reads back
the trace, the scalar figures and the memory tables.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from ipusim._files import atomic_folder
from ipusim.errors import (
    ConfigurationError,
    InvalidTypeError,
    MissingFileError,
    TraceFileError,
)
from ipusim.lowering.program import IPUMemoryPlan
from ipusim.trace import chrome
from ipusim.trace._checks import MAX_TIME_PS
from ipusim.trace._summary import render_summary
from ipusim.trace.bottleneck import Bottleneck, find_bottleneck
from ipusim.trace.records import Trace
from ipusim.trace.reports import (
    liveness_report,
    memory_items,
    memory_report,
    throughput,
    utilisation,
)
from ipusim.trace.tiles import tile_table

#: What a report can be the report of.
KINDS = ("train", "test", "predict")

#: Events at most in a saved report's ``trace.json`` (dense stretches are aggregated beyond).
CHROME_MAX_EVENTS = 1_000_000

_FORMAT = "ipusim-report"
_VERSION = 1
#: The figures of report.json that :meth:`Report.load` needs.
_REQUIRED = (
    "samples",
    "steps",
    "seconds",
    "peak_flops_per_s",
    "system_name",
    "kind",
    "trace_fingerprint",
)


def _check_count(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigurationError(f"{name} must be an integer >= 0; got {value!r}")
    return value


def _json_scalar(key: str, value: Any) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float) or hasattr(value, "item"):
        number = value.item() if hasattr(value, "item") else value
        if isinstance(number, float) and not math.isfinite(number):
            return None
        if isinstance(number, int | float):
            return number
    raise ConfigurationError(
        f"extra[{key!r}] must be a number, str, bool or None (a scalar figure); got {value!r}"
    )


class MeasuredChange(Protocol):
    """One change of a run's advice (:class:`ipusim.session.advice.Advice`): what was changed,
    the simulated samples/s with it, and the relative gain."""

    @property
    def change(self) -> str: ...
    @property
    def throughput(self) -> float: ...
    @property
    def gain(self) -> float: ...
    def line(self) -> str:
        """The change, its throughput and gain, in one line."""
        ...


class WhatIfRun(Protocol):
    """What a report simulates again for its advice (:class:`ipusim.session.advice.WhatIf`)."""

    notes: list[str]  # changes that could not be tried, and why

    def advice(self) -> Sequence[MeasuredChange]:
        """The measured changes, best first."""
        ...

    def host_range_line(self, report: Report) -> str | None:
        """The throughputs across the system's host presets, in words, or None."""
        ...


@dataclass(frozen=True, eq=True)
class Report:
    """The result of one simulated ``fit``, ``evaluate`` or ``predict``.

    Attributes:
        trace: every record of the run.
        samples: samples processed (all replicas).
        steps: steps run (per replica).
        seconds: simulated duration of the run (seconds).
        memory_plans: one memory plan per IPU (replica 0's IPUs when the trace is replicated:
            every replica holds the same).
        peak_flops_per_s: IPU index → peak FLOP/s of that IPU.
        system_name: the simulated system (e.g. ``"M2000"``).
        kind: ``"train"``, ``"test"`` or ``"predict"``.
        extra: further scalar figures (name → number or str), saved in ``report.json``.
        memory_table / memory_items_table / liveness_table: the memory tables read by
            :meth:`load`, used when ``memory_plans`` is empty (a loaded report has no plans).
    """

    trace: Trace
    samples: int
    steps: int
    seconds: float
    memory_plans: Sequence[IPUMemoryPlan] = ()
    peak_flops_per_s: Mapping[int, float] = field(default_factory=dict)
    system_name: str = ""
    kind: str = "train"
    extra: Mapping[str, Any] = field(default_factory=dict)
    memory_table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    memory_items_table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    liveness_table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    #: Per-tile bytes read by :meth:`load` (``tiles.csv``), used when there are no plans.
    tiles_table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    #: What the run was simulated from, to simulate it again with a change (``advice``); set
    #: by the session for a report made in this process, None for a loaded one.
    what_if: WhatIfRun | None = field(default=None, compare=False, repr=False)

    __hash__ = None  # type: ignore[assignment]  # holds dicts and DataFrames

    def __post_init__(self) -> None:
        if not isinstance(self.trace, Trace):
            raise InvalidTypeError(f"trace must be a Trace; got {type(self.trace).__name__}")
        _check_count("samples", self.samples)
        _check_count("steps", self.steps)
        try:
            seconds = float(self.seconds)
        except (TypeError, ValueError):
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ConfigurationError(f"seconds must be a finite number >= 0; got {self.seconds!r}")
        if self.kind not in KINDS:
            raise ConfigurationError(f"kind must be one of {KINDS}; got {self.kind!r}")
        plans = tuple(self.memory_plans)
        for plan in plans:
            if not isinstance(plan, IPUMemoryPlan):
                raise InvalidTypeError(
                    f"memory_plans must hold IPUMemoryPlan; got {type(plan).__name__}"
                )
        peaks = {int(k): float(v) for k, v in sorted(dict(self.peak_flops_per_s).items())}
        extra = {str(k): _json_scalar(str(k), v) for k, v in dict(self.extra).items()}
        object.__setattr__(self, "seconds", seconds)
        object.__setattr__(self, "memory_plans", plans)
        object.__setattr__(self, "peak_flops_per_s", peaks)
        object.__setattr__(self, "system_name", str(self.system_name))
        object.__setattr__(self, "extra", extra)

    # ------------------------------------------------------------------ figures
    @property
    def simulated_seconds(self) -> float:
        """Simulated duration of the run (seconds)."""
        return self.seconds

    @property
    def end_ps(self) -> int:
        """End of the run (picoseconds): ``seconds`` or the trace's end, whichever is later."""
        return max(self.trace.end_ps, round(self.seconds * 1e12))

    @property
    def throughput_samples_per_s(self) -> float:
        """Samples per simulated second (NaN for a run of zero duration)."""
        return throughput(self.samples, self.seconds) if self.seconds > 0 else math.nan

    @property
    def utilisation(self) -> pd.DataFrame:
        """Per-IPU time by state; see :func:`ipusim.trace.utilisation`."""
        return self._utilisation.copy()

    @functools.cached_property
    def _utilisation(self) -> pd.DataFrame:
        return utilisation(self.trace, self.peak_flops_per_s, end_ps=self.end_ps)

    @functools.cached_property
    def bottleneck(self) -> Bottleneck:
        """What bounds the run, with every resource's share; see
        :func:`ipusim.trace.bottleneck.find_bottleneck`."""
        return find_bottleneck(
            self.trace,
            self.end_ps,
            self.samples,
            pipelined=bool(self.extra.get("pipelined", False)),
            context=self.extra,
        )

    def _replica_layout(self) -> tuple[int, int]:
        """(replicas, IPUs per replica) to copy the memory plans over, (1, 1) when the plans
        already name every IPU."""
        per = self.trace.ipus_per_replica
        if self.trace.replicas > 1 and all(p.ipu < per for p in self.memory_plans):
            return self.trace.replicas, per
        return 1, 1

    @property
    def memory(self) -> pd.DataFrame:
        """Per-IPU SRAM by category (every replica's IPUs); see
        :func:`ipusim.trace.memory_report`."""
        if not self.memory_plans and self.memory_table is not None:
            return self.memory_table.copy()
        return memory_report(self.memory_plans, *self._replica_layout())

    @property
    def memory_items(self) -> pd.DataFrame:
        """Every memory item; see :func:`ipusim.trace.memory_items`."""
        if not self.memory_plans and self.memory_items_table is not None:
            return self.memory_items_table.copy()
        return memory_items(self.memory_plans, *self._replica_layout())

    @property
    def liveness(self) -> pd.DataFrame:
        """Live bytes per IPU and program step by category; see
        :func:`ipusim.trace.reports.liveness_report` (a report read from a folder: its
        ``liveness.csv``, empty when the folder has none)."""
        if not self.memory_plans and self.liveness_table is not None:
            return self.liveness_table.copy()
        return liveness_report(self.memory_plans, *self._replica_layout())

    @property
    def tiles(self) -> pd.DataFrame:
        """Bytes of every tile of each IPU at its fullest tile's worst step; see
        :func:`ipusim.trace.tiles.tile_table` (a loaded report: its ``tiles.csv``)."""
        if not self.memory_plans and self.tiles_table is not None:
            return self.tiles_table.copy()
        return tile_table(self.memory_plans)

    def figures(self) -> dict[str, Any]:
        """The scalar figures saved in ``report.json``."""
        throughput_value = self.throughput_samples_per_s
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "system_name": self.system_name,
            "kind": self.kind,
            "steps": self.steps,
            "samples": self.samples,
            "seconds": self.seconds,
            "end_ps": self.end_ps,
            "throughput_samples_per_s": throughput_value
            if math.isfinite(throughput_value)
            else None,
            "peak_flops_per_s": {str(k): v for k, v in self.peak_flops_per_s.items()},
            "records": self.trace.detail.records,
            "records_kept": len(self.trace),
            "trace_detail": self.trace.detail.describe(),
            "trace_fingerprint": self.trace.fingerprint(),
            "extra": dict(self.extra),
        }

    def summary(self, largest_items: int = 3, advice: int = 0) -> str:
        """A readable text block: the run, throughput, per-IPU utilisation and memory.

        Args:
            largest_items: how many of each IPU's largest memory items to list.
            advice: list this many of :meth:`advice`'s changes at the end (each measured by
                simulating the run again: seconds for a large model), after the range of
                throughputs across the system's host presets when a host resource bounds the
                run; 0 lists neither.
        """
        text = render_summary(self, largest_items)
        if advice > 0:
            spread = self.what_if.host_range_line(self) if self.what_if is not None else None
            if spread is not None:
                text += f"\n\n{spread}"
            found = self.advice(top=advice)
            lines = [f"  {a.line()}" for a in found] or ["  (no change tried raised throughput)"]
            text += "\n\nWould help (each simulated)\n" + "\n".join(lines)
            notes = self.what_if.notes if self.what_if is not None else []
            text += "".join(f"\n  note: {note}" for note in notes)
        return text

    def __str__(self) -> str:
        return self.summary()

    def top_ops(self, n: int = 10, by: str = "time", ipu: int | None = None) -> pd.DataFrame:
        """Each IPU's ``n`` compute sets taking the most compute (``by="time"``) or exchange
        time, or its largest memory items (``by="memory"``); see :func:`ipusim.trace.top_ops`."""
        from ipusim.trace.top_ops import top_ops

        return top_ops(self, n, by, ipu)

    def advice(self, top: int | None = None) -> list[MeasuredChange]:
        """The changes that would raise throughput most, each measured by simulating this run
        again with it, best first; changes that no longer fit in memory are left out. See
        :mod:`ipusim.session.advice` for the changes tried. ``top`` keeps the first few.

        Raises:
            UnsupportedError: for a report loaded from disk (nothing to simulate again).
        """
        if self.what_if is None:
            from ipusim.errors import UnsupportedError

            raise UnsupportedError(
                "report.advice() simulates the run again, so it needs the report of a run made "
                "in this process; a report loaded from disk has no run to simulate. Run the "
                "program again (ipusim run prints the advice at the end)."
            )
        found = list(self.what_if.advice())
        return found if top is None else found[:top]

    # ------------------------------------------------------------------ files
    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the report's files into ``folder`` (created if missing).

        Every file is rendered in memory and staged before any is moved into place: a new folder
        is filled aside and renamed into place, so an error (a full disk) leaves no folder and no
        half-written file.

        Returns:
            The folder.

        Raises:
            DiskWriteError: the disk is full or the folder is read-only (nothing is left behind).
        """
        folder = Path(folder)
        files = {
            "trace.json": chrome.chrome_json_text(self.trace, max_events=CHROME_MAX_EVENTS).encode(
                "utf-8"
            ),
            "trace.npz": self.trace.to_npz_bytes(),
            "utilisation.csv": self.utilisation.to_csv(index=False).encode("utf-8"),
            "memory.csv": self.memory.to_csv(index=False).encode("utf-8"),
            "memory_items.csv": self.memory_items.to_csv(index=False).encode("utf-8"),
            "liveness.csv": self.liveness.to_csv(index=False).encode("utf-8"),
            "tiles.csv": self.tiles.to_csv(index=False).encode("utf-8"),
            "summary.txt": (self.summary() + "\n").encode("utf-8"),
            "report.json": (
                json.dumps(self.figures(), indent=2, allow_nan=False, sort_keys=True) + "\n"
            ).encode("utf-8"),
        }
        return atomic_folder(folder, files)

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> Report:
        """Read a report written by :meth:`save`: the trace, the scalar figures and memory tables.

        Raises:
            FileNotFoundError: if the folder or one of its files is missing.
            TraceFileError: if a file is not what :meth:`save` writes: damaged, truncated,
                missing figures, or a trace that is not the one the report was saved with (its
                fingerprint differs).
        """
        folder = Path(folder)
        if not folder.is_dir():
            raise MissingFileError(f"no report folder at {str(folder)!r}")
        for name in ("report.json", "trace.npz", "memory.csv"):
            if not (folder / name).is_file():
                raise MissingFileError(
                    f"{str(folder)!r} has no {name}; is it a folder written by Report.save?"
                )
        path = folder / "report.json"
        try:
            figures = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TraceFileError(f"{str(path)!r} is not valid JSON ({exc})") from None
        if not isinstance(figures, dict) or figures.get("format") != _FORMAT:
            raise TraceFileError(f"{str(path)!r} is not an ipusim report")
        if figures.get("version") != _VERSION:
            raise TraceFileError(
                f"{str(folder)!r} holds report format version {figures.get('version')}; this "
                f"ipusim reads version {_VERSION}"
            )
        missing = [key for key in _REQUIRED if key not in figures]
        if missing:
            raise TraceFileError(
                f"{str(path)!r} lacks the figures {missing}; the report is damaged or was edited. "
                "Save the report again (Report.save, ipusim run)."
            )
        trace = Trace.load(folder / "trace.npz")
        stored = figures["trace_fingerprint"]
        if stored != trace.fingerprint():
            raise TraceFileError(
                f"{str(folder / 'trace.npz')!r} is not the trace this report was saved with (its "
                f"fingerprint is {trace.fingerprint()!r}, report.json records {stored!r}); the "
                "folder mixes files of different runs. Save the report again."
            )
        memory, items, liveness, tiles = _read_tables(folder)
        try:
            return cls(
                trace=trace,
                memory_table=memory,
                memory_items_table=items,
                liveness_table=liveness,
                tiles_table=tiles,
                **_checked_figures(path, figures, trace),
            )
        except (TypeError, ValueError) as exc:
            raise TraceFileError(f"{str(path)!r} holds an invalid figure: {exc}") from None


def _bad_figure(path: Path, key: str, expected: str, value: object) -> TraceFileError:
    return TraceFileError(
        f"{str(path)!r}: {key}: expected {expected}, got {value!r}; the report is damaged or was "
        "edited. Save the report again (Report.save, ipusim run)."
    )


def _checked_figures(path: Path, figures: dict[str, Any], trace: Trace) -> dict[str, Any]:
    """The Report fields of ``report.json``, each checked for its type and range."""
    counts = {}
    for key in ("samples", "steps"):
        value = figures[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _bad_figure(path, key, "an integer >= 0", value)
        counts[key] = value
    seconds = figures["seconds"]
    limit_s = MAX_TIME_PS / 1e12
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise _bad_figure(path, "seconds", "a number of seconds", seconds)
    if not (math.isfinite(seconds) and trace.end_ps / 1e12 * (1 - 1e-12) <= seconds <= limit_s):
        raise _bad_figure(
            path, "seconds", f"a duration from the trace's end to {limit_s:.4g} s", seconds
        )
    peaks = figures["peak_flops_per_s"]
    if not isinstance(peaks, dict):
        raise _bad_figure(path, "peak_flops_per_s", "an object of IPU index -> FLOP/s", peaks)
    checked_peaks = {}
    for key, value in peaks.items():
        ok_rate = isinstance(value, int | float) and not isinstance(value, bool)
        if not (key.lstrip("-").isdigit() and ok_rate and math.isfinite(value) and value >= 0):
            raise _bad_figure(path, f"peak_flops_per_s[{key!r}]", "a FLOP/s figure >= 0", value)
        checked_peaks[int(key)] = float(value)
    extra = figures.get("extra") or {}
    if not isinstance(extra, dict):
        raise _bad_figure(path, "extra", "an object of scalar figures", extra)
    for key in ("system_name", "kind"):
        if not isinstance(figures[key], str):
            raise _bad_figure(path, key, "a string", figures[key])
    return {
        **counts,
        "seconds": float(seconds),
        "peak_flops_per_s": checked_peaks,
        "system_name": figures["system_name"],
        "kind": figures["kind"],
        "extra": extra,
    }


def _read_table(
    path: Path, template: pd.DataFrame, lowest: dict[str, int] | None = None, **options: Any
) -> pd.DataFrame:
    """``path`` read as ``template``'s columns and dtypes, every number >= 0 (or the column's
    ``lowest`` value: -1 marks "no step")."""
    try:
        frame = pd.read_csv(path, **options)
    except (ValueError, OverflowError, UnicodeDecodeError) as exc:  # parser errors: ValueErrors
        raise TraceFileError(f"{str(path)!r} is not a readable CSV table ({exc})") from None
    if list(frame.columns) != list(template.columns):
        raise TraceFileError(
            f"{str(path)!r} has columns {list(frame.columns)}; expected {list(template.columns)}"
        )
    try:
        frame = frame.astype(template.dtypes.to_dict())
    except (TypeError, ValueError, OverflowError) as exc:
        raise TraceFileError(f"{str(path)!r} holds a value of the wrong type ({exc})") from None
    for column in frame.columns:  # bytes, fractions, indices: none is negative (NaN: no budget)
        values = frame[column]
        floor = (lowest or {}).get(column, 0)
        if values.dtype.kind in "if" and bool((values < floor).any()):
            raise TraceFileError(
                f"{str(path)!r}: column {column!r} holds a value below {floor}; the report "
                "is damaged or was edited. Save the report again (Report.save, ipusim run)."
            )
    return frame


def _read_tables(folder: Path) -> tuple[pd.DataFrame | None, ...]:
    """A report folder's memory, memory-item, liveness and tile tables (None for a file the
    folder lacks: only ``memory.csv`` is required). Names such as "NA" stay strings."""

    def optional(name: str, template: pd.DataFrame, **options: Any) -> pd.DataFrame | None:
        path = folder / name
        return _read_table(path, template, **options) if path.is_file() else None

    names = {"keep_default_na": False}
    return (
        _read_table(folder / "memory.csv", memory_report(())),
        optional(
            "memory_items.csv", memory_items(()), dtype={"name": str, "category": str}, **names
        ),
        optional("liveness.csv", liveness_report(()), dtype={"name": str, "phase": str}, **names),
        optional("tiles.csv", tile_table(()), lowest={"peak_step": -1}),
    )
