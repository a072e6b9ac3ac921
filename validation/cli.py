"""``ipusim validate``: every calibration row, predicted against measured, with leave-one-out
errors for the constants fitted to the table."""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipusim._files import write_text_atomic
from validation.fit import FITTED, CrossValidation, cross_validate
from validation.rows import Row, load_rows
from validation.run import Outcome, run_row
from validation.uncertainty import (
    ConstantRange,
    HostRange,
    constant_ranges,
    format_constant_ranges,
    format_ranges,
    host_range,
    is_host_bound,
)


@dataclass(frozen=True)
class Table:
    """The validation's results.

    Attributes:
        outcomes: one per expressible row, in row order.
        loo: row id -> leave-one-out predicted throughput, for rows a constant was fitted to.
        skipped: rows ipusim cannot express, with their reasons.
        fits: the cross-validation of each fitted constant.
        crossval: whether the leave-one-out refits ran (without them there are no LOO errors).
        host_ranges: host-bound rows' predictions across their system's host presets
            (``validation.uncertainty``).
        constant_ranges: rows' predictions at the ends of the fitted constants' leave-one-out
            values, for the rows those constants were not fitted to.
    """

    outcomes: list[Outcome]
    loo: dict[str, float]
    skipped: list[Row]
    fits: list[CrossValidation]
    crossval: bool = True
    host_ranges: dict[str, HostRange] = field(default_factory=dict)
    constant_ranges: list[ConstantRange] = field(default_factory=list)

    def loo_error(self, outcome: Outcome) -> float:
        """The row's error with every constant fitted without it (its in-sample error when no
        constant was fitted to it); NaN when the refits did not run."""
        if not self.crossval:
            return math.nan
        predicted = self.loo.get(outcome.row.id, outcome.predicted)
        return predicted / outcome.row.measured - 1.0

    @property
    def median_abs_error(self) -> float:
        return statistics.median(abs(o.error) for o in self.outcomes)

    @property
    def max_abs_error(self) -> float:
        return max(abs(o.error) for o in self.outcomes)

    @property
    def loo_median_abs_error(self) -> float:
        errors = [abs(self.loo_error(o)) for o in self.outcomes]
        finite = [e for e in errors if math.isfinite(e)]
        return statistics.median(finite) if finite else math.nan


def validate(
    rows: Sequence[Row], reduced: bool = False, crossval: bool = True, log: Any = None
) -> Table:
    """Run every expressible row (and the cross-validation of the fitted constants)."""
    outcomes = []
    for row in rows:
        if not row.expressible:
            continue
        start = time.perf_counter()
        outcomes.append(run_row(row, reduced))
        if log:
            log(f"  {row.id}: {time.perf_counter() - start:.1f} s")
    loo: dict[str, float] = {}
    fits = []
    if crossval:
        runner = lambda r, overrides: run_row(r, reduced, overrides)  # noqa: E731
        for constant in FITTED:
            if not any(r.id in constant.rows and r.expressible for r in rows):
                continue
            result = cross_validate(constant, rows, runner)
            fits.append(result)
            loo.update(result.loo_predicted)
    runner = lambda r, overrides: run_row(r, reduced, overrides)  # noqa: E731
    ranges = {o.row.id: host_range(o, runner) for o in outcomes if is_host_bound(o)}
    spans = constant_ranges(fits, outcomes, runner)
    skipped = [r for r in rows if not r.expressible]
    return Table(outcomes, loo, skipped, fits, crossval, ranges, spans)


def _percent(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{100 * value:+.1f}%"


def _memory(outcome: Any) -> str:
    """The fullest IPU's share of its memory (total or busiest tile, whichever is fuller), and
    whether it fitted only with a warning."""
    if not math.isfinite(outcome.memory_used):
        return "-"
    text = f"{100 * outcome.memory_used:.0f}%"
    return f"{text} (warning)" if outcome.memory_warned else text


def _rate(value: float) -> str:
    return f"{value:,.0f}"


def format_table(table: Table, markdown: bool = False) -> str:
    """The table as aligned text (or Markdown)."""
    header = [
        "row",
        "measured",
        "predicted",
        "error",
        "LOO error",
        "bound by",
        "host",
        "memory",
        "dominant terms",
    ]
    lines = []
    rows = []
    for o in table.outcomes:
        terms = ", ".join(f"{name} {100 * share:.0f}%" for name, share in o.dominant(3))
        rows.append(
            [
                o.row.id,
                _rate(o.row.measured),
                _rate(o.predicted),
                _percent(o.error),
                _percent(table.loo_error(o)),
                o.bound,
                o.host,
                _memory(o),
                terms,
            ]
        )
    if markdown:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.append("")
    loo = (
        f", leave-one-out median |error| {100 * table.loo_median_abs_error:.1f}%"
        if table.crossval
        else " (leave-one-out refits not run)"
    )
    lines.append(
        f"median |error| {100 * table.median_abs_error:.1f}%, worst |error| "
        f"{100 * table.max_abs_error:.1f}%{loo} over {len(table.outcomes)} rows"
    )
    fitting = sum(o.memory_fits for o in table.outcomes)
    lines.append(
        f"memory: {fitting} of {len(table.outcomes)} rows pass the memory check "
        "(within budget, no OutOfMemoryWarning)"
    )
    for fit in table.fits:
        c = fit.constant
        value = "n/a" if fit.in_sample_value is None else c.text(fit.in_sample_value)
        loo = ", ".join(
            f"without {r}: {'n/a' if v is None else c.text(v)}" for r, v in fit.loo_values.items()
        )
        lines.append(
            f"fitted {c.key} = {c.text(c.value)} (refitted to rows {', '.join(c.rows)}: "
            f"{value}; {loo})"
        )
    lines += format_ranges(table.host_ranges, {o.row.id: o.row.measured for o in table.outcomes})
    lines += format_constant_ranges(table.constant_ranges)
    for row in table.skipped:
        lines.append(f"not expressible: {row.id} ({row.title}): {row.reason}")
    return "\n".join(lines)


def _finite_or_none(value: float) -> float | None:
    """JSON has no NaN: a figure that was not computed is null."""
    return value if math.isfinite(value) else None


def _range_json(r: HostRange | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "low": r.low,
        "high": r.high,
        "predictions": dict(r.predictions),
        "depends_on": list(r.depends_on),
    }


def to_json(table: Table) -> dict[str, Any]:
    """The table as plain data (for bench/results)."""
    return {
        "rows": [
            {
                "id": o.row.id,
                "title": o.row.title,
                "measured": o.row.measured,
                "predicted": o.predicted,
                "error": o.error,
                "loo_error": _finite_or_none(table.loo_error(o)),
                "bound": o.bound,
                "host": o.host,
                "host_range": _range_json(table.host_ranges.get(o.row.id)),
                "shares": o.shares,
                "fraction_of_peak": o.fraction_of_peak,
                "memory_used": _finite_or_none(o.memory_used),
                "memory_warned": o.memory_warned,
                "source": o.row.source,
            }
            for o in table.outcomes
        ],
        "median_abs_error": table.median_abs_error,
        "max_abs_error": table.max_abs_error,
        "loo_median_abs_error": _finite_or_none(table.loo_median_abs_error),
        "not_expressible": [{"id": r.id, "reason": r.reason} for r in table.skipped],
        "fitted_constant_ranges": [
            {
                "id": r.row_id,
                "key": r.key,
                "values": list(r.values),
                "predicted": list(r.predictions),
            }
            for r in table.constant_ranges
        ],
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``ipusim validate``."""
    p.add_argument("rows", nargs="*", help="row ids to run (default: all)")
    p.add_argument("--folder", default=None, help="a folder of row files (default: the packaged)")
    p.add_argument("--reduced", action="store_true", help="fewer steps per row (as CI runs it)")
    p.add_argument("--no-crossval", action="store_true", help="skip the leave-one-out refits")
    p.add_argument("--output", default=None, help="also write the table to FILE (.md or .json)")
    p.add_argument(
        "--max-median-error",
        type=float,
        default=None,
        help="exit with status 1 when the median |error| exceeds this fraction (e.g. 0.2)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the validation the parsed arguments ask for; the exit status."""
    rows = load_rows(args.folder, args.rows or None)
    log = lambda text: print(text, file=sys.stderr)  # noqa: E731
    table = validate(rows, reduced=args.reduced, crossval=not args.no_crossval, log=log)
    print(format_table(table))
    if args.output:
        path = Path(args.output)
        text = (
            json.dumps(to_json(table), indent=2)
            if path.suffix == ".json"
            else format_table(table, markdown=True)
        )
        write_text_atomic(path, text + "\n")
    if args.max_median_error is not None and table.median_abs_error > args.max_median_error:
        print(
            f"median |error| {100 * table.median_abs_error:.1f}% exceeds "
            f"{100 * args.max_median_error:.0f}%",
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="ipusim validate",
        description="Simulate every calibration row (validation/rows) and compare with the "
        "published measurement.",
    )
    add_arguments(p)
    return run(p.parse_args(argv))
