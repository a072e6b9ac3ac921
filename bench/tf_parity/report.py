"""Worst relative error of ipusim against the TensorFlow Keras fixtures, per group.

Run: ``python bench/tf_parity/report.py`` (no TensorFlow needed; writes
bench/results/tf_parity.json and prints a table). Uses the same comparisons as
tests/numerics/test_tf_parity.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "numerics"))
sys.path.insert(0, str(ROOT / "bench"))

import tf_parity_cases as parity  # noqa: E402
from _timing import markdown_table  # noqa: E402


def main() -> None:
    summary: dict[str, dict] = {}
    for group, runner in parity.RUNNERS.items():
        worst, where, count, skipped = 0.0, "", 0, []
        for case in parity.load(group):
            try:
                results = runner(case)
            except NotImplementedError:
                skipped.append(case.name)
                continue
            count += 1
            for key, (got, want) in results.items():
                error = parity.relative_error(got, want)
                if error > worst:
                    worst, where = error, f"{case.name}/{key}"
        summary[group] = {"cases": count, "not_supported": skipped, "worst": worst, "where": where}
    cases = parity.load("training")
    special = {c.name: c for c in cases if c.name in ("data", "mlp/init", "cnn/init")}
    runs = {}
    for case in cases:
        if case.name in special:
            continue
        initial = parity.initial_weights(special[f"{case.meta['model']}/init"])
        results = parity.run_training(case, special["data"], initial)
        weights = max(parity.relative_error(g, w) for k, (g, w) in results.items() if k != "losses")
        runs[case.name] = {
            "loss_per_step_worst": parity.per_step_loss_error(results),
            "loss_per_step_worst_first_32": parity.per_step_loss_error(results, 32),
            "final_weights_worst": weights,
        }
    summary["training"] = {"cases": len(runs), "runs": runs}
    out = ROOT / "bench" / "results" / "tf_parity.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    rows = [
        [g, s["cases"], f"{s['worst']:.2e}", s["where"]]
        for g, s in summary.items()
        if g != "training"
    ]
    print(markdown_table(["group", "cases", "worst relative error", "where"], rows))
    print()
    print(
        markdown_table(
            ["training run (64 steps)", "worst per-step loss error", "steps 1-32", "final weights"],
            [
                [
                    name,
                    f"{r['loss_per_step_worst']:.2e}",
                    f"{r['loss_per_step_worst_first_32']:.2e}",
                    f"{r['final_weights_worst']:.2e}",
                ]
                for name, r in runs.items()
            ],
        )
    )


if __name__ == "__main__":
    main()
