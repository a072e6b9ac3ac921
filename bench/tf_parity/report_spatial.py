"""Worst relative error of ipusim against the spatial-layer fixture (``layers_spatial.npz``).

Run: ``python bench/tf_parity/report_spatial.py`` (no TensorFlow needed; writes
bench/results/tf_parity_spatial.json, which docs/numerics.md quotes and tests/docs checks).
Uses the comparison of tests/numerics/test_tf_parity_spatial.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "numerics"))

import tf_parity_cases as parity  # noqa: E402


def main() -> None:
    worst, where, cases = 0.0, "", 0
    for case in parity.load("layers_spatial"):
        cases += 1
        for key, (got, want) in parity.run_layer(case).items():
            error = parity.relative_error(got, want)
            if error > worst:
                worst, where = error, f"{case.name}/{key}"
    result = {"cases": cases, "worst": worst, "where": where}
    out = ROOT / "bench" / "results" / "tf_parity_spatial.json"
    aside = out.with_suffix(".json.tmp")
    aside.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    aside.replace(out)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
