"""The figures of ``branch_report.py`` as data: ipusim's CNN training runs (as it is and with the
two diagnostic convolutions) against each TensorFlow configuration of ``cnn_branches.npz``.

Run: ``python bench/tf_parity/report_branches.py`` (no TensorFlow needed; minutes; writes
bench/results/tf_parity_branches.json, which docs/numerics.md quotes and tests/docs checks):
``errors[variant][optimizer][config]`` is the worst per-step relative loss error, and
``first_step_over[variant][optimizer]`` the first step whose error against the fixture
(``eigen_default``) exceeds :data:`FLIP` (-1: none).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import branch_report as branches_of  # noqa: E402

from ipusim.graph.ops.conv import Conv2D  # noqa: E402

parity = branches_of.parity
#: A relative loss error this large means the run took another trajectory (E: the runs that stay
#: on the fixture's trajectory are within 1e-6 at every step).
FLIP = 1e-5
OPTIMIZERS = ("sgd_momentum", "rmsprop", "adam", "adagrad")


def main() -> None:
    cases = {c.name: c for c in parity.load("training")}
    initial = parity.initial_weights(cases["cnn/init"])
    stored = np.load(parity.FIXTURES / "cnn_branches.npz")
    configs = sorted({k.split("/")[0] for k in stored.files if k != "meta"})
    original = Conv2D.__dict__["kernel"]
    errors: dict[str, dict[str, dict[str, float]]] = {}
    flips: dict[str, dict[str, int]] = {}
    for variant, gemm in branches_of.VARIANTS.items():
        # The op holds its kernel: the op's attribute is what a variant replaces.
        Conv2D.kernel = original if gemm is None else staticmethod(branches_of._conv_with(gemm))
        try:
            for name in OPTIMIZERS:
                run = parity.run_training(cases[f"cnn/{name}"], cases["data"], initial)
                got = run["losses"][0]
                per_step = {
                    c: np.abs(got - stored[f"{c}/{name}"]) / stored[f"{c}/{name}"] for c in configs
                }
                errors.setdefault(variant, {})[name] = {
                    c: float(e.max()) for c, e in per_step.items()
                }
                over = np.flatnonzero(per_step["eigen_default"] > FLIP)
                flips.setdefault(variant, {})[name] = int(over[0]) if over.size else -1
        finally:
            Conv2D.kernel = original
    result = {"errors": errors, "first_step_over": flips, "flip": FLIP}
    out = HERE.parents[1] / "bench" / "results" / "tf_parity_branches.json"
    aside = out.with_suffix(".json.tmp")
    aside.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    aside.replace(out)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
