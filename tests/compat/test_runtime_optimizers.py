"""The IPU optimizer wrappers (reference §5): accumulation over N mini-batches with SUM / MEAN /
RUNNING_MEAN, the replica mean of CrossReplicaOptimizer in replicated loops, and their checks."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.compat.runtime import loops, ops
from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.optimizers import (
    CrossReplicaGradientAccumulationOptimizerV2,
    CrossReplicaOptimizer,
    GradientAccumulationOptimizer,
    GradientAccumulationOptimizerV2,
    MapGradientOptimizer,
)
from ipusim.compat.runtime.tape import GradientTape
from ipusim.config import reset_ipu_configuration
from ipusim.data import Dataset
from ipusim.graph.variable import Variable
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod
from ipusim.strategy import IPUStrategy


def _configure(ipus: int) -> None:
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = ipus
    cfg.configure_ipu_system()


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()


GRADS = [np.array([1.0, -2.0]), np.array([3.0, 4.0]), np.array([-1.0, 0.5])]


@pytest.mark.parametrize(
    ("method", "combine"),
    [
        (GradientAccumulationReductionMethod.SUM, lambda g: np.sum(g, axis=0)),
        (GradientAccumulationReductionMethod.MEAN, lambda g: np.mean(g, axis=0)),
        ("running_mean", lambda g: np.mean(g, axis=0)),
    ],
)
def test_accumulation_applies_once_every_n_mini_batches(method, combine):
    w = Variable(np.array([1.0, 1.0], np.float32), "acc_w:0")
    opt = GradientAccumulationOptimizerV2(keras.optimizers.SGD(0.5), 3, reduction_method=method)
    for grad in GRADS[:2]:
        opt.apply_gradients([(grad.astype(np.float32), w)])
        np.testing.assert_array_equal(w.numpy(), [1.0, 1.0])  # nothing applied yet
    opt.apply_gradients([(GRADS[2].astype(np.float32), w)])
    np.testing.assert_allclose(w.numpy(), 1.0 - 0.5 * combine(GRADS), rtol=1e-6)
    opt.apply_gradients([(GRADS[0].astype(np.float32), w)])  # a new window starts empty
    np.testing.assert_allclose(w.numpy(), 1.0 - 0.5 * combine(GRADS), rtol=1e-6)


def test_wrapper_checks():
    sgd = keras.optimizers.SGD()
    with pytest.raises(ValueError, match="num_mini_batches must be a positive number"):
        GradientAccumulationOptimizerV2(sgd, 0)
    with pytest.raises(
        ValueError, match="reduction_method must be set to SUM, MEAN or RUNNING_MEAN"
    ):
        GradientAccumulationOptimizerV2(sgd, 2, reduction_method="median")
    with pytest.raises(TypeError, match="must be an optimizer"):
        CrossReplicaOptimizer("sgd")
    with pytest.raises(TypeError, match="only wraps gradient descent"):
        GradientAccumulationOptimizer(keras.optimizers.Adam(), 2)
    combined = CrossReplicaGradientAccumulationOptimizerV2(sgd, 4)
    assert isinstance(combined.opt, CrossReplicaOptimizer) and combined.opt.opt is sgd
    assert combined.num_mini_batches == 4


def test_map_gradient_optimizer_maps_before_the_update():
    w = Variable(np.array([0.0], np.float32), "map_w:0")
    opt = MapGradientOptimizer(keras.optimizers.SGD(1.0), lambda g, v: g * 2.0)
    opt.apply_gradients([(np.array([1.5], np.float32), w)])
    np.testing.assert_array_equal(w.numpy(), [-3.0])


def test_map_gradient_optimizer_inside_accumulation_maps_the_accumulated_gradient():
    # IPU TensorFlow's accumulation wrapper calls the inner apply_gradients on the sum of the
    # mini-batch gradients, so a clipping map sees 1.5 + 1.5 = 3 and clips it to 2.
    w = Variable(np.array([0.0], np.float32), "map_acc_w:0")
    clip = MapGradientOptimizer(keras.optimizers.SGD(1.0), lambda g, v: np.minimum(g, 2.0))
    opt = GradientAccumulationOptimizerV2(clip, num_mini_batches=2)
    opt.apply_gradients([(np.array([1.5], np.float32), w)])
    np.testing.assert_array_equal(w.numpy(), [0.0])
    opt.apply_gradients([(np.array([1.5], np.float32), w)])
    np.testing.assert_array_equal(w.numpy(), [-2.0])


def _linear_loop(optimizer, ipus: int, iterations: int):
    """Train w in loss = mean((w x - t)^2) on elements (x_i, t_i); return w, losses and data."""
    _configure(ipus)
    xs = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5], [2.0, 1.0]], np.float32)
    ts = np.array([[2.0, 1.0], [0.0, 1.0], [1.0, -2.0], [1.0, 1.0]], np.float32)
    w = ops.Variable(np.float32(0.5))
    losses = IPUOutfeedQueue()
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices((xs, ts)))

    def body(x, t):
        with GradientTape() as tape:
            loss = ops.reduce_mean(ops.square(w * x - t))
        (grad,) = tape.gradient(loss, [w])
        optimizer.apply_gradients([(grad, w)])
        return losses.enqueue(loss)

    IPUStrategy().run(function(lambda: loops.repeat(iterations, body, [], infeed)))
    return float(w.numpy()), losses.dequeue(), xs.astype(np.float64), ts.astype(np.float64)


def _grad(w, x, t):
    return np.mean(2 * (w * x - t) * x)


def test_cross_replica_optimizer_applies_the_mean_of_the_replicas_gradients():
    w, losses, xs, ts = _linear_loop(CrossReplicaOptimizer(keras.optimizers.SGD(0.1)), 2, 2)
    assert losses.shape == (2, 2)  # (iterations, replicas)
    expected = 0.5
    for i in range(2):  # replica r reads element 2 i + r
        grads = [_grad(expected, xs[2 * i + r], ts[2 * i + r]) for r in range(2)]
        expected -= 0.1 * np.mean(grads)
    np.testing.assert_allclose(w, expected, rtol=1e-6)


def test_cross_replica_accumulation_combines_once_per_n():
    opt = CrossReplicaGradientAccumulationOptimizerV2(keras.optimizers.SGD(0.1), 2)
    w, _, xs, ts = _linear_loop(opt, 2, 2)
    grads = [_grad(0.5, xs[k], ts[k]) for k in range(4)]
    # Both iterations see w = 0.5; the replica means of the two iterations are summed.
    expected = 0.5 - 0.1 * (np.mean(grads[0:2]) + np.mean(grads[2:4]))
    np.testing.assert_allclose(w, expected, rtol=1e-6)


def test_a_replicated_loop_without_a_cross_replica_optimizer_is_refused():
    with pytest.raises(RuntimeError, match="CrossReplicaOptimizer"):
        _linear_loop(keras.optimizers.SGD(0.1), 2, 1)


def test_accumulation_in_a_loop_is_simulated_with_one_update_per_window():
    opt = GradientAccumulationOptimizerV2(keras.optimizers.SGD(0.1), 2)
    _configure(1)
    strategy = IPUStrategy()
    w = ops.Variable(np.ones(3, np.float32))
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(np.ones((4, 3), np.float32)))

    def body(x):
        with GradientTape() as tape:
            loss = ops.reduce_sum(w * x)
        return opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    strategy.run(function(lambda: loops.repeat(4, body, [], infeed)))
    np.testing.assert_allclose(w.numpy(), 1.0 - 0.1 * 2 * 2)  # two updates of 2 summed ones
    trace = strategy.last_simulation.trace.to_dataframe()
    assert (trace["phase"] == "weight-update").any()
    updates = trace[(trace["op"] == "weight_update") & (trace["track"] == "compute")]
    assert sorted(set(updates["step"])) == [1, 3]


def test_a_loop_times_its_update_from_the_update_ops_with_the_inner_optimizers_cost():
    adam = keras.optimizers.Adam(0.1)
    opt = GradientAccumulationOptimizerV2(adam, 2)
    _configure(1)
    strategy = IPUStrategy()
    w = ops.Variable(np.ones((5, 3), np.float32))
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(np.ones((4, 3), np.float32)))
    handles = []

    def body(x):
        with GradientTape() as tape:
            loss = ops.reduce_sum(w * x)
        done = opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        handles.append(done)
        return done

    strategy.run(function(lambda: loops.repeat(4, body, [], infeed)))
    graph = handles[0].symbol.graph
    names = [n.op.name for n in graph.nodes if n.op.name.endswith("_gradients")]
    assert names == ["accumulate_gradients", "apply_gradients"]
    trace = strategy.last_simulation.trace.to_dataframe()
    update = trace[(trace["op"] == "weight_update") & (trace["track"] == "compute")]
    # Adam's FLOPs per element (not the wrapper's, not the default 2) over 15 elements
    assert set(update["flops"]) == {15 * adam.update_flops_per_element}
