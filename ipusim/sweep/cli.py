"""``ipusim sweep STUDY.toml [-o OUT] [-j N] [--scheduler tcp://HOST:PORT] [--no-resume]``.

:func:`add_sweep_arguments` fills a sub-parser; :func:`main_sweep` runs the parsed command.
``python -m ipusim.sweep.cli STUDY.toml ...`` runs it on its own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_sweep_arguments", "build_parser", "main", "main_sweep"]

_FORMATS = ("parquet", "csv")


def add_sweep_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``sweep`` command's arguments to ``parser`` and make it call :func:`main_sweep`."""
    parser.add_argument("study", help="study TOML file (workload and [grid] or [[configs]])")
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help="output folder for the per-configuration results and the table "
        "(default: ./<study name>_sweep)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="local worker processes (default: the CPU count; 1 runs in this process)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="tcp://HOST:PORT",
        help="run on the Dask distributed cluster with this scheduler (needs `distributed`)",
    )
    parser.add_argument(
        "--no-resume",
        dest="resume",
        action="store_false",
        help="run every configuration again instead of reading results already in the output",
    )
    parser.add_argument(
        "--format",
        choices=_FORMATS,
        default="parquet",
        help="table format (default parquet; CSV, with a note, when pyarrow is not installed)",
    )
    parser.add_argument(
        "--no-progress", dest="progress", action="store_false", help="print no progress bar"
    )
    parser.set_defaults(func=main_sweep)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser for the sweep command."""
    parser = argparse.ArgumentParser(
        prog="ipusim sweep",
        description="Run a study's configurations (resumable) and write one table row each.",
    )
    return add_sweep_arguments(parser)


def main_sweep(args: argparse.Namespace) -> int:
    """Run the sweep described by parsed arguments.

    Writes ``OUT/results.parquet`` (or ``.csv``) and prints where. Returns 0 when every
    configuration ran (out-of-memory ones included), 1 when some raised an error or killed their
    worker process, 2 when the study or the options are invalid (the message goes to stderr),
    130 after Ctrl-C and 143 after SIGTERM (finished configurations are kept; the workers are
    stopped).
    """
    from ipusim.errors import DiskWriteError
    from ipusim.sweep.errors import SweepError
    from ipusim.sweep.figures import save
    from ipusim.sweep.interrupts import Terminated
    from ipusim.sweep.printing import summary_table
    from ipusim.sweep.runner import run_sweep
    from ipusim.sweep.study import Study

    progress = getattr(args, "progress", True)
    output = Path(args.output or f"{Path(args.study).stem}_sweep")
    try:
        study = Study.from_toml(args.study)
        frame = run_sweep(
            study,
            output,
            jobs=args.jobs,
            scheduler=args.scheduler,
            progress=progress,
            resume=args.resume,
        )
    except (SweepError, FileNotFoundError, DiskWriteError) as exc:
        print(f"ipusim sweep: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        why = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        print(
            f"ipusim sweep: {why}; the finished configurations are kept in "
            f"{str(output / 'configs')!r}; run the same command again to run the rest",
            file=sys.stderr,
        )
        return exc.code if isinstance(exc, Terminated) else 130
    try:
        table = save(frame, output / f"results.{getattr(args, 'format', 'parquet')}")
    except DiskWriteError as exc:
        print(f"ipusim sweep: error: {exc}", file=sys.stderr)
        return 2
    if progress:
        print(summary_table(frame, study.keys))
    print(f"{len(frame)} configurations: {table}")
    return 1 if (frame["error"] != "").any() else 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run :func:`main_sweep`."""
    return main_sweep(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
