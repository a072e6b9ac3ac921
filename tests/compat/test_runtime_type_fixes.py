"""GradientTape.gradient with an empty ``output_gradients``: TensorFlow's tape seeds every
target with ones, as when none is given."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim.compat.runtime import ops
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.tape import GradientTape

pytestmark = pytest.mark.usefixtures("one_ipu")


def test_empty_output_gradients_seed_the_target_with_ones():
    @function
    def grads(x):
        with GradientTape(persistent=True) as tape:
            y = ops.reduce_sum(x * x)
        return tape.gradient(y, [x], output_gradients=[])[0], tape.gradient(y, [x])[0]

    seeded, plain = grads(np.array([3.0, -1.0], np.float32))
    np.testing.assert_array_equal(seeded, [6.0, -2.0])
    np.testing.assert_array_equal(seeded, plain)
