"""run_update executes the update phase's ops (the replicas' mean, observer, accumulation,
apply): walked from a graph's update nodes or run eagerly, checked against hand-computed values."""

from __future__ import annotations

import numpy as np

from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Graph
from ipusim.graph.op import get_op
from ipusim.graph.ops.update import (
    GradientAccumulator,
    Replicas,
    add_update,
    run_update,
)
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable


class _Recorder:
    """An optimizer stand-in that records what it is asked to apply."""

    slots_per_variable = 0
    update_flops_per_element = 2

    def __init__(self) -> None:
        self.iterations = 0
        self.applied: list[tuple[list[np.ndarray], list[Variable], dict]] = []

    def apply_gradients(self, pairs: list, **kwargs: object) -> None:
        self.applied.append(([np.array(g) for g, _ in pairs], [v for _, v in pairs], kwargs))
        self.iterations += 1


def test_replicas_are_averaged_then_accumulated_and_applied_once_per_window() -> None:
    var = Variable(np.zeros(2, np.float32), "w:0")
    opt = _Recorder()
    stages: list[tuple[str, list]] = []

    def observe(grads: list, variables: list, stage: str) -> None:
        stages.append((stage, [np.array(g) for g in grads]))

    acc = GradientAccumulator(2, "mean")
    calls = [
        [[np.array([1.0, 2.0], np.float32)], [np.array([3.0, 6.0], np.float32)]],  # mean 2, 4
        [[np.array([0.0, 1.0], np.float32)], [np.array([4.0, 3.0], np.float32)]],  # mean 2, 2
    ]
    kw = {"variables": [var], "optimizer": opt, "accumulator": acc, "observe": observe}
    assert run_update(None, calls[0], **kw) is None  # the window is not complete yet
    assert opt.applied == []
    assert run_update(None, calls[1], **kw) == 1  # the optimizer's iterations
    assert len(opt.applied) == 1 and opt.applied[0][1] == [var]
    np.testing.assert_array_equal(opt.applied[0][0][0], [2.0, 3.0])  # ((2, 4) + (2, 2)) / 2
    assert [s for s, _ in stages] == ["computed", "computed", "apply"]
    np.testing.assert_array_equal(stages[0][1][0], [2.0, 4.0])
    np.testing.assert_array_equal(stages[2][1][0], [2.0, 3.0])


def test_without_accumulator_each_call_applies_the_observer_replacement() -> None:
    var = Variable(np.zeros(3, np.float32), "w:0")
    opt = _Recorder()
    grad = np.array([0.1, -0.2, 0.3], np.float32)

    def observe(grads: list, variables: list, stage: str) -> list | None:
        return [2 * g for g in grads] if stage == "computed" else None

    for _ in range(2):
        run_update(None, [[grad]], variables=[var], optimizer=opt, observe=observe)
    assert len(opt.applied) == 2
    for grads, _, kwargs in opt.applied:
        np.testing.assert_array_equal(grads[0], 2 * grad)
        assert kwargs == {}


def test_sum_accumulation_applies_the_sum_of_the_window() -> None:
    var = Variable(np.zeros(1, np.float32), "w:0")
    opt = _Recorder()
    acc = GradientAccumulator(3, "sum")
    for value in (0.5, 1.25, 2.0, 4.0):
        grads = [[np.array([value], np.float32)]]
        run_update(None, grads, variables=[var], optimizer=opt, accumulator=acc)
    assert len(opt.applied) == 1  # the fourth gradient starts the next window
    np.testing.assert_array_equal(opt.applied[0][0][0], [3.75])


def _update_graph(variables: list[Variable], opt: _Recorder, acc: GradientAccumulator | None):
    graph = Graph()
    grads = [graph.placeholder(TensorSpec(v.shape, "float32"), "g") for v in variables]
    with graph.phase("update"):
        return add_update(grads, variables, opt, acc)


def test_a_graphs_update_nodes_are_walked_with_their_attributes() -> None:
    a, b = Variable(np.zeros(2, np.float32), "a:0"), Variable(np.zeros(1, np.float32), "b:0")
    opt = _Recorder()
    done = _update_graph([a, b], opt, GradientAccumulator(2, "sum"))
    names = [n.op.name for n in done.graph.nodes if n.phase == "update"]
    assert names == ["cross_replica_mean", "accumulate_gradients", "apply_gradients"]
    replica = [np.array([1.0, 3.0], np.float32), np.array([5.0], np.float32)]
    other = [np.array([3.0, 5.0], np.float32), np.array([-1.0], np.float32)]
    run_update(done, [replica, other])  # means (2, 4) and (2)
    run_update(done, [replica, replica])  # means (1, 3) and (5)
    (grads, variables, _) = opt.applied[0]  # the node's optimizer and variables
    assert len(opt.applied) == 1 and variables == [a, b]
    np.testing.assert_array_equal(grads[0], [3.0, 7.0])
    np.testing.assert_array_equal(grads[1], [7.0])


def test_given_attributes_replace_the_nodes_and_captured_grads_reach_the_optimizer() -> None:
    var = Variable(np.zeros(1, np.float32), "w:0")
    node_opt, run_opt = _Recorder(), _Recorder()
    done = _update_graph([var], node_opt, None)
    captured = {"t": np.ones(1, np.float32)}
    run_update(done, [[np.array([0.5], np.float32)]], optimizer=run_opt, captured_grads=captured)
    assert node_opt.applied == [] and len(run_opt.applied) == 1
    assert run_opt.applied[0][2] == {"captured_grads": captured}


def test_the_mean_node_averages_replicas_and_passes_one_replicas_gradient_through() -> None:
    mean = get_op("cross_replica_mean")
    grad = np.array([1.0, 2.0], np.float32)
    (same,) = mean.forward(ExecContext(), grad, variables=[None])
    np.testing.assert_array_equal(same, grad)
    values = Replicas((grad, np.array([2.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)))
    (averaged,) = mean.forward(ExecContext(), values, variables=[None])
    np.testing.assert_allclose(averaged, [1.0, 1.0], rtol=0, atol=1e-7)
    assert averaged.dtype == np.float32
