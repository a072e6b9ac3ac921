"""The planner against the hand-tuned rows BERT-Large POD16 (B1, B4), BERT-Base (B7) and
ResNet-50 POD16 (R2, G5): the planner's best simulated throughput, the row's simulated throughput (run as validation runs it), search time and
candidates evaluated. Writes bench/results/plan.json.

Run: ``PYTHONPATH=. python bench/bench_plan.py [--budget-s 60]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ipusim.plan import profile
from ipusim.plan.search import _candidates, plan
from validation.rows import load_rows
from validation.run import run_row

#: Only the model (and its optimizer), the system and the global batch go to the planner.
MODEL_KEYS = ("size", "sequence", "masked", "vocab", "optimizer", "batch-norm-group", "image-size")


def compare(row_id: str, budget_s: float) -> dict[str, object]:
    (row,) = load_rows(None, [row_id])
    a = row.args
    batch = int(a["micro-batch"]) * int(a["accumulation"]) * int(a["replicas"])
    t0 = time.perf_counter()
    hand = run_row(row)
    hand_s = time.perf_counter() - t0
    model = {k: a[k] for k in MODEL_KEYS if k in a}
    profiled = profile.profile_seconds()
    result = plan(
        row.workload, str(a["system"]), batch, model, str(a["precision"]), budget_s=budget_s
    )
    profiled = profile.profile_seconds() - profiled
    # The estimates alone (profiles cached): pure arithmetic per candidate.
    t0 = time.perf_counter()
    again = _candidates(row.workload, model, str(a["system"]), batch, str(a["precision"]))
    estimate_s = time.perf_counter() - t0
    fitting = result.table[result.table["fits"]]
    best = fitting.iloc[0] if len(fitting) else None
    # Simulated samples per second (the row's items_per_sample scales both alike).
    return {
        "row": row_id,
        "system": a["system"],
        "global_batch": batch,
        "hand_tuned_samples_per_s": hand.predicted / row.items_per_sample,
        "hand_tuned_fits": hand.memory_fits,
        "hand_tuned_run_s": round(hand_s, 2),
        "planner_best_samples_per_s": float(best["throughput"]) if best is not None else None,
        "planner_best": best["summary"] if best is not None else None,
        "planner_best_memory_used": float(best["memory_used"]) if best is not None else None,
        "search_s": round(result.seconds, 1),
        "candidates_estimated": result.estimated,
        "candidates_simulated": result.simulated,
        "profile_s": round(profiled, 1),
        "estimate_s": round(estimate_s, 4),
        "estimates_per_minute": round(len(again) * 60 / estimate_s),
        # The whole search's pace: candidates estimated and simulated per minute of search.
        "evaluations_per_minute": round(
            60 * (result.estimated + result.simulated) / result.seconds, 1
        ),
        "budget_s": budget_s,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--budget-s", type=float, default=60.0)
    p.add_argument("rows", nargs="*", default=["B4", "B1", "B7", "R2", "G5", "B4-pod64"])
    args = p.parse_args()
    out = [compare(r, args.budget_s) for r in args.rows]
    path = Path(__file__).parent / "results" / "plan.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"machine_cores": os.cpu_count(), "rows": out}, indent=1) + "\n")
    os.replace(tmp, path)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
