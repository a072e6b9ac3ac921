"""The shape of lowering: one path for every Program, and imports that only point down.

A single IPU is a pipeline of one fused stage: its forward block runs the whole step (forward,
backward and, when accumulating, accumulation supersteps), its weight-update block one optimizer
superstep per trainable variable; a pipeline stage runs its accumulations in its backward block.
The weight-update supersteps come from the step graph's update nodes; their FLOPs follow the
closed forms of the update ops.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.graph.graph import Graph
from ipusim.graph.ops.update import add_update
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.hardware import load_system
from ipusim.lowering.update import UPDATE_OPS, update_phase

LOWERING = Path(ipusim.__file__).parent / "lowering"


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module imported, whether the import is inside a function) of every import."""
    tree = ast.parse(path.read_text())
    local = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    return [
        (node.module or "", id(node) in local)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    ]


@pytest.mark.parametrize("path", sorted(LOWERING.glob("*.py")), ids=lambda p: p.name)
def test_lowering_modules_import_at_the_top_and_never_climb_back_to_lower(path: Path) -> None:
    for module, inside_function in _imports(path):
        assert not inside_function, f"{path.name} imports {module} inside a function"
        if path.name != "__init__.py":
            assert module != "ipusim.lowering.lower", f"{path.name} imports lower.py"


def test_weight_update_supersteps_follow_their_closed_forms() -> None:
    kernel = Variable(np.zeros((3, 4), np.float32), "dense/kernel")
    bias = Variable(np.zeros(4, np.float32), "dense/bias")
    graph = Graph()
    grads = [graph.placeholder(TensorSpec(v.shape, "float32")) for v in (kernel, bias)]
    adam_like = SimpleNamespace(slots_per_variable=2, update_flops_per_element=10)
    add_update(grads, [kernel, bias], adam_like)
    phase = update_phase(graph, load_system("M2000").ipu, "fp32")
    acc, upd = phase.accumulate, phase.update
    assert phase.variables == (kernel, bias)
    assert phase.optimizer.slots_per_variable == 2
    # One add per element; the update's FLOPs per element as the optimizer states.
    assert [acc[id(v)].flops for v in (kernel, bias)] == [12, 4]
    assert [upd[id(v)].flops for v in (kernel, bias)] == [120, 40]
    assert (acc[id(kernel)].name, acc[id(kernel)].phase) == (
        "dense/kernel/accumulate",
        "accumulate",
    )
    assert (upd[id(bias)].name, upd[id(bias)].phase, upd[id(bias)].layer) == (
        "dense/bias/update",
        "weight-update",
        "dense",
    )


def _fit(ipus: int, ga: int, pipelined: bool) -> ipusim.lowering.Program:
    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = ipus
    cfg.configure_ipu_system()
    x = np.random.default_rng(0).normal(size=(32, 6)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(32, 2)).astype(np.float32)
    with ipusim.IPUStrategy().scope():
        inp = keras.Input((6,))
        a, b = keras.layers.Dense(8, activation="tanh", name="a"), keras.layers.Dense(2, name="b")
        if pipelined:
            with keras.ipu.PipelineStage(0):
                h = a(inp)
            with keras.ipu.PipelineStage(1):
                out = b(h)
        else:
            out = b(a(inp))
        model = keras.Model(inp, out)
        if pipelined:
            model.set_pipelining_options(gradient_accumulation_steps_per_replica=ga)
        elif ga > 1:
            model.set_gradient_accumulation_options(gradient_accumulation_steps_per_replica=ga)
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=ga)
        model.fit(x, y, batch_size=4, verbose=0)
    return model.last_program


@pytest.mark.parametrize("ga", [1, 2])
def test_a_single_ipu_is_one_fused_stage(ga: int) -> None:
    program = _fit(1, ga, pipelined=False)
    (stage,) = program.pipeline.stages
    ops = [s.op for s in stage.forward.supersteps]
    # Forward and backward ops in one block; accumulation there too, only when accumulating.
    assert {s.phase for s in stage.forward.supersteps} >= {"fwd", "bwd"}
    assert ops.count("accumulate") == (4 if ga > 1 else 0)  # two kernels and two biases
    assert stage.backward.supersteps == ()
    assert [s.name for s in stage.weight_update.supersteps] == [
        "a/kernel:0/update",
        "a/bias:0/update",
        "b/kernel:0/update",
        "b/bias:0/update",
    ]
    assert (program.pipeline.schedule, program.pipeline.micro_batches) == ("sequential", ga)


def test_a_pipeline_stage_accumulates_in_its_backward_block() -> None:
    program = _fit(2, 4, pipelined=True)
    for stage, layer in zip(program.pipeline.stages, "ab", strict=True):
        accumulations = [s.name for s in stage.backward.supersteps if s.op == "accumulate"]
        assert accumulations == [f"{layer}/kernel:0/accumulate", f"{layer}/bias:0/accumulate"]
        assert all(s.op != "accumulate" for s in stage.forward.supersteps)
        assert len(stage.weight_update.supersteps) == 2


def test_the_keras_training_step_carries_the_update_as_graph_ops() -> None:
    from ipusim.keras.engine.step import StepProgram

    inp = keras.Input((6,))
    model = keras.Model(inp, keras.layers.Dense(2, name="d")(inp))
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    spec = TensorSpec((4, 6), "float32")
    program = StepProgram(model, "train", spec, TensorSpec((4, 2), "float32"))
    nodes = [n for n in program.graph.nodes if n.op.name in UPDATE_OPS]
    assert [n.op.name for n in nodes] == list(UPDATE_OPS)
    assert list(nodes[2].attrs["variables"]) == program.trainable
    assert nodes[2].attrs["optimizer"] is model.optimizer
    # the nodes read the step's gradients, each the one before's outputs; the executor does not
    # run them (fit applies them)
    assert [id(s) for s in nodes[0].inputs] == [id(g) for g in program.gradients]
    assert [id(s) for s in nodes[1].inputs] == [id(s) for s in nodes[0].outputs]
    fetched = {id(s) for s in program.executor.fetches}
    assert not fetched & {id(s) for n in nodes for s in n.outputs}
    phase = update_phase(program.graph, load_system("M2000").ipu, "fp32")
    assert [phase.update[id(v)].name for v in program.trainable] == [
        "d/kernel:0/update",
        "d/bias:0/update",
    ]
