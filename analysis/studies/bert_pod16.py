"""Study: BERT-Large on a POD16 (4 pipeline stages x 4 replicas), gradient-accumulation count x
pipeline schedule. Timing-only; plots throughput and the pipeline bubble.

Run: ``python -m analysis.studies.bert_pod16 [-j 2] [-o bert_pod16_sweep]``
(writes results.csv, throughput.png and bubble.png in the output folder; resumable).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path
from typing import Any

from ipusim.sweep import Study, SweepError, report_row, run_sweep, save
from ipusim.sweep.printing import summary_table

ACCUMULATION = (8, 16, 32, 64)
SCHEDULES = ("grouped", "interleaved", "sequential")
WORKLOAD = "analysis.studies.bert_pod16:run_config"


def bert_argv(config: dict[str, Any]) -> list[str]:
    """The ``workloads/bert.py`` arguments of one configuration (one execution of
    ``accumulation`` micro-batches per replica)."""
    ga = config.get("accumulation")
    return [
        "--size",
        "large",
        "--timing-only",
        "--system",
        "POD16",
        "--stages",
        "4",
        "--replicas",
        "4",
        "--micro-batch",
        str(config.get("micro_batch", 4)),
        "--accumulation",
        str(ga),
        "--steps",
        str(ga),
        "--schedule",
        str(config.get("schedule")),
        "--recompute",
    ]


def validate_config(config: dict[str, Any]) -> None:
    """Check one configuration's values as the workload's command line does, before any runs.

    Raises:
        ValueError: (a ``ConfigurationError``) naming the bad value and what is allowed.
    """
    from workloads import bert, common

    common.parse(bert.build_parser(), bert_argv(config))


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """One configuration: a single pipeline run, its report kept quiet (the sweep prints a line
    per configuration and the table)."""
    from workloads import bert

    with contextlib.redirect_stdout(io.StringIO()):
        report = bert.main(bert_argv(config))
    return report_row(report)


run_config.validate_config = validate_config  # type: ignore[attr-defined]


def study() -> Study:
    return Study.from_dict(
        {
            "workload": WORKLOAD,
            "grid": {"schedule": list(SCHEDULES), "accumulation": list(ACCUMULATION)},
            "fixed": {"micro_batch": 4},
        }
    )


def draw(df: Any, out: Path) -> list[Path]:
    """The study's two figures (throughput and bubble against accumulation) into ``out``."""
    from analysis import throughput_curves

    throughput_curves(
        df,
        x="accumulation",
        y="throughput_samples_per_s",
        hue="schedule",
        logx=True,
        path=out / "throughput.png",
        title="BERT-Large, POD16 (4 stages x 4 replicas), fp16.16, micro-batch 4",
    )
    throughput_curves(
        df,
        x="accumulation",
        y="bubble",
        hue="schedule",
        logx=True,
        path=out / "bubble.png",
        ylabel="pipeline bubble (idle share)",
        title="BERT-Large, POD16: bubble against accumulation",
    )
    return [out / "throughput.png", out / "bubble.png"]


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="bert_pod16_sweep")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    out = Path(args.output)
    try:
        df = run_sweep(study(), out, jobs=args.jobs, stream=sys.stdout)
    except SweepError as error:
        print(f"bert_pod16: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    save(df, out / "results.csv")
    figures = draw(df, out)
    print(summary_table(df, ["schedule", "accumulation"]))
    print(f"results: {out / 'results.csv'}; figures: {', '.join(str(f) for f in figures)}")
    return df


if __name__ == "__main__":
    main()
