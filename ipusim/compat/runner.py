"""``ipusim run SCRIPT.py``: run an unmodified IPU TensorFlow 2 script on ipusim.

For the time of the run, and in this process only, TensorFlow / Keras / IPU addon imports resolve
to ipusim's compatibility modules (:mod:`ipusim.compat.redirect`). The script runs as ``__main__`` with
``sys.argv`` set, as ``python SCRIPT.py`` would run it, and every fit / evaluate / predict /
device function it runs is simulated. Each compiled program gets one report (trace.json for Perfetto, summary,
utilisation and memory tables, ``calls.csv`` with one row per call): every call of the same step
function, or every ``fit`` of the same model, joins one timeline (:class:`ReportCollector`). The
reports are written once, when the script ends (or fails), under the output folder as
``NN-fit``, ``NN-evaluate``, ``NN-predict``, ``NN-function`` ... and their places printed.
Afterwards ``sys.modules``, ``sys.meta_path``, ``sys.argv`` and ``sys.path`` are as they were.
"""

from __future__ import annotations

import contextlib
import os
import re
import runpy
import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ipusim._files import write_bytes_atomic
from ipusim.compat.redirect import REDIRECTS, CompatFinder, redirect_imports, resolve
from ipusim.config import IPUConfig, active_config
from ipusim.data.datasets import reset_provenance
from ipusim.errors import ConfigurationError, MissingFileError
from ipusim.hardware import load_system
from ipusim.session import engine_settings
from ipusim.session.clock import simulated_time
from ipusim.trace.calls import CallSeries
from ipusim.trace.report import Report

__all__ = [
    "REDIRECTS",
    "CompatFinder",
    "ReportCollector",
    "RunResult",
    "redirect_imports",
    "resolve",
    "run_script",
    "main",
]

#: ``ipusim run`` options of a PopDist job (:mod:`ipusim.compat.poprun`), as ``poprun`` names them.
JOB_OPTIONS = {
    "--instances": "instances",
    "--replicas": "replicas",
    "--ipus-per-replica": "ipus_per_replica",
}

#: ``ipusim run`` options without a value, as they may also follow SCRIPT.
FLAGS = {"--wall-time": "wall_time"}

#: Report kinds as Keras names them.
KIND_NAMES = {"train": "fit", "test": "evaluate", "predict": "predict"}

_REPORT_DIR = re.compile(r"^\d{2,}-[a-z0-9_]+$")


#: Records the joined trace of a program's repeated calls keeps at most at the ``auto`` trace
#: detail (a lower bound of ``IPUConfig.ipusim.trace_records``): about 2 MB of trace.json, so a
#: program calling its step function 10,000 times leaves a report folder of a few MB (D).
CALL_RECORD_BUDGET = 10_000


def _call_budget() -> int:
    """Records the joined trace of repeated calls keeps, from the active ``trace_detail``:
    every record at ``full`` / ``blocks``, none at ``summary``, else at most
    :data:`CALL_RECORD_BUDGET` (or ``trace_records`` when smaller)."""
    settings = engine_settings(active_config())
    if settings.detail in ("full", "blocks"):
        return sys.maxsize
    if settings.detail == "summary":
        return 0
    return min(settings.record_budget, CALL_RECORD_BUDGET)


def _report_name(report: Report) -> str:
    segment = report.extra.get("segment") if isinstance(report.extra, dict) else None
    if segment:  # a custom training loop's run: name it after its segment
        return re.sub(r"[^a-z0-9]+", "_", str(segment).lower()).strip("_") or "run"
    return KIND_NAMES.get(report.kind, report.kind)


@dataclass
class ReportCollector:
    """Keeps one report per compiled program while installed; :meth:`save` writes them.

    Every call of the same program (the same step function called again by ``strategy.run``,
    ``fit`` called again on the same model) joins that program's :class:`CallSeries`, in call
    order; a report that no series of its name accepts starts a new one. Nothing is written
    until :meth:`save`, which writes each program's report as ``<output>/NN-<name>`` (NN in the
    order the programs first ran), with ``calls.csv`` (one row per call), each folder written
    aside and renamed into place.

    Attributes:
        output: the folder the report folders go into.
        stream: where the saved folders are announced (None: silent).
        saved: the folders written, in order.
        series: (name, calls) of each program, in the order they first ran.
    """

    output: Path
    stream: TextIO | None = None
    saved: list[Path] = field(default_factory=list)
    series: list[tuple[str, CallSeries]] = field(default_factory=list)

    def __call__(self, report: Report) -> None:
        name = _report_name(report)
        for other_name, calls in reversed(self.series):
            if other_name == name and calls.accepts(report):
                calls.add(report)
                return
        self.series.append((name, CallSeries(report, _call_budget())))

    def save(self) -> list[Path]:
        """Write every program's report not yet written (see the class docstring)."""
        for number in range(len(self.saved), len(self.series)):
            name, calls = self.series[number]
            folder = self.output / f"{number + 1:02d}-{name}"
            report = calls.report()
            _save_folder(report, calls, folder)
            self.saved.append(folder)
            if self.stream is not None:
                times = f" ({len(calls):,} calls)" if len(calls) > 1 else ""
                print(
                    f"[ipusim] {name}{times}: {report.simulated_seconds:.6g} simulated s, "
                    f"{report.throughput_samples_per_s:,.0f} samples/s -> {folder / 'trace.json'}"
                    + (f" [data: {report.extra['data']}]" if report.extra.get("data") else ""),
                    file=self.stream,
                )
                _print_advice(calls.first, self.stream)
        return list(self.saved)

    @contextlib.contextmanager
    def installed(self) -> Iterator[ReportCollector]:
        """Receive every report simulated within the block; save them when it ends."""
        from ipusim.keras.extensions.simulation import ON_REPORT

        ON_REPORT.append(self)
        try:
            yield self
        finally:
            with contextlib.suppress(ValueError):
                ON_REPORT.remove(self)
            self.save()


#: Advice lines ``ipusim run`` prints per program (the changes measured to help most).
ADVICE_LINES = 3


def _print_advice(report: Report, stream: TextIO) -> None:
    """The top lines of ``report.advice()`` (its first call simulated again with each change);
    nothing when no change helped or the report cannot be simulated again."""
    if report.what_if is None:
        return
    from ipusim.session.uncertainty import host_range_line

    spread = host_range_line(report)
    if spread is not None:
        print(f"[ipusim]   {spread}", file=stream)
    for advice in report.advice(top=ADVICE_LINES):
        print(f"[ipusim]   would help: {advice.line()}", file=stream)
    for note in report.what_if.notes:  # changes that could not be tried for this run
        print(f"[ipusim]   note: {note}", file=stream)


def _save_folder(report: Report, calls: CallSeries, folder: Path) -> None:
    """Write ``report`` and its calls table into a sibling folder, then rename it to ``folder``
    (replacing a folder of that name)."""
    aside = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    if aside.exists():
        shutil.rmtree(aside)
    try:
        report.save(aside)
        write_bytes_atomic(aside / "calls.csv", calls.table().to_csv(index=False).encode("utf-8"))
        old = folder.with_name(f".{folder.name}.{os.getpid()}.old")
        if folder.exists():  # a folder of that name: moved away first, removed once replaced
            os.replace(folder, old)
        os.replace(aside, folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        if aside.exists():
            shutil.rmtree(aside)


@dataclass(frozen=True)
class RunResult:
    """What :func:`run_script` did.

    Attributes:
        output: the output folder.
        reports: the report folders written, in the order the simulations ran.
        exit_code: the script's ``sys.exit`` code (0 when it ended normally).
    """

    output: Path
    reports: tuple[Path, ...]
    exit_code: int


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints the message, exits with 1
    return 1


def report_folders(output: Path) -> list[Path]:
    """The report folders of a run in ``output`` (``NN-kind`` folders holding report.json), in
    order."""
    if not output.is_dir():
        return []
    return sorted(
        child
        for child in output.iterdir()
        if child.is_dir() and _REPORT_DIR.match(child.name) and (child / "report.json").is_file()
    )


def clear_old_reports(output: Path) -> None:
    """Remove report folders a previous run left (:func:`report_folders`)."""
    for child in report_folders(output):
        shutil.rmtree(child)


@contextlib.contextmanager
def _script_process(script: Path, args: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` and ``sys.path[0]`` as ``python SCRIPT args...`` sets them; modules the
    script's own folder provides are unloaded afterwards."""
    saved_argv = sys.argv
    before = set(sys.modules)
    folder = str(script.parent)
    sys.argv = [str(script), *args]
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.argv = saved_argv
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
        for name in set(sys.modules) - before:
            module = sys.modules.get(name)
            file = getattr(module, "__file__", None) or ""
            if not name.startswith("ipusim") and file and Path(file).parent == script.parent:
                del sys.modules[name]


@contextlib.contextmanager
def _default_system(system: str | None) -> Iterator[None]:
    """Make every IPUConfig created in the block start with ``ipusim.system = system``."""
    if system is None:
        yield
        return
    had_own = "__init__" in IPUConfig.__dict__
    original = IPUConfig.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.ipusim.system = system

    IPUConfig.__init__ = __init__  # type: ignore[method-assign]
    try:
        yield
    finally:
        if had_own:
            IPUConfig.__init__ = original  # type: ignore[method-assign]
        else:
            del IPUConfig.__init__


def _check_arguments(script: str | os.PathLike[str], system: str | None) -> Path:
    """The script's absolute path, after checking it and ``system``.

    Raises:
        FileNotFoundError: ``script`` is not a file.
        ValueError: ``system`` names no preset or readable file.
    """
    path = Path(script).resolve()
    if not path.is_file():
        raise MissingFileError(f"ipusim run: no script file at {str(script)!r}")
    if system is not None:
        try:
            load_system(system)
        except Exception as exc:  # the loader's own error types: name the option instead
            raise ConfigurationError(
                f"ipusim run --system {system!r}: not a system preset or TOML file ({exc}); "
                "`ipusim systems` lists the presets"
            ) from exc
    return path


def run_script(
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    output: str | os.PathLike[str] | None = None,
    system: str | None = None,
    stream: TextIO | None = None,
    quiet: bool = False,
    reports: bool = True,
    wall_time: bool = False,
) -> RunResult:
    """Run an IPU TensorFlow 2 script on ipusim and save every simulation's report.

    Args:
        script: the script's path.
        args: its command-line arguments (``sys.argv[1:]``).
        output: folder for the reports; default ``./ipusim_run/<script stem>``. Report folders
            left there by an earlier run are replaced.
        system: a system preset name or TOML path every ``IPUConfig`` of the script starts with
            (``config.ipusim.system``); None keeps ipusim's choice by IPU count.
        stream: where the progress lines go (default: ``sys.stderr`` at the time of the call).
        quiet: print no progress lines.
        reports: collect and write the reports (False: simulate only, write nothing; for
            measuring what the reports cost).
        wall_time: let the script's ``time`` / ``datetime`` readings and the Keras progress
            bar show the CPU's clock (``--wall-time``); by default they show the simulated
            clock (:func:`ipusim.session.simulated_time`, see docs/simulated_time.md).

    Returns:
        The output folder, the report folders and the script's exit code.

    Raises:
        FileNotFoundError: ``script`` is not a file.
        ValueError: ``system`` names no preset or readable file.
        Exception: whatever the script raises (reports saved until then stay saved).
    """
    path = _check_arguments(script, system)
    stream = None if quiet else stream or sys.stderr
    folder = Path(output) if output is not None else Path("ipusim_run") / path.stem
    clear_old_reports(folder)
    folder.mkdir(parents=True, exist_ok=True)
    collector = ReportCollector(folder, stream)
    code = 0
    reset_provenance()  # the reports of this run say "synthetic" only for data it synthesised
    try:
        with (
            redirect_imports(),
            _script_process(path, args),
            collector.installed() if reports else contextlib.nullcontext(),
            _default_system(system),
            contextlib.nullcontext() if wall_time else simulated_time(),
        ):
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as exc:
                code = _exit_code(exc.code)
    finally:
        tf1 = sys.modules.get("ipusim.compat.tf.v1_session")
        if tf1 is not None:  # a script's disable_eager_execution() ends with the script
            tf1.enable_eager_execution()
        if stream is not None:
            print(
                f"[ipusim] {len(collector.saved)} simulation report(s) in {folder}",
                file=stream,
            )
    return RunResult(folder, tuple(collector.saved), code)


def main(
    script: str,
    args: Sequence[str],
    output: str | None = None,
    system: str | None = None,
    wall_time: bool = False,
    instances: int | None = None,
    replicas: int | None = None,
    ipus: int | None = None,
) -> int:
    """The ``ipusim run`` command: split the arguments, run the script, return its exit code.

    ``-o/--output``, ``--system``, ``--wall-time``, ``--instances``, ``--replicas`` and
    ``--ipus-per-replica`` are ipusim's wherever they stand before a ``--``; everything after
    ``--`` (and every other argument) goes to the script. With ``--instances`` (or
    ``--replicas``) the script runs as a PopDist job (:mod:`ipusim.compat.poprun`).
    """
    own, rest = _split_options(list(args))
    output = own.get("output", output)
    system = own.get("system", system)
    wall_time = wall_time or "wall_time" in own
    try:
        _check_arguments(script, system)
    except (FileNotFoundError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    if instances is None and replicas is None and not own.keys() & set(JOB_OPTIONS.values()):
        return run_script(script, rest, output=output, system=system, wall_time=wall_time).exit_code
    from ipusim.compat.poprun import run_instances

    try:
        count = int(own.get("instances", instances or 1))
        total = int(own.get("replicas", replicas or count))
        per_replica = int(own.get("ipus_per_replica", ipus or 1))
    except ValueError as exc:
        print(
            f"ipusim run: --instances, --replicas and --ipus-per-replica take numbers ({exc})",
            file=sys.stderr,
        )
        return 2
    folder = Path(output) if output is not None else Path("ipusim_run") / Path(script).stem
    options = (["--system", system] if system else []) + (["--wall-time"] if wall_time else [])
    result = run_instances(script, rest, folder, count, total, per_replica, options)
    print(
        f"[ipusim] {count} instance(s), {total} replica(s): {len(result.reports)} combined "
        f"report(s) in {folder}",
        file=sys.stderr,
    )
    return result.exit_code


def _split_options(args: list[str]) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    rest: list[str] = []
    names = {"-o": "output", "--output": "output", "--system": "system", **JOB_OPTIONS}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i + 1 :])
            break
        key, eq, value = arg.partition("=")
        if arg in FLAGS:
            options[FLAGS[arg]] = "1"
        elif key in names and eq:
            options[names[key]] = value
        elif arg in names:
            if i + 1 >= len(args):
                raise SystemExit(f"ipusim run: {arg} expects a value")
            options[names[arg]] = args[i + 1]
            i += 1
        else:
            rest.append(arg)
        i += 1
    return options, rest
