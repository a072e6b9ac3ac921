"""ipusim's attention, activation, normalisation, Dot, EinsumDense, wrapper and other layers
against TensorFlow's Keras (tf-keras 2), float32.

The references are bench/tf_parity/fixtures/layers_misc.npz, written by
bench/tf_parity/generate_layers_misc.py in a separate TensorFlow environment: forward output and
the gradients of ``sum(y * dy)`` w.r.t. the float inputs and the trainable weights. Nothing here
imports TensorFlow.
"""

from __future__ import annotations

import numpy as np
import pytest
import tf_parity_cases as parity

from ipusim import keras
from ipusim.graph.autodiff import gradients
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph
from ipusim.graph.ops import math as m
from ipusim.graph.ops.image_transform import image_transform
from ipusim.graph.spec import TensorSpec

#: As the other layer fixtures: float32 results of different summation orders.
TOLERANCE = 1e-5

ALL = parity.load("layers_misc")
CASES = [c for c in ALL if c.meta.get("kind") not in ("transform", "strings")]
#: StringLookup / TextVectorization (host-side preprocessing) on fixed texts.
STRINGS = [c for c in ALL if c.meta.get("kind") == "strings"]
#: ImageProjectiveTransformV3 on fixed maps (what RandomRotation / Translation / Zoom run).
TRANSFORMS = [c for c in ALL if c.meta.get("kind") == "transform"]


def _layer(meta: dict) -> keras.layers.Layer:
    config = parity._tuples(meta.get("config", {}))
    if "wrap" in meta:
        inner = meta["wrap"]
        config["layer"] = getattr(keras.layers, inner["class"])(**parity._tuples(inner["config"]))
    return getattr(keras.layers, meta["class"])(**config)


def _call(layer, meta: dict, inputs: list, bools: dict) -> object:
    kwargs = dict(meta.get("kwargs", {}), training=meta.get("training", True))
    for name, values in bools.items():
        kwargs[name] = values if meta.get("bool_list") else values[0]
    if meta.get("call") == "args":
        return layer(*inputs, **kwargs)
    return layer(inputs if meta.get("call") == "list" else inputs[0], **kwargs)


def run_case(case: parity.Case) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{array: (ipusim, TensorFlow)}`` for the forward output and every gradient."""
    a, meta = case.arrays, case.meta
    keras.utils.set_random_seed(0)
    layer = _layer(meta)
    graph = Graph("parity_misc")
    xs = [a[f"x{i}"] for i in range(len(meta["inputs"]))]
    inputs = [graph.placeholder(TensorSpec(x.shape, x.dtype.name)) for x in xs]
    bool_keys = sorted(k for k in a if k.startswith("b_"))
    bool_feeds = [graph.placeholder(TensorSpec(a[k].shape, "bool")) for k in bool_keys]
    bools: dict[str, list] = {}
    for key, feed in zip(bool_keys, bool_feeds, strict=True):
        bools.setdefault(key[2:].rpartition("_")[0], []).append(feed)
    y = _call(layer, meta, inputs, bools)
    layer.set_weights([a[f"w{i}"] for i in range(sum(1 for k in a if k.startswith("w")))])
    dy = graph.placeholder(TensorSpec(a["dy"].shape, "float32"))
    objective = m.reduce_sum(m.multiply(m.cast(y, "float32"), dy))
    graded = [i for i in range(len(inputs)) if f"dx{i}" in a]  # TensorFlow found a gradient
    float_inputs = [inputs[i] for i in graded]
    sources = float_inputs + [graph.read_variable(v) for v in layer.trainable_weights]
    grads = gradients(objective, sources)
    values = Executor(graph, [y, *grads], [*inputs, *bool_feeds, dy]).run(
        [*xs, *(a[k] for k in bool_keys), a["dy"]],
        ExecContext(training=meta.get("training", True)),
    )
    out = {"y": (values[0], a["y"])}
    for i, g in zip(graded, values[1 : 1 + len(float_inputs)], strict=True):
        out[f"dx{i}"] = (g, a[f"dx{i}"])
    for i, g in enumerate(values[1 + len(float_inputs) :]):
        out[f"dw{i}"] = (g, a[f"dw{i}"])
    return out


def run_transform(case: parity.Case) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    a, meta = case.arrays, case.meta
    graph = Graph("parity_transform")
    images = graph.placeholder(TensorSpec(a["x0"].shape, "float32"))
    maps = graph.placeholder(TensorSpec(a["maps"].shape, "float32"))
    dy = graph.placeholder(TensorSpec(a["dy"].shape, "float32"))
    y = image_transform(images, maps, meta["interpolation"], meta["fill_mode"], meta["fill_value"])
    (dx,) = gradients(m.reduce_sum(m.multiply(y, dy)), [images])
    got = Executor(graph, [y, dx], [images, maps, dy]).run(
        [a["x0"], a["maps"], a["dy"]], ExecContext(training=True)
    )
    return {"y": (got[0], a["y"]), "dx0": (got[1], a["dx0"])}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in TRANSFORMS])
def test_image_transform_and_its_gradient_match_tensorflow(case: parity.Case) -> None:
    for key, (got, want) in run_transform(case).items():
        error = parity.relative_error(got, want)
        assert error <= TOLERANCE, f"{case.name}/{key}: relative error {error:.2e}"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in STRINGS])
def test_string_layers_match_tensorflow_exactly(case: parity.Case) -> None:
    a, meta = case.arrays, case.meta
    layer = getattr(keras.layers, meta["class"])(**meta["config"])
    if meta["adapt"]:
        layer.adapt(a["inputs"])
    assert [str(v) for v in layer.get_vocabulary()] == [str(v) for v in a["vocabulary"]]
    got = layer(a["inputs"])
    np.testing.assert_array_equal(got, a["y"])
    assert got.dtype == a["y"].dtype


def test_the_fixture_covers_every_layer_family() -> None:
    classes = {c.meta["class"] for c in CASES}
    assert len(CASES) >= 40
    assert {"LeakyReLU", "PReLU", "MultiHeadAttention", "EinsumDense", "Dot"} <= classes


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_layer_matches_tensorflow(case: parity.Case) -> None:
    results = run_case(case)
    expected = {"y"} | {k for k in case.arrays if k.startswith(("dx", "dw"))}
    assert set(results) == expected
    # An analytically zero gradient (MultiHeadAttention's key bias: the softmax over the keys
    # ignores a shift shared by all keys) is rounding noise in both; it must stay at noise level
    # relative to the case's other arrays.
    scale = max(float(np.max(np.abs(want))) for _, want in results.values())
    errors = {}
    for key, (got, want) in results.items():
        if np.max(np.abs(want)) <= TOLERANCE * scale:
            errors[key] = float(np.max(np.abs(got))) / scale
        else:
            errors[key] = parity.relative_error(got, want)
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOLERANCE, f"{case.name}/{worst}: relative error {errors[worst]:.2e}"
