"""A custom loop's update nodes, executed on the staged gradients, apply with the wrapper chain
as it was traced: a gradient map runs once (when traced), accumulation once per window."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.compat.runtime import loops, ops
from ipusim.compat.runtime.feeds import IPUInfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.optimizers import (
    GradientAccumulationOptimizerV2,
    MapGradientOptimizer,
)
from ipusim.compat.runtime.tape import GradientTape
from ipusim.data import Dataset
from ipusim.strategy import IPUStrategy

pytestmark = pytest.mark.usefixtures("one_ipu")


def _train(optimizer, xs: list[float], ts: list[float]) -> float:
    """w after one loop over (x, t) pairs of loss = (w x - t)^2, from w = 0.5."""
    w = ops.Variable(np.float32(0.5))
    data = (np.array(xs, np.float32), np.array(ts, np.float32))
    infeed = IPUInfeedQueue(Dataset.from_tensor_slices(data))

    def body(x, t):
        with GradientTape() as tape:
            loss = ops.square(w * x - t)
        (grad,) = tape.gradient(loss, [w])
        optimizer.apply_gradients([(grad, w)])

    IPUStrategy().run(function(lambda: loops.repeat(len(xs), body, [], infeed)))
    return float(w.numpy())


def test_a_traced_gradient_map_is_applied_once() -> None:
    opt = MapGradientOptimizer(keras.optimizers.SGD(0.01), lambda g, v: g * 2.0)
    # d/dw (2w - 3)^2 at w = 0.5: 2 (1 - 3) 2 = -8, mapped to -16: w = 0.5 + 0.16
    assert _train(opt, [2.0], [3.0]) == pytest.approx(0.66, abs=1e-6)


def test_accumulated_gradients_of_a_loop_apply_once_per_window() -> None:
    opt = GradientAccumulationOptimizerV2(keras.optimizers.SGD(0.01), 2)
    # gradients at w = 0.5: 2 (0.5 - 2) 1 = -3 and 2 (1.5 - 1) 3 = 3: their sum 0, w stays;
    # the third call (x = 1, t = 0: gradient 1) waits for the next window
    assert _train(opt, [1.0, 3.0, 1.0], [2.0, 1.0, 0.0]) == pytest.approx(0.5, abs=1e-7)
    opt = GradientAccumulationOptimizerV2(keras.optimizers.SGD(0.01), 2)
    # -3 and 1 (x = 1, t = 0): sum -2, w = 0.5 + 0.02
    assert _train(opt, [1.0, 1.0], [2.0, 0.0]) == pytest.approx(0.52, abs=1e-6)
