"""The ``ipusim`` verbs that read saved reports: ``report`` (the summary, ``--top-ops``),
``compare A B`` and ``view FOLDER`` (see :mod:`ipusim.cli` for the table of verbs).

Like the rest of the command line they import pandas and matplotlib only when they run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ipusim._cli_errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ipusim.trace import Report


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        help="report folder (ipusim demo, Report.save), an ipusim run output folder, or a "
        "trace .npz",
    )
    parser.add_argument(
        "--top-ops",
        type=int,
        nargs="?",
        const=10,
        default=None,
        metavar="N",
        help="also list each IPU's N compute sets that take the most compute and exchange time, "
        "and its N largest memory items (default N: 10)",
    )


def _is_report_folder(path: Path) -> bool:
    return (path / "report.json").is_file()


def _report_folders(path: Path) -> list[Path]:
    """The report folders ``ipusim run`` wrote into ``path`` (``01-fit``, ``02-evaluate`` ...)."""
    return sorted(p for p in path.iterdir() if p.is_dir() and _is_report_folder(p))


def _print_report(report: Report, top: int | None) -> None:
    print(report.summary())
    if top is not None:
        from ipusim.trace.top_ops import format_top_ops

        print()
        print(format_top_ops(report, top))


def _one_report(path: str) -> Report:
    from ipusim.trace import Report

    folder = Path(path)
    if _is_report_folder(folder):
        return Report.load(folder)
    folders = _report_folders(folder) if folder.is_dir() else []
    if len(folders) == 1:
        return Report.load(folders[0])
    raise UsageError(
        f"{path!r} is not one report: give a folder with a report.json (ipusim demo, "
        "Report.save, or one NN-kind folder of an ipusim run output)"
        + (f"; it holds {len(folders)}: {', '.join(f.name for f in folders)}" if folders else "")
    )


def _compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", help="the first report folder (A)")
    parser.add_argument("b", help="the second report folder (B)")


def _compare(args: argparse.Namespace) -> int:
    from ipusim.trace.compare import format_comparison

    print(format_comparison(_one_report(args.a), _one_report(args.b), (args.a, args.b)))
    return 0


def _view_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="report folder (ipusim demo, Report.save, ipusim run)")
    parser.add_argument(
        "-o", "--output", default=None, help="the HTML file (default: FOLDER/view.html)"
    )


def _view(args: argparse.Namespace) -> int:
    # matplotlib lives in `analysis` only; importing it here keeps `import ipusim` light.
    from analysis.view import write_view

    folder = Path(args.folder)
    if not _is_report_folder(folder):
        raise UsageError(f"{args.folder!r} holds no report.json; give one report folder")
    path = write_view(folder, args.output)
    print(f"view: {path} (one self-contained HTML file; opens offline)")
    return 0


def _report(args: argparse.Namespace) -> int:
    from ipusim.trace import Report, Trace, utilisation

    path = Path(args.path)
    top = getattr(args, "top_ops", None)
    if top is not None and top < 1:
        raise UsageError(f"--top-ops must be at least 1; got {top}")
    if path.is_dir():
        if _is_report_folder(path):
            _print_report(Report.load(path), top)
            return 0
        folders = _report_folders(path)
        if not folders:
            raise UsageError(
                f"{str(path)!r} holds no report: give a folder with a report.json (written by "
                "ipusim demo, ipusim run or Report.save), the folder ipusim run printed, or a "
                "trace .npz"
            )
        for i, folder in enumerate(folders):
            if i:
                print()
            print(f"== {folder}")
            _print_report(Report.load(folder), top)
        return 0
    if not path.exists():
        raise UsageError(
            f"nothing at {str(path)!r}; give a report folder (e.g. ipusim_demo, or the folder "
            "ipusim run printed) or a trace .npz"
        )
    if path.suffix != ".npz":
        raise UsageError(
            f"{str(path)!r} is a {path.suffix or 'suffix-less'} file; give a report folder or a "
            "trace .npz (Trace.save, or trace.npz inside a report folder)"
        )
    trace = Trace.load(path)
    print(f"trace {path}: {len(trace):,} records, {trace.end_ps / 1e12 * 1e3:.3f} ms")
    print(utilisation(trace).to_string(index=False))
    return 0
