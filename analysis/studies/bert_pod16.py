"""Study: BERT-Large on a POD16 (4 pipeline stages x 4 replicas), gradient-accumulation count x
pipeline schedule. Timing-only; plots throughput and the pipeline bubble.

Run: ``python -m analysis.studies.bert_pod16 [-j 2] [-o bert_pod16_sweep]``
(writes results.csv, throughput.png and bubble.png in the output folder; resumable).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ipusim.sweep import Study, report_row, run_sweep, save

ACCUMULATION = (8, 16, 32, 64)
SCHEDULES = ("grouped", "interleaved", "sequential")
WORKLOAD = "analysis.studies.bert_pod16:run_config"


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """One configuration: a single pipeline run (``accumulation`` micro-batches per replica)."""
    from workloads import bert

    ga = int(config["accumulation"])
    report = bert.main(
        [
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
            config["schedule"],
            "--recompute",
        ]
    )
    return report_row(report)


def study() -> Study:
    return Study.from_dict(
        {
            "workload": WORKLOAD,
            "grid": {"schedule": list(SCHEDULES), "accumulation": list(ACCUMULATION)},
            "fixed": {"micro_batch": 4},
        }
    )


#: The columns of the study's table.
COLUMNS = (
    "schedule",
    "accumulation",
    "throughput_samples_per_s",
    "bubble",
    "exposed_all_reduce_s",
    "oom",
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
    df = run_sweep(study(), out, jobs=args.jobs)
    save(df, out / "results.csv")
    figures = draw(df, out)
    print(df[[c for c in COLUMNS if c in df.columns]].to_string(index=False))
    print(f"figures: {', '.join(str(f) for f in figures)}")
    return df


if __name__ == "__main__":
    main()
