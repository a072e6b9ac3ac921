"""ipusim against TensorFlow's Keras (tf-keras 2, the Keras of IPU TensorFlow), in float32.

The references are .npz fixtures written by bench/tf_parity/generate.py in a separate
TensorFlow environment; nothing here imports TensorFlow. Tolerances are relative to the largest
reference value of each array (see ``tf_parity_cases.relative_error``): float32 rounding in a
different order stays far below them, a formula that differs from TensorFlow's does not.
"""

from __future__ import annotations

import numpy as np
import pytest
import tf_parity_cases as parity

#: Worst relative error allowed per group (float32 results of different summation orders).
TOLERANCE = {"layers": 1e-5, "losses": 1e-5, "optimizers": 1e-5, "metrics": 1e-6}
#: The issue's target: every step's loss within 1e-5 of TensorFlow's over 64 steps.
LOSS_PER_STEP = 1e-5
#: Final weights after 64 steps (sampled entries and norms).
FINAL_WEIGHTS = 1e-4
#: The CNN under RMSprop and Adam (see docs/numerics.md): these runs are chaotic in float32
#: rounding (elements whose gradient nearly cancels take a first step set by their last bits,
#: then a ReLU or max-pool decision flips late in the run). TensorFlow itself, rerun with one
#: intra-op thread instead of the fixture's two, ends 2.9e-3 (RMSprop) and 6.5e-5 (Adam) from
#: the fixture (bench/tf_parity/cnn_branches.py). They meet the target over the first 40 steps.
ADAPTIVE_CNN = {"cnn/rmsprop": (40, 1e-3, 1e-2), "cnn/adam": (40, 1e-3, 1e-2)}


def _cases(group: str) -> list:
    return [pytest.param(c, id=c.name) for c in parity.load(group)]


@pytest.mark.parametrize("group", list(TOLERANCE))
def test_every_group_has_cases(group: str) -> None:
    assert len(parity.load(group)) >= 10


def _check(case, results: dict) -> None:
    bound = TOLERANCE[case.group]
    errors = {k: parity.relative_error(got, want) for k, (got, want) in results.items()}
    worst = max(errors, key=errors.get)
    assert errors[worst] <= bound, f"{case.name}/{worst}: relative error {errors[worst]:.2e}"


@pytest.mark.parametrize("case", _cases("layers"))
def test_layer_forward_and_gradients_match_tensorflow(case) -> None:
    try:
        results = parity.run_layer(case)
    except NotImplementedError as exc:  # a layer option ipusim does not have yet
        pytest.xfail(str(exc))
    expected = {"y"} | {k for k in case.arrays if k.startswith(("dx", "dw"))}
    assert expected <= set(results)
    _check(case, results)


@pytest.mark.parametrize("case", _cases("losses"))
def test_loss_value_and_gradient_match_tensorflow(case) -> None:
    _check(case, parity.run_loss(case))


@pytest.mark.parametrize("case", _cases("optimizers"))
def test_optimizer_updates_match_tensorflow(case) -> None:
    _check(case, parity.run_optimizer(case))


@pytest.mark.parametrize("case", _cases("metrics"))
def test_metric_results_match_tensorflow(case) -> None:
    _check(case, parity.run_metric(case))


def _training() -> tuple[dict, list]:
    cases = parity.load("training")
    special = {c.name: c for c in cases if c.name in ("data", "mlp/init", "cnn/init")}
    runs = [c for c in cases if c.name not in special]
    return special, runs


_SPECIAL, _RUNS = _training()


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.meta["model"] == "cnn" else [])
        for c in _RUNS
    ],
)
def test_64_training_steps_match_tensorflow(case) -> None:
    initial = parity.initial_weights(_SPECIAL[f"{case.meta['model']}/init"])
    results = parity.run_training(case, _SPECIAL["data"], initial)
    got, want = results["losses"]
    assert len(got) == 64
    assert want[-1] < want[0]  # the reference really trains
    steps, whole_run, weights_bound = ADAPTIVE_CNN.get(
        case.name, (64, LOSS_PER_STEP, FINAL_WEIGHTS)
    )
    assert parity.per_step_loss_error(results, steps) <= LOSS_PER_STEP
    assert parity.per_step_loss_error(results) <= whole_run
    for key, (g, w) in results.items():
        if key != "losses":
            assert parity.relative_error(g, w) <= weights_bound, key
    np.testing.assert_array_equal(np.isfinite(got), True)
