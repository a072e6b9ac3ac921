"""Worst relative error of ipusim's recurrent layers against TensorFlow's (fixtures/rnn.npz).

Run: ``python bench/tf_parity/report_rnn.py`` (no TensorFlow needed; writes
bench/results/tf_parity_rnn.json and prints a table). Uses the same comparisons as
tests/numerics/test_rnn_parity.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "numerics"))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import test_rnn_parity as rnn  # noqa: E402
import tf_parity_cases as parity  # noqa: E402
from _timing import markdown_table  # noqa: E402

from ipusim._files import write_text_atomic  # noqa: E402


def _layers() -> dict[str, dict[str, float]]:
    out = {}
    for name in rnn.LAYER_CASES:
        meta, arrays = rnn.CASES[name]
        results = rnn.run_layer(meta, arrays)
        errors = {k: parity.relative_error(g, w) for k, (g, w) in results.items()}
        out[name] = {
            "forward": max(v for k, v in errors.items() if k.startswith("y")),
            "gradients": max(v for k, v in errors.items() if not k.startswith("y")),
        }
    return out


def _training() -> dict[str, dict[str, float]]:
    out = {}
    for name in ("training/lstm_sgd", "training/lstm_adam"):
        meta, arrays = rnn.CASES[name]
        losses, weights = rnn._train(meta, arrays)
        per_step = np.abs(losses - arrays["losses"]) / np.abs(arrays["losses"])
        out[name] = {
            "loss_per_step_worst": float(per_step.max()),
            "loss_per_step_worst_first_48": float(per_step[:48].max()),
            "final_weights_worst": max(
                parity.relative_error(w, arrays[f"final{i}"]) for i, w in enumerate(weights)
            ),
        }
    return out


def main() -> None:
    layers, training = _layers(), _training()
    path = ROOT / "bench" / "results" / "tf_parity_rnn.json"
    write_text_atomic(path, json.dumps({"layers": layers, "training": training}, indent=2) + "\n")
    rows = [[n, f"{e['forward']:.1e}", f"{e['gradients']:.1e}"] for n, e in layers.items()]
    print(markdown_table(["case", "forward", "gradients"], rows))
    print()
    print(
        markdown_table(
            ["training run (64 steps)", "worst per-step loss", "steps 1-48", "final weights"],
            [
                [
                    name,
                    f"{r['loss_per_step_worst']:.2e}",
                    f"{r['loss_per_step_worst_first_48']:.2e}",
                    f"{r['final_weights_worst']:.2e}",
                ]
                for name, r in training.items()
            ],
        )
    )


if __name__ == "__main__":
    main()
