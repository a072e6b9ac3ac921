"""Gradient accumulators in half precision unless gradient_accumulation_dtype says otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from half_reference import h

from ipusim import keras, pipelining
from ipusim.graph.variable import Variable


class _Capture:
    """An optimizer stand-in that records the gradients it is asked to apply."""

    def __init__(self) -> None:
        self.applied: list[list[np.ndarray]] = []

    def apply_gradients(self, pairs) -> None:
        self.applied.append([np.array(g) for g, _ in pairs])


def _accumulate(model: keras.Model, grads: list[np.ndarray], variable: Variable) -> np.ndarray:
    capture = _Capture()
    model.optimizer = capture
    model._gradient_accumulation, model._accumulation_method = len(grads), "sum"
    model._accumulators = None
    for g in grads:
        model._apply_or_accumulate([[g]], [variable])
    (applied,) = capture.applied
    return applied[0]


def _grads(dtype: str) -> list[np.ndarray]:
    # A large first gradient, then small ones that a half-precision running sum swamps.
    first = np.full(4, 1024.0, np.float32)
    rest = [np.full(4, 0.375, np.float32) for _ in range(7)]  # below half of 1024's spacing
    return [g.astype(dtype) for g in [first, *rest]]


def test_float16_accumulators_round_each_addition_and_float32_ones_do_not(configure) -> None:
    configure()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])
    variable = Variable(np.zeros(4, np.float16), "v:0")
    grads = _grads("float16")
    half_sum = _accumulate(model, grads, variable)
    expected = np.zeros(4, np.float32)
    for g in grads:
        expected = h(expected + g.astype(np.float32))
    np.testing.assert_array_equal(half_sum.astype(np.float32), expected)
    model._gradient_accumulation_kwargs = {"dtype": "float32"}  # GradientAccumulationOptimizerV2
    float_sum = _accumulate(model, grads, variable)
    exact = sum(g.astype(np.float64) for g in grads)
    np.testing.assert_array_equal(float_sum.astype(np.float32), h(exact.astype(np.float32)))
    assert not np.array_equal(half_sum, float_sum)


def test_fp16_precision_accumulates_in_half_by_default(configure) -> None:
    configure("fp16.32")
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])
    variable = Variable(np.zeros(4, np.float32), "v:0")
    grads = _grads("float32")
    default = _accumulate(model, grads, variable)
    model._gradient_accumulation_kwargs = {"dtype": lambda var: "float32"}
    wide = _accumulate(model, grads, variable)
    assert default[0] == 1024.0  # swamped: 1024's half-precision spacing is 1
    assert wide[0] == pytest.approx(sum(float(g[0]) for g in grads))


def test_pipelined_models_read_gradient_accumulation_dtype(configure) -> None:
    configure("fp16.32")
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])
    model._pipelining_options = pipelining.PipelineOptions(
        gradient_accumulation_steps_per_replica=8,
        kwargs={"gradient_accumulation_dtype": "float32"},
    )
    model._is_pipelined = lambda: True
    variable = Variable(np.zeros(4, np.float32), "v:0")
    grads = _grads("float32")
    assert _accumulate(model, grads, variable)[0] == pytest.approx(sum(float(g[0]) for g in grads))
