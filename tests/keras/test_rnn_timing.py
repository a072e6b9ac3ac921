"""Recurrent layers on the simulated IPU: one superstep per op per time step, serialised over time.

What popnn does (graphcore/poplibs ``lib/popnn/Lstm.cpp``, ``Gru.cpp``, ``Rnn.cpp``), checked on the
lowered program of a training step:
- a loop of T dependent steps, each the recurrent product and the gates, in the forward pass and
  again (the gates' gradient, the products' gradients) in reverse in the backward pass;
- the gates of one step are the compute sets popnn builds for them (counted from the source:
  7 for an LSTM step in training, 5 for its gradient, 9 and 10 for a GRU's);
- the time of the loop grows with T (each step waits for the previous one) but hardly with the
  batch (a step is latency-bound: syncs and vertex overheads, not arithmetic);
- the stash of per-step values kept for the backward pass grows with T.
"""

from __future__ import annotations

import numpy as np
import pytest

import ipusim
from ipusim import keras

UNITS, FEATURES = 8, 4


def _program(layer: str, steps: int, batch: int = 4):
    keras.backend.clear_session()
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipusim.numerics = False
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential(
            [
                keras.Input((steps, FEATURES)),
                getattr(keras.layers, layer)(UNITS),
                keras.layers.Dense(2),
            ]
        )
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
        x = np.zeros((4 * batch, steps, FEATURES), np.float32)
        model.fit(x, np.zeros((4 * batch, 2), np.float32), batch_size=batch, verbose=0)
    return model.last_program


def _supersteps(program):
    return program.pipeline.stages[0].forward.supersteps


@pytest.mark.parametrize(
    "layer, cell, sets, grad_sets", [("LSTM", "lstm_cell", 7, 5), ("GRU", "gru_cell", 9, 10)]
)
def test_one_cell_superstep_per_time_step_with_popnns_compute_sets(layer, cell, sets, grad_sets):
    steps = 6
    supersteps = _supersteps(_program(layer, steps))
    ops = [s.op for s in supersteps]
    fwd = [s for s in supersteps if s.op == cell]
    bwd = [s for s in supersteps if s.op == f"{cell}_grad"]
    assert len(fwd) == steps and len(bwd) == steps
    assert all(s.phase == "fwd" for s in fwd) and all(s.phase == "bwd" for s in bwd)
    assert {s.compute_sets for s in fwd} == {sets} and {s.compute_sets for s in bwd} == {grad_sets}
    # Every forward step, then every backward step: the backward loop starts after the last
    # forward step.
    assert max(i for i, op in enumerate(ops) if op == cell) < ops.index(f"{cell}_grad")
    # Forwards: the input projection of all steps (one product), then one recurrent product per
    # step. Backwards: per step the weight-gradient product, and the gradient through the
    # product for every step but the first (its state is the zero initial state); then the
    # projection's weight gradient (the model's input needs no gradient).
    matmuls = [s for s in supersteps if s.op == "matmul" and s.layer.startswith(layer.lower())]
    assert len([s for s in matmuls if s.phase == "fwd"]) == steps + 1
    assert len([s for s in matmuls if s.phase == "bwd"]) == steps + (steps - 1) + 1
    sync = min(s.sync_ps for s in fwd) / sets
    assert sync > 0 and all(s.sync_ps == sets * sync for s in fwd)


_PREFIX = {"LSTM": "lstm", "GRU": "gru", "SimpleRNN": "simple_rnn"}


def _rnn_time_ps(program, layer: str) -> int:
    prefix = _PREFIX[layer]
    return sum(s.duration_ps for s in _supersteps(program) if s.layer.startswith(prefix))


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "SimpleRNN"])
def test_time_grows_with_the_sequence_not_with_the_batch(layer):
    base = _rnn_time_ps(_program(layer, 6), layer)
    longer = _rnn_time_ps(_program(layer, 12), layer)
    wider = _rnn_time_ps(_program(layer, 6, batch=8), layer)
    assert 1.8 < longer / base < 2.2  # T dependent steps: twice the steps, about twice the time
    assert wider / base < 1.25  # a step is latency-bound: twice the batch costs little more


def test_the_stash_of_per_step_values_grows_with_the_sequence():
    def activations(steps: int) -> int:
        return _program("LSTM", steps).memory[0].by_category()["activations"]

    short, long = activations(6), activations(24)
    # Per step the backward pass reads that step's pre-activations (4 units wide), cell states
    # and hidden state: at batch 4, 8 units, float32 at least 4·(4·8 + 8 + 8)·4 bytes per step.
    assert long - short >= 18 * 4 * (4 * UNITS + 2 * UNITS) * 4


def test_popnn_available_memory_proportion_plans_the_layers_matmuls():
    from ipusim.cost.compute import op_plan
    from ipusim.graph.autodiff import gradients
    from ipusim.graph.graph import Graph
    from ipusim.graph.ops import math as m
    from ipusim.graph.spec import TensorSpec
    from ipusim.hardware import get_chip

    layer = keras.layers.PopnnLSTM(
        UNITS, available_memory_proportion_fwd=0.2, available_memory_proportion_bwd=0.3
    )
    graph = Graph("amp")
    x = graph.placeholder(TensorSpec((4, 6, FEATURES), "float32"))
    loss = m.reduce_sum(layer(x, training=True))
    gradients(loss, [graph.read_variable(v) for v in layer.trainable_weights])
    matmuls = [n for n in graph.nodes if n.op.name == "matmul"]
    fwd = {n.attrs.get("available_memory_proportion") for n in matmuls if n.phase == "fwd"}
    bwd = {n.attrs.get("available_memory_proportion") for n in matmuls if n.phase == "bwd"}
    assert fwd == {0.2} and bwd == {0.3}
    # The planner takes a product's own proportion: a tighter bound, less temporary memory.
    chip = get_chip("GC200")
    specs = [TensorSpec((1024, 1024)), TensorSpec((1024, 4096))], [TensorSpec((1024, 4096))]
    default = op_plan("matmul", *specs, {}, chip, "fp32")
    tight = op_plan("matmul", *specs, {"available_memory_proportion": 0.05}, chip, "fp32")
    assert tight.temp_bytes < default.temp_bytes and tight.cycles > default.cycles


def test_a_long_sequence_lowers_with_recomputation_in_a_pipeline():
    """graphcore's recompute_lstm example: an LSTM over thousands of steps, recomputed on demand
    (RecomputeAndBackpropagateInterleaved); the dependency chain is longer than Python's
    recursion limit."""
    from ipusim.pipelining import PipelineSchedule, RecomputationMode

    steps = 1200
    keras.backend.clear_session()
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.allow_recompute = True
    cfg.ipusim.numerics = False
    cfg.configure_ipu_system()
    with ipusim.IPUStrategy().scope():
        inputs = keras.Input((steps, FEATURES))
        with keras.ipu.PipelineStage(0):
            x = keras.layers.PopnnLSTM(UNITS)(inputs)
        with keras.ipu.PipelineStage(1):
            out = keras.layers.Dense(1)(x)
        model = keras.Model(inputs, out)
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=4,
            pipeline_schedule=PipelineSchedule.Sequential,
            recomputation_mode=RecomputationMode.RecomputeAndBackpropagateInterleaved,
            device_mapping=[0, 0],
        )
        x = np.zeros((16, steps, FEATURES), np.float32)
        model.fit(x, np.zeros((16, 1), np.float32), batch_size=4, verbose=0)
    cells = [
        s
        for stage in model.last_program.pipeline.stages
        for block in (stage.forward, stage.backward)
        for s in block.supersteps
        if s.op == "lstm_cell"
    ]
    assert len(cells) >= steps  # the forward loop (and what the backward pass recomputes)


def test_popnn_lstm_multiplies_each_steps_input_with_its_state():
    """IPU TensorFlow leaves popnn's preCalcWeights off: per step one product of [x_t, h] with
    the stacked kernels, (batch, features + units) x (features + units, 4 units)."""
    steps, batch = 6, 4
    supersteps = _supersteps(_program("PopnnLSTM", steps, batch))
    fwd = [s for s in supersteps if s.op == "matmul" and s.phase == "fwd" and "popnn" in s.layer]
    assert len(fwd) == steps
    assert {s.flops for s in fwd} == {2 * batch * (FEATURES + UNITS) * 4 * UNITS}
