"""Run the TensorFlow Keras reference cases (bench/tf_parity/fixtures) through ipusim.

Each ``run_<group>(case)`` returns ``{array name: (ipusim value, TensorFlow value)}``;
``relative_error`` measures the difference the tests bound. tests/numerics/test_tf_parity.py
asserts on them and bench/tf_parity/report.py tabulates the worst error of every group.
TensorFlow is not imported anywhere here: the fixtures are plain .npz files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.tf_parity import training_models
from bench.tf_parity.training_models import mlp_initial_weights, weights_digest
from ipusim import keras
from ipusim.graph.autodiff import gradients
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable

FIXTURES = Path(__file__).resolve().parents[2] / "bench" / "tf_parity" / "fixtures"
GROUPS = ("layers", "losses", "optimizers", "metrics", "training")


@dataclass
class Case:
    group: str
    name: str
    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]


def load(group: str) -> list[Case]:
    """The cases of one fixture file, in file order."""
    with np.load(FIXTURES / f"{group}.npz") as data:
        grouped: dict[str, dict[str, np.ndarray]] = {}
        for key in data.files:
            name, _, field = key.rpartition("/")
            grouped.setdefault(name, {})[field] = data[key]
    return [
        Case(group, name, json.loads(bytes(arrays.pop("meta")).decode()), arrays)
        for name, arrays in grouped.items()
    ]


def relative_error(got: Any, want: Any) -> float:
    """``max|got - want| / max|want|`` (0 when both are zero)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"shape {got.shape} != reference shape {want.shape}")
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    diff = float(np.max(np.abs(got - want))) if want.size else 0.0
    return diff / scale if scale > 0 else diff


def _tuples(config: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}


# ---------------------------------------------------------------------------------- layers
def run_layer(case: Case) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    a, meta = case.arrays, case.meta
    keras.utils.set_random_seed(0)
    layer = getattr(keras.layers, meta["class"])(**_tuples(meta["config"]))
    xs = [a[f"x{i}"] for i in range(meta["inputs"])]
    graph = Graph("parity")
    inputs = [graph.placeholder(TensorSpec(x.shape, x.dtype.name)) for x in xs]
    y = layer(inputs if len(inputs) > 1 else inputs[0], training=meta["training"])
    weights = [a[f"w{i}"] for i in range(sum(1 for k in a if k.startswith("w")))]
    layer.set_weights(weights)
    dy = graph.placeholder(TensorSpec(a["dy"].shape, "float32"))
    objective = m.reduce_sum(m.multiply(y, dy))
    float_inputs = [p for p in inputs if p.dtype == "float32"]
    sources = float_inputs + [graph.read_variable(v) for v in layer.trainable_weights]
    grads = gradients(objective, sources)
    updates = [(v, value) for v, value in graph.updates]
    fetches = [y, *grads, *(value for _, value in updates)]
    values = Executor(graph, fetches, [*inputs, dy]).run(
        [*xs, a["dy"]], ExecContext(training=meta["training"])
    )
    out = {"y": (values[0], a["y"])}
    grad_values = values[1 : 1 + len(grads)]
    for i, g in enumerate(grad_values[: len(float_inputs)]):
        out[f"dx{i}"] = (g, a[f"dx{i}"])
    for i, g in enumerate(grad_values[len(float_inputs) :]):
        out[f"dw{i}"] = (g, a[f"dw{i}"])
    non_trainable = layer.non_trainable_weights
    new_values = dict(zip((id(v) for v, _ in updates), values[1 + len(grads) :]))
    for i, variable in enumerate(non_trainable):
        if f"state{i}" in a and id(variable) in new_values:
            out[f"state{i}"] = (new_values[id(variable)], a[f"state{i}"])
    return out


# ---------------------------------------------------------------------------------- losses
def run_loss(case: Case) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    a, meta = case.arrays, case.meta
    loss = getattr(keras.losses, meta["class"])(**meta["config"])
    graph = Graph("parity")
    logits = graph.placeholder(TensorSpec(a["logits"].shape, "float32"))
    y_true = graph.placeholder(TensorSpec(a["y_true"].shape, a["y_true"].dtype.name))
    binary = meta["class"] == "BinaryCrossentropy"
    squash = m.sigmoid if binary else nn.softmax
    prediction = meta["prediction"]
    if prediction == "probs":
        y_pred = m.add(squash(logits), 0.0)
    elif prediction in ("softmax", "sigmoid"):
        y_pred = squash(logits)
    else:
        y_pred = logits
    feeds, arrays = [logits, y_true], [a["logits"], a["y_true"]]
    sample_weight = None
    if "sample_weight" in a:
        sample_weight = graph.placeholder(TensorSpec(a["sample_weight"].shape, "float32"))
        feeds.append(sample_weight)
        arrays.append(a["sample_weight"])
    value = loss(y_true, y_pred, sample_weight)
    (grad,) = gradients(m.reduce_sum(value), [logits])
    got_value, got_grad = Executor(graph, [value, grad], feeds).run(arrays)
    return {"value": (got_value, a["value"]), "grad": (got_grad, a["grad"])}


# ---------------------------------------------------------------------------------- optimizers
def run_optimizer(case: Case) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    a, meta = case.arrays, case.meta
    optimizer = getattr(keras.optimizers, meta["class"])(**meta["config"])
    count = sum(1 for k in a if k.startswith("init"))
    variables = [Variable(a[f"init{i}"], f"v{i}:0") for i in range(count)]
    steps = a["grads0"].shape[0]
    trajectory: list[list[np.ndarray]] = [[] for _ in variables]
    for s in range(steps):
        optimizer.apply_gradients((a[f"grads{i}"][s], v) for i, v in enumerate(variables))
        for i, v in enumerate(variables):
            trajectory[i].append(v.numpy())
    return {f"values{i}": (np.stack(trajectory[i]), a[f"values{i}"]) for i in range(count)}


# ---------------------------------------------------------------------------------- metrics
def run_metric(case: Case) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    a, meta = case.arrays, case.meta
    metric = getattr(keras.metrics, meta["class"])(**meta["config"])
    results = []
    for b in range(3):
        sw = a.get(f"sample_weight{b}")
        if meta["kind"] == "values":
            metric.update_state(a[f"y_pred{b}"], sample_weight=sw)
        else:
            metric.update_state(a[f"y_true{b}"], a[f"y_pred{b}"], sample_weight=sw)
        results.append(float(metric.result()))
    return {"results": (np.array(results), a["results"])}


# ---------------------------------------------------------------------------------- training
def _model(name: str) -> keras.Sequential:
    keras.utils.set_random_seed(0)
    return training_models.build(name, keras)


def initial_weights(init: Case) -> list[np.ndarray]:
    """A model's initial weights from its ``<model>/init`` case."""
    a = init.arrays
    if init.meta["model"] == "mlp":
        initial = mlp_initial_weights(int(a["seed"]))
        if weights_digest(initial) != bytes(a["sha256"]).decode():
            raise AssertionError(
                "NumPy no longer draws the same initial weights from the stored seed; "
                "regenerate the fixtures with bench/tf_parity/generate.py"
            )
        return initial
    return [a[f"init{i}"] for i in range(sum(1 for k in a if k.startswith("init")))]


def run_training(
    case: Case, data: Case, initial: list[np.ndarray]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """64 train_on_batch steps of the case's model and optimizer from ``initial``."""
    a, meta = case.arrays, case.meta
    model = _model(meta["model"])
    model.build((None, *meta["input_shape"]))
    model.set_weights(initial)
    optimizer = getattr(keras.optimizers, meta["class"])(**meta["config"])
    model.compile(optimizer, keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    steps, batch = data.meta["steps"], data.meta["batch"]
    x_all = data.arrays["images"].astype(np.float32) / 255.0
    y_all = data.arrays["labels"].astype(np.int32)
    losses = []
    for s in range(steps):
        part = slice(s * batch, (s + 1) * batch)
        x = x_all[part].reshape((-1, *meta["input_shape"]))
        losses.append(float(model.train_on_batch(x, y_all[part])))
    out = {"losses": (np.array(losses), a["losses"])}
    for i, w in enumerate(model.get_weights()):
        flat = w.reshape(-1)
        out[f"sample{i}"] = (flat[a[f"index{i}"]], a[f"sample{i}"])
        out[f"norm{i}"] = (np.linalg.norm(flat.astype(np.float64)), a[f"norm{i}"])
    return out


def per_step_loss_error(
    result: dict[str, tuple[np.ndarray, np.ndarray]], steps: int | None = None
) -> float:
    """The worst relative error of one step's loss over the run (or its first ``steps``)."""
    got, want = result["losses"]
    got, want = got[:steps], want[:steps]
    return float(np.max(np.abs(got - want) / np.abs(want)))


RUNNERS = {
    "layers": run_layer,
    "losses": run_loss,
    "optimizers": run_optimizer,
    "metrics": run_metric,
}
