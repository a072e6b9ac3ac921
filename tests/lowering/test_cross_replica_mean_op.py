"""The cross-replica mean as an op of the update phase: every front end's step graph carries a
``cross_replica_mean`` node before the accumulation, a one-replica trace passes the gradients
through it, and lowering's gradient all-reduce moves the bytes of the gradients it reduces."""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.compat.runtime import loops, ops
from ipusim.compat.runtime.feeds import IPUInfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.optimizers import CrossReplicaOptimizer
from ipusim.compat.runtime.tape import GradientTape
from ipusim.data import Dataset
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph, apply
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.lowering.distribution import all_reduce_bytes
from ipusim.lowering.update import UPDATE_OPS, update_nodes
from ipusim.strategy import IPUStrategy


@pytest.fixture(autouse=True)
def _fresh():
    ipusim.config.reset_ipu_configuration()
    yield
    ipusim.config.reset_ipu_configuration()


def _configure(ipus: int) -> None:
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = ipus
    cfg.configure_ipu_system()


def test_a_one_replica_trace_passes_the_gradients_through() -> None:
    graph = Graph()
    specs = [TensorSpec((3, 5), "float32"), TensorSpec((7,), "float16")]
    grads = [graph.placeholder(s) for s in specs]
    variables = [Variable(np.zeros(s.shape, s.dtype), f"v{i}:0") for i, s in enumerate(specs)]
    means = apply("cross_replica_mean", *grads, variables=variables)
    assert [m.spec for m in means] == specs
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s.shape).astype(s.dtype) for s in specs]
    out = Executor(graph, list(means), grads).run(arrays, ExecContext(True, 0))
    for got, want in zip(out, arrays, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_the_all_reduce_bytes_are_those_of_the_gradients_the_nodes_reduce() -> None:
    graph = Graph()
    a, b, c, unreduced = (
        Variable(np.zeros(s, np.float32), f"{n}:0")
        for n, s in zip("abcd", [(3, 5), (7,), (2, 3, 4), (9,)])
    )
    nodes = []
    for reduced in ([a, b], [b, c]):
        grads = [graph.placeholder(TensorSpec(v.shape, "float32")) for v in reduced]
        nodes.append(apply("cross_replica_mean", *grads, variables=reduced)[0].node)

    def half(spec: TensorSpec) -> int:  # two bytes per element, as an fp16 run's
        return spec.size * 2

    assert all_reduce_bytes(nodes, [a], half) == 15 * 2
    # b is reduced by both nodes but all-reduced once
    assert all_reduce_bytes(nodes, [a, b, c], half) == (15 + 7 + 24) * 2
    assert all_reduce_bytes(nodes, [unreduced], half) == 0
    assert all_reduce_bytes([], [a, b], half) == 0


def test_a_replicated_keras_fit_all_reduces_its_cross_replica_mean_nodes_gradients() -> None:
    _configure(2)
    x = np.random.default_rng(0).normal(size=(16, 6)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(16, 2)).astype(np.float32)
    with ipusim.IPUStrategy().scope():
        inp = keras.Input((6,))
        out = keras.layers.Dense(2, name="b")(keras.layers.Dense(8, name="a")(inp))
        model = keras.Model(inp, out)
        model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y, batch_size=4, verbose=0)
    step = model._last_programs["train"]
    nodes = update_nodes(step.graph)
    assert [n.op.name for n in nodes] == ["cross_replica_mean", *UPDATE_OPS[1:]]
    mean, accumulate = nodes[0], nodes[1]
    assert [id(s) for s in mean.inputs] == [id(g) for g in step.gradients]
    assert list(mean.attrs["variables"]) == step.trainable
    assert [id(s) for s in accumulate.inputs] == [id(s) for s in mean.outputs]
    program = model.last_program
    assert program.replicas == 2
    (all_reduce,) = program.pipeline.stages[0].update_before
    assert all_reduce.name == "all-reduce gradients"
    # float32 gradients of a (6x8 kernel, 8 bias) and b (8x2 kernel, 2 bias)
    assert all_reduce.bytes == (6 * 8 + 8 + 8 * 2 + 2) * 4


def test_a_replicated_custom_loop_carries_the_node_and_all_reduces_its_bytes() -> None:
    _configure(2)
    w = ops.Variable(np.ones((5, 3), np.float32))
    bias = ops.Variable(np.zeros(3, np.float32))
    optimizer = CrossReplicaOptimizer(keras.optimizers.SGD(0.1))
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(np.ones((8, 5), np.float32)))
    handles = []

    def body(x):
        with GradientTape() as tape:
            loss = ops.reduce_sum(ops.matmul(ops.reshape(x, (1, 5)), w) + bias)
        done = optimizer.apply_gradients(zip(tape.gradient(loss, [w, bias]), [w, bias]))
        handles.append(done)
        return done

    strategy = IPUStrategy()
    strategy.run(function(lambda: loops.repeat(2, body, [], infeed)))
    nodes = update_nodes(handles[0].symbol.graph)
    assert [n.op.name for n in nodes] == ["cross_replica_mean", *UPDATE_OPS[1:]]
    assert [v.shape for v in nodes[0].attrs["variables"]] == [(5, 3), (3,)]
    # every replica's gradient of w is x (ones) per output column: two SGD steps of 0.1
    np.testing.assert_allclose(w.numpy(), np.full((5, 3), 0.8), rtol=1e-6)
    trace = strategy.last_simulation.trace.to_dataframe()
    reduces = trace[trace["name"] == "all-reduce gradients"]
    assert len(reduces) == 2  # one per weight update
    assert set(reduces["bytes"]) == {(5 * 3 + 3) * 4}
