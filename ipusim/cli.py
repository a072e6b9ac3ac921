"""The ``ipusim`` command line (also ``python -m ipusim``).

Every verb is one row of :data:`VERBS`: its name, its one-line help, the function that adds its
arguments and the function that runs it. A verb's module is imported only when that verb runs, so
``ipusim --version`` and ``ipusim systems`` never load pandas, numba or matplotlib. To add a verb,
add a row (and its two functions).

Errors: a mistake of the user's (a missing file, a bad option, a configuration ipusim rejects:
any :class:`ipusim.errors.IPUSimError`) is printed as one ``ipusim VERB: message`` line on
stderr, exit status 2; a closed pipe (``ipusim systems | head``) ends the command quietly; any
other exception is a bug in ipusim and is shown with its traceback and a line asking to report
it (exit status 1).
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import traceback
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["VERBS", "Verb", "build_parser", "main"]

#: Exit status of a user mistake (as argparse uses for a bad command line).
USER_ERROR = 2
#: Exit status of an internal error.
INTERNAL_ERROR = 1


# The verbs that read saved reports (report, compare, view) live in their own module.
from ipusim._cli_errors import UsageError  # noqa: E402
from ipusim.cli_reports import (  # noqa: E402
    _compare,
    _compare_arguments,
    _is_report_folder,
    _report,
    _report_arguments,
    _view,
    _view_arguments,
)


# ---------------------------------------------------------------------- argument types
def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite time >= 0 in seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a time in seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite time >= 0 s, got {text}")
    return value


# ---------------------------------------------------------------------- demo
def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--epochs", type=positive_int, default=5, help="training epochs (5)")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="batch size (32)")
    parser.add_argument(
        "--steps-per-execution",
        type=positive_int,
        default=50,
        help="steps per host round trip (50)",
    )
    parser.add_argument(
        "--verbose",
        type=int,
        default=2,
        choices=(0, 1, 2),
        help="Keras verbosity (default 2: one line per epoch)",
    )
    parser.add_argument(
        "-o",
        "--output",
        default="ipusim_demo",
        help="folder for trace.json and the reports (default ./ipusim_demo)",
    )


def _demo(args: argparse.Namespace) -> int:
    from ipusim.demo import run_demo

    run_demo(
        epochs=args.epochs,
        batch_size=args.batch_size,
        steps_per_execution=args.steps_per_execution,
        verbose=args.verbose,
        output=args.output,
    )
    return 0


# ---------------------------------------------------------------------- systems
def _systems(args: argparse.Namespace) -> int:
    from ipusim.hardware import format_systems_table

    print(format_systems_table())
    return 0


# ---------------------------------------------------------------------- run
_RUN_OPTIONS_WITH_VALUE = (
    "--global-batch",
    "--budget-s",
    "--candidates",
    "--plan-fit",
    "-o",
    "--output",
    "--system",
    "--instances",
    "--replicas",
    "--ipus-per-replica",
)


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("script", help="the script to run, as `python SCRIPT args...` would")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    parser.add_argument("-o", "--output", default=None, help="report folder (./ipusim_run/<stem>)")
    parser.add_argument("--system", default=None, help="system preset every IPUConfig starts with")
    parser.add_argument(
        "--instances",
        type=positive_int,
        default=None,
        help="run SCRIPT as the N instances (processes) of a PopDist job, as poprun "
        "--num-instances does; their reports are combined",
    )
    parser.add_argument(
        "--replicas",
        type=positive_int,
        default=None,
        help="replicas of the PopDist job, over all instances (poprun --num-replicas)",
    )
    parser.add_argument(
        "--ipus-per-replica",
        type=positive_int,
        default=None,
        help="IPUs of each replica of the PopDist job (poprun --ipus-per-replica, default 1)",
    )
    parser.add_argument(
        "--wall-time",
        action="store_true",
        help="the script's time.time() / perf_counter() / monotonic() / datetime.now() and the "
        "Keras progress bar read the CPU's clock (default: the simulated clock; see "
        "docs/simulated_time.md)",
    )
    parser.add_argument(
        "--timing-only",
        action="store_true",
        help="simulate without numerics (before SCRIPT): no kernels run, no weights are "
        "allocated; losses are not computed",
    )
    from ipusim.plan.cli import add_run_plan_arguments

    add_run_plan_arguments(parser)


def _script_tail(argv: Sequence[str]) -> list[str]:
    """What follows SCRIPT in ``ipusim run [options] SCRIPT ...``, exactly as typed (argparse
    would drop a ``--``, which the script's own arguments need to keep)."""
    i = list(argv).index("run") + 1
    while i < len(argv):
        arg = argv[i]
        if arg in _RUN_OPTIONS_WITH_VALUE:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return list(argv[i + 1 :])
    return []


def _run(args: argparse.Namespace) -> int:
    from ipusim.compat.runner import main as run_main

    if args.timing_only:  # every IPUConfig of the script then simulates without numerics
        os.environ["IPUSIM_TIMING_ONLY"] = "1"
    script = Path(args.script)
    if not script.is_file():
        raise UsageError(
            f"no script at {str(script)!r}; give the path of a Python file, e.g. "
            "`ipusim run train.py --epochs 1`"
        )
    tail = _script_tail(args.argv) if args.argv is not None else list(args.args)
    if args.plan:
        from ipusim.plan.cli import main_run_plan

        return main_run_plan(args, tail)
    try:
        return run_main(
            args.script,
            tail,
            output=args.output,
            system=args.system,
            wall_time=args.wall_time,
            instances=args.instances,
            replicas=args.replicas,
            ipus=args.ipus_per_replica,
        )
    except Exception as error:
        if isinstance(error, _user_errors()) and _api_gap(error) is None:
            raise
        return _script_failed(script, error)


def _script_failed(script: Path, error: Exception) -> int:
    """Show an exception the script raised as ``python SCRIPT`` would (from the script's first
    frame on), then say whether it came from the script's own code or from ipusim's."""
    frames = traceback.extract_tb(error.__traceback__)
    script_file = str(script.resolve())
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != script_file:
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb or error.__traceback__)
    package = str(Path(__file__).resolve().parent)
    inside_ipusim = bool(frames) and frames[-1].filename.startswith(package)
    gap = _api_gap(error)
    if gap is not None:
        where = (
            f"at a gap in ipusim, not in the script: {gap}. It is a TensorFlow / Keras name "
            "ipusim does not simulate yet; docs/api.md lists what it simulates and what to use "
            "instead"
        )
    elif inside_ipusim:
        where = (
            "inside ipusim. If the script is right, this is a bug in ipusim "
            f"{_version()}: please report it with the traceback above"
        )
    else:
        where = "in the script's own code (traceback above)"
    print(f"ipusim run: {script} stopped with {type(error).__name__} {where}.", file=sys.stderr)
    return INTERNAL_ERROR


def _api_gap(error: BaseException) -> str | None:
    """What ipusim lacks when ``error`` (or an error it came from) is a missing TF / Keras name:
    ipusim's NotSimulated errors, or Python's "cannot import name" from an ipusim module."""
    from ipusim.errors import NotSimulatedError, NotSimulatedModuleError

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, NotSimulatedError | NotSimulatedModuleError):
            return str(current).split(";")[0].split(":")[0]
        if isinstance(current, ImportError) and (current.name or "").startswith("ipusim."):
            return str(current).split(" (")[0]
        current = current.__cause__ or current.__context__
    return None


# ---------------------------------------------------------------------- plot
_PLOT_SUFFIXES = (".png", ".svg")


def _plot_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="report folder or trace .npz")
    parser.add_argument("-o", "--output", default=None, help="timeline file (.png or .svg)")
    parser.add_argument("--start", type=seconds, default=None, help="zoom: start time (s)")
    parser.add_argument("--end", type=seconds, default=None, help="zoom: end time (s)")
    parser.add_argument(
        "--ipus", type=int, nargs="+", default=None, help="IPUs to show (-1 is the host)"
    )
    parser.add_argument("--folder", default=None, help="where all figures go (default: .)")
    parser.add_argument("--formats", nargs="+", default=["png"], choices=["png", "svg"])


def _check_plot_arguments(args: argparse.Namespace) -> None:
    path = Path(args.path)
    if not path.exists():
        raise UsageError(
            f"nothing at {str(path)!r}; give a report folder (e.g. ipusim_demo) or a trace .npz"
        )
    if path.is_file() and path.suffix != ".npz":
        raise UsageError(f"{str(path)!r} is not a trace .npz; give a report folder or a trace .npz")
    if path.is_dir() and not _is_report_folder(path):
        raise UsageError(
            f"{str(path)!r} has no report.json; give a report folder (written by ipusim demo, "
            "ipusim run or Report.save) or a trace .npz"
        )
    if args.output is not None and Path(args.output).suffix.lower() not in _PLOT_SUFFIXES:
        raise UsageError(
            f"-o {args.output}: the suffix picks the format; end the file name in .png or .svg"
        )
    if args.start is not None and args.end is not None and args.end <= args.start:
        raise UsageError(
            f"--end ({args.end} s) must be after --start ({args.start} s); give a non-empty "
            "time range"
        )


def _plot(args: argparse.Namespace) -> int:
    _check_plot_arguments(args)
    # matplotlib lives in `analysis` only; importing it here keeps `import ipusim` light.
    from analysis import plot_report, timeline
    from analysis.sources import trace_of

    if args.output is None:
        written = plot_report(args.path, args.folder or ".", formats=tuple(args.formats))
        for paths in written.values():
            for path in paths:
                print(path)
        return 0
    trace, report = trace_of(args.path)
    end_s = max(trace.end_ps, report.end_ps if report is not None else 0) / 1e12
    if args.start is not None and args.start >= end_s:
        raise UsageError(
            f"--start {args.start} s is at or after the end of the run ({end_s:.6g} s); pick a "
            f"start between 0 and {end_s:.6g}"
        )
    timeline(report or trace, start_s=args.start, end_s=args.end, ipus=args.ipus, path=args.output)
    print(args.output)
    return 0


# ---------------------------------------------------------------------- sweep, validate, plan
def _lazy(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported on the first call (a verb's module loads only for that verb)."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    return call


# ---------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Verb:
    """One ``ipusim`` verb.

    Attributes:
        name: what the user types.
        help: one line for ``ipusim --help``.
        arguments: adds the verb's arguments to its sub-parser (may import the verb's module).
        run: runs the verb from the parsed arguments and returns the exit status.
        description: the longer text of ``ipusim VERB --help`` (default: ``help``).
    """

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None] | None
    run: Callable[[argparse.Namespace], int]
    description: str = ""


VERBS: tuple[Verb, ...] = (
    Verb(
        "demo",
        "train the seed MLP on a simulated GC200 (MNIST if found, else synthetic)",
        _demo_arguments,
        _demo,
    ),
    Verb("systems", "list the system presets and their key figures", None, _systems),
    Verb(
        "run",
        "run an unmodified IPU TensorFlow 2 script on ipusim and save each simulation's report "
        "(trace.json, summary) under ./ipusim_run/<script>/",
        _run_arguments,
        _run,
        "Run SCRIPT with its tensorflow / keras imports resolved to ipusim.compat (this process "
        "only). -o and --system may also follow SCRIPT; arguments after `--` go to the script "
        "untouched (`ipusim run train.py -- -o X` passes -o X to train.py).",
    ),
    Verb(
        "report",
        "print the summary of a saved report or trace",
        _report_arguments,
        _report,
        "Print the text summary of a report folder (as written by ipusim demo / Report.save), "
        "of every report in the folder ipusim run prints, or the utilisation of a trace .npz.",
    ),
    Verb(
        "view",
        "write one self-contained HTML view of a report (opens offline)",
        _view_arguments,
        _view,
        "Write FOLDER/view.html (or -o FILE): the summary, the zoomable timeline, utilisation, "
        "memory per IPU and per tile, liveness and the top compute sets, in one file with no "
        "network access.",
    ),
    Verb(
        "compare",
        "two saved reports side by side, with the differences named",
        _compare_arguments,
        _compare,
        "Throughput, simulated time, utilisation, memory, bottleneck and top compute sets of "
        "report folders A and B, and what differs between them.",
    ),
    Verb(
        "plan",
        "search a workload's configurations for the fastest that fits",
        _lazy("ipusim.plan.cli", "add_arguments"),
        _lazy("ipusim.plan.cli", "main_plan"),
    ),
    Verb(
        "plot",
        "draw a report's timeline (PopVision-style) or all its figures",
        _plot_arguments,
        _plot,
        "With -o FILE (.png or .svg): the per-IPU execution timeline of a report folder or "
        "trace .npz, optionally zoomed. Without -o: every figure of the report (timeline, "
        "utilisation, memory, tile memory) into --folder.",
    ),
    Verb(
        "sweep",
        "run a study over many configurations (local processes or a Dask cluster), resumable",
        _lazy("ipusim.sweep.cli", "add_sweep_arguments"),
        _lazy("ipusim.sweep.cli", "main_sweep"),
    ),
    Verb(
        "validate",
        "simulate the calibration set and compare with the published throughputs",
        _lazy("validation.cli", "add_arguments"),
        _lazy("validation.cli", "run"),
        "Simulate every row of validation/rows (published IPU throughputs with their "
        "configurations) timing-only and print predicted against measured, the signed error, "
        "what bounds each run, the leave-one-out errors of the constants fitted to the table, "
        "and the rows ipusim cannot express. See docs/validation.md.",
    ),
)


def _version() -> str:
    from ipusim import __version__

    return __version__


def build_parser(verbs: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The command-line parser.

    Args:
        verbs: the verbs whose arguments to add (their modules may be imported); None adds
            every verb's (for documentation and tests). The others are listed with their help.
    """
    parser = argparse.ArgumentParser(
        prog="ipusim", description="Simulate Graphcore IPU systems running Keras models."
    )
    parser.add_argument("--version", action="version", version=f"ipusim {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")
    for row in VERBS:
        child = sub.add_parser(row.name, help=row.help, description=row.description or row.help)
        if row.arguments is not None and (verbs is None or row.name in verbs):
            row.arguments(child)
        child.set_defaults(verb=row)
    return parser


def _chosen_verb(argv: Sequence[str]) -> str | None:
    names = {row.name for row in VERBS}
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in names else None
    return None


def _user_errors() -> tuple[type[BaseException], ...]:
    from ipusim.errors import IPUSimError

    errors: list[type[BaseException]] = [IPUSimError, UsageError]
    # The sweep's own error type, when the sweep ran (importing it would load pandas).
    sweep_errors = sys.modules.get("ipusim.sweep.errors")
    if sweep_errors is not None:
        errors.append(sweep_errors.SweepError)
    return tuple(errors)


def _disk_error(error: BaseException) -> BaseException | None:
    """A full disk or a read-only / unwritable folder met anywhere, as one clear error."""
    if not isinstance(error, OSError):
        return None
    from ipusim._files import as_disk_error

    return as_disk_error(error)


def _silence_stdout() -> None:
    """After a closed pipe: send what is left for stdout nowhere, so Python's final flush does
    not fail again (the recipe of the Python documentation on SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ipusim`` command with ``argv`` (default ``sys.argv[1:]``); return its status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen_verb(argv)
    args = build_parser(() if chosen is None else (chosen,)).parse_args(argv)
    args.argv = argv
    verb = args.verb.name
    try:
        status: int = args.verb.run(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # `ipusim systems | head`: the reader has seen enough
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        print(f"ipusim {verb}: interrupted", file=sys.stderr)
        return 130
    except _user_errors() as error:
        print(f"ipusim {verb}: {error}", file=sys.stderr)
        return USER_ERROR
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as error:
        print(f"ipusim {verb}: {_disk_error(error) or error}", file=sys.stderr)
        return USER_ERROR
    except Exception as error:
        disk = _disk_error(error)
        if disk is not None:  # a full disk or a read-only folder: the user's to fix
            print(f"ipusim {verb}: {disk}", file=sys.stderr)
            return USER_ERROR
        traceback.print_exc()
        print(
            f"ipusim {verb}: this is a bug in ipusim {_version()}, not a mistake of yours. "
            "Please report it with the traceback above and the command you ran.",
            file=sys.stderr,
        )
        return INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
