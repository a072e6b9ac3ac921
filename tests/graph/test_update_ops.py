"""The update phase: the one gradient-accumulation driver, its graph ops and their costs."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import ConfigurationError, IncompatibleStateError
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph, apply
from ipusim.graph.numerics import Numerics
from ipusim.graph.op import OpCost, get_op
from ipusim.graph.ops import update
from ipusim.graph.ops.update import (
    GradientAccumulator,
    accumulate_cost,
    add_update,
    cross_replica_mean,
    update_cost,
)
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.hardware import load_system

RNG = np.random.default_rng(7)
SHAPES = [(3, 5), (7,), (2, 3, 4)]


def _grads(n: int, shape: tuple[int, ...] = (6,)) -> list[np.ndarray]:
    return [RNG.standard_normal(shape).astype(np.float32) for _ in range(n)]


# ---------------------------------------------------------------------- the driver
@pytest.mark.parametrize(
    ("method", "reduce"),
    [("sum", np.sum), ("mean", np.mean), ("running_mean", np.mean)],
)
def test_a_window_gives_the_reduction_of_its_gradients(method, reduce) -> None:
    var = Variable(np.zeros(6, np.float32), "w:0")
    acc = GradientAccumulator(4, method)
    grads = _grads(8)
    results = [acc.add([g], [var]) for g in grads]
    assert [r is None for r in results] == [True, True, True, False] * 2
    for window, result in zip((grads[:4], grads[4:]), (results[3], results[7])):
        expected = reduce(np.stack(window).astype(np.float64), axis=0)
        np.testing.assert_allclose(result[0], expected, rtol=1e-6, atol=1e-6)


def test_float16_accumulators_add_in_half_precision() -> None:
    var = Variable(np.zeros(4, np.float32), "w:0")
    grads = [np.full(4, 1024.0, np.float32)] + [np.full(4, 0.375, np.float32)] * 5
    acc = GradientAccumulator(6, "sum", "float16")
    for g in grads:
        out = acc.add([g], [var])
    expected = np.float16(0)
    for g in grads:  # binary16 addition: round to nearest even after every add
        expected = np.float16(np.float32(expected) + g[0])
    assert out[0].dtype == np.float32  # the variable's dtype
    np.testing.assert_array_equal(out[0], np.full(4, np.float32(expected)))
    assert out[0][0] == 1024.0  # 0.375 is below half of 1024's half-precision spacing


def test_stochastic_rounding_of_accumulators_is_seeded(monkeypatch) -> None:
    var = Variable(np.zeros(64, np.float32), "w:0")
    grads = [np.full(64, 1024.0, np.float32), np.full(64, 0.25, np.float32)]

    def run() -> np.ndarray:
        acc = GradientAccumulator(2, "sum", lambda v: "float16")
        acc.add([grads[0]], [var], step=3)
        return acc.add([grads[1]], [var], step=3)[0]

    monkeypatch.setattr(
        update, "current_numerics", lambda: Numerics(stochastic_rounding=True, seed=11)
    )
    first, second = run(), run()
    np.testing.assert_array_equal(first, second)
    # 1024.25 lies between 1024 and 1025: stochastic rounding reaches both.
    assert set(np.unique(first)) == {1024.0, 1025.0}
    monkeypatch.setattr(update, "current_numerics", lambda: Numerics(seed=11))
    assert set(np.unique(run())) == {1024.0}


def test_accumulators_follow_the_requested_dtype() -> None:
    var = Variable(np.zeros(3, np.float16), "w:0")
    acc = GradientAccumulator(2, "sum", lambda v: "float32")
    assert acc.dtype_of(var) == ("float32", True)
    assert GradientAccumulator(2, "sum").dtype_of(var) == ("float16", False)
    acc.add([np.full(3, 1024.0)], [var])
    out = acc.add([np.full(3, 0.375)], [var])
    assert out[0].dtype == np.float16  # handed over in the variable's dtype
    assert acc.accumulators[0].dtype == np.float32
    with pytest.raises(ConfigurationError, match="SUM, MEAN or RUNNING_MEAN"):
        GradientAccumulator(2, "median")


def test_cross_replica_mean_is_the_mean_over_replicas() -> None:
    staged = [_grads(2, (3,)) for _ in range(4)]
    means = cross_replica_mean(staged)
    for index, mean in enumerate(means):
        np.testing.assert_allclose(mean, sum(s[index] for s in staged) / 4, rtol=1e-6)


# ---------------------------------------------------------------------- the front ends share it
def test_the_compat_and_keras_wrappers_accumulate_half_like_fit() -> None:
    """Before the one driver, ``ipu.optimizers.GradientAccumulationOptimizerV2`` could not hold
    a float16 accumulator at all (Numba has no float16) and Keras' wrapper kept it in float32."""
    from ipusim.compat.runtime.optimizers import GradientAccumulationOptimizerV2
    from ipusim.keras.optimizers.accumulation import GradientAccumulationOptimizer

    grads = [np.full(4, 1024.0, np.float32)] + [np.full(4, 0.375, np.float32)] * 3
    finals = []
    for make in (
        lambda opt: GradientAccumulationOptimizerV2(opt, 4, dtype="float16"),
        lambda opt: GradientAccumulationOptimizer(opt, 4, dtype="float16"),
    ):
        var = Variable(np.zeros(4, np.float32), "w:0")
        opt = make(keras.optimizers.SGD(1.0))
        for g in grads:
            opt.apply_gradients([(g, var)])
        finals.append(var.numpy())
    # 1024 + 3 * 0.375 in binary16 stays 1024 (each 0.375 rounds away); SGD lr 1: w = -1024.
    for final in finals:
        np.testing.assert_array_equal(final, np.full(4, -1024.0, np.float32))


def test_importing_compat_leaves_the_keras_optimizer_class_alone() -> None:
    before = keras.optimizers.Optimizer.__dict__["apply_gradients"]
    import ipusim.compat.runtime  # noqa: F401

    after = keras.optimizers.Optimizer.__dict__["apply_gradients"]
    assert after is before
    assert after.__module__ == "ipusim.keras.optimizers.optimizer"


def test_traced_gradients_outside_a_trace_are_refused() -> None:
    graph = Graph()
    var = Variable(np.zeros(3, np.float32), "w:0")
    grad = graph.placeholder(TensorSpec((3,), "float32"))
    with pytest.raises(IncompatibleStateError, match="outside a device function"):
        keras.optimizers.SGD(0.1).apply_gradients([(grad, var)])


# ---------------------------------------------------------------------- the ops
def test_update_ops_in_a_graph_apply_every_n_executions() -> None:
    w0 = RNG.standard_normal(5).astype(np.float32)
    var = Variable(w0.copy(), "w:0")
    graph = Graph()
    grad = graph.placeholder(TensorSpec((5,), "float32"))
    optimizer = keras.optimizers.SGD(0.5)
    done = add_update([grad], [var], optimizer, GradientAccumulator(3, "mean"))
    executor = Executor(graph, [done], [grad])
    grads = _grads(6, (5,))
    iterations = [int(executor.run([g], ExecContext(True, i))[0]) for i, g in enumerate(grads)]
    assert iterations == [0, 0, 1, 1, 1, 2]
    expected = w0.astype(np.float64)
    for window in (grads[:3], grads[3:]):
        expected -= 0.5 * np.mean(np.stack(window), axis=0)
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_apply_without_an_accumulator_updates_at_every_execution() -> None:
    var = Variable(np.ones(2, np.float32), "w:0")
    graph = Graph()
    grad = graph.placeholder(TensorSpec((2,), "float32"))
    executor = Executor(graph, [add_update([grad], [var], keras.optimizers.SGD(0.25))], [grad])
    for _ in range(2):
        executor.run([np.full(2, 2.0, np.float32)])
    np.testing.assert_array_equal(var.numpy(), np.zeros(2, np.float32))  # 1 - 2 * 0.25 * 2


def test_op_specs() -> None:
    var16 = Variable(np.zeros((2, 3), np.float16), "a:0")
    acc = GradientAccumulator(2, "sum")
    spec = TensorSpec((2, 3), "float16")
    assert get_op("accumulate_gradients").infer(spec, accumulator=acc, variables=[var16]) == (
        TensorSpec((2, 3), "float16"),
    )
    opt = keras.optimizers.Adam()
    assert get_op("apply_gradients").infer(spec, optimizer=opt, variables=[var16]) == TensorSpec(
        (), "int64"
    )


# ---------------------------------------------------------------------- costs
def _lowering_costs(monkeypatch, optimizer: SimpleNamespace) -> dict[str, list[OpCost]]:
    """The OpCosts lowering gives the accumulate / update supersteps of a graph's update nodes."""
    update_module = importlib.import_module("ipusim.lowering.update")
    seen: dict[str, list[OpCost]] = {"accumulate": [], "weight_update": []}

    def capture(label, cost, *args, **kwargs):
        seen[label[2]].append(cost)

    monkeypatch.setattr(update_module, "superstep", capture)
    trainable = [Variable(np.zeros(s, np.float16), f"l/v{i}:0") for i, s in enumerate(SHAPES)]
    graph = Graph()
    grads = [graph.placeholder(TensorSpec(s, "float16")) for s in SHAPES]
    add_update(grads, trainable, optimizer)
    update_module.update_phase(graph, load_system("M2000").ipu, "fp16.16")
    return seen


def test_costs_equal_the_update_supersteps(monkeypatch) -> None:
    optimizer = SimpleNamespace(slots_per_variable=2, update_flops_per_element=9)
    seen = _lowering_costs(monkeypatch, optimizer)
    assert seen["accumulate"] == [accumulate_cost(s) for s in SHAPES]
    assert seen["weight_update"] == [update_cost(s, 2, 9) for s in SHAPES]
    # and the ops charge exactly that per variable
    specs = [TensorSpec(s, "float16") for s in SHAPES]
    acc = get_op("accumulate_gradients")
    apply_op = get_op("apply_gradients")
    for spec, want_acc, want_update in zip(specs, seen["accumulate"], seen["weight_update"]):
        assert acc.cost([spec], [spec], accumulator=None, variables=[]) == want_acc
        assert apply_op.cost([spec], [], optimizer=optimizer, variables=[]) == want_update


def test_lowering_reads_the_update_from_the_nodes() -> None:
    update_module = importlib.import_module("ipusim.lowering.update")
    optimizer = SimpleNamespace(slots_per_variable=1, update_flops_per_element=3)
    first, second = (
        Variable(np.zeros(s, np.float32), f"dense/k{i}:0") for i, s in enumerate(SHAPES[:2])
    )
    graph = Graph()
    grads = [graph.placeholder(TensorSpec(v.shape, "float32")) for v in (second, first)]
    add_update(grads, [second, first], optimizer)
    phase = update_module.update_phase(graph, load_system("M2000").ipu, "fp32")
    assert phase.variables == (second, first)  # the optimizer's order, not creation order
    assert (phase.optimizer.slots_per_variable, phase.optimizer.update_flops_per_element) == (1, 3)
    assert [phase.update[id(v)].name for v in (second, first)] == [
        "dense/k1:0/update",
        "dense/k0:0/update",
    ]
    assert phase.accumulate[id(first)].name == "dense/k0:0/accumulate"
    assert phase.update[id(first)].layer == "dense"
    # a graph without an update has no weight update to lower
    empty = update_module.update_phase(Graph(), load_system("M2000").ipu, "fp32")
    assert empty.variables == () and not empty.update


def test_accumulate_without_an_accumulator_passes_gradients_through() -> None:
    var = Variable(np.zeros(3, np.float16), "w:0")
    graph = Graph()
    grad = graph.placeholder(TensorSpec((3,), "float32"))
    (out,) = apply("accumulate_gradients", grad, accumulator=None, variables=[var])
    assert out.spec == TensorSpec((3,), "float32")
    value = np.array([1.5, -2.0, 3.25], np.float32)
    (got,) = Executor(graph, [out], [grad]).run([value])
    np.testing.assert_array_equal(got, value)


def test_costs_closed_form() -> None:
    # (3, 5) float32: 15 elements of 4 bytes; Adam-like: 2 slots, 9 FLOPs per element.
    assert accumulate_cost((3, 5)) == OpCost(15, 120, 60, "elementwise")
    assert update_cost((3, 5), 2, 9) == OpCost(135, 240, 180, "elementwise")
    spec = TensorSpec((3, 5), "float32")
    both = get_op("accumulate_gradients").cost([spec, spec], [], accumulator=None, variables=[])
    assert both == OpCost(30, 240, 120, "elementwise")
