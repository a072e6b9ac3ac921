"""run_update: the one path of the update's numbers (replicas' mean, observer, accumulation,
apply), checked against hand-computed values."""

from __future__ import annotations

import numpy as np

from ipusim.graph.ops.update import GradientAccumulator, run_update
from ipusim.graph.variable import Variable


def _recorder() -> tuple[list, object]:
    applied: list = []

    def apply(grads: list, variables: list) -> None:
        applied.append(([np.array(g) for g in grads], list(variables)))

    return applied, apply


def test_replicas_are_averaged_then_accumulated_and_applied_once_per_window() -> None:
    var = Variable(np.zeros(2, np.float32), "w:0")
    applied, apply = _recorder()
    stages: list[tuple[str, list]] = []

    def observe(grads: list, variables: list, stage: str) -> None:
        stages.append((stage, [np.array(g) for g in grads]))

    acc = GradientAccumulator(2, "mean")
    calls = [
        [[np.array([1.0, 2.0], np.float32)], [np.array([3.0, 6.0], np.float32)]],  # mean 2, 4
        [[np.array([0.0, 1.0], np.float32)], [np.array([4.0, 3.0], np.float32)]],  # mean 2, 2
    ]
    run_update(calls[0], [var], apply, acc, observe=observe)
    assert applied == []  # the window is not complete yet
    run_update(calls[1], [var], apply, acc, observe=observe)
    assert len(applied) == 1 and applied[0][1] == [var]
    np.testing.assert_array_equal(applied[0][0][0], [2.0, 3.0])  # ((2, 4) + (2, 2)) / 2
    assert [s for s, _ in stages] == ["computed", "computed", "apply"]
    np.testing.assert_array_equal(stages[0][1][0], [2.0, 4.0])
    np.testing.assert_array_equal(stages[2][1][0], [2.0, 3.0])


def test_without_accumulator_each_call_applies_the_observer_replacement() -> None:
    var = Variable(np.zeros(3, np.float32), "w:0")
    applied, apply = _recorder()
    grad = np.array([0.1, -0.2, 0.3], np.float32)

    def observe(grads: list, variables: list, stage: str) -> list | None:
        return [2 * g for g in grads] if stage == "computed" else None

    for _ in range(2):
        run_update([[grad]], [var], apply, observe=observe)
    assert len(applied) == 2
    for grads, _ in applied:
        np.testing.assert_array_equal(grads[0], 2 * grad)


def test_sum_accumulation_applies_the_sum_of_the_window() -> None:
    var = Variable(np.zeros(1, np.float32), "w:0")
    applied, apply = _recorder()
    acc = GradientAccumulator(3, "sum")
    for value in (0.5, 1.25, 2.0, 4.0):
        run_update([[np.array([value], np.float32)]], [var], apply, acc)
    assert len(applied) == 1  # the fourth gradient starts the next window
    np.testing.assert_array_equal(applied[0][0][0], [3.75])
