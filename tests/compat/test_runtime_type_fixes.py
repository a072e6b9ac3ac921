"""Bugs the strict type check of ``ipusim.compat.runtime`` showed (issue 25).

- ``GradientTape.gradient`` with an empty ``output_gradients``: TensorFlow's tape seeds every
  target with ones, as when none is given (ipusim's crashed).
- ``tf.math.reduce_prod`` over an axis of unknown size (a Keras input's batch): ipusim's raised
  a TypeError; TensorFlow's reduces it.
"""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.compat import tf
from ipusim.compat.runtime import ops
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.tape import GradientTape


@pytest.mark.usefixtures("one_ipu")
def test_empty_output_gradients_seed_the_target_with_ones():
    @function
    def grads(x):
        with GradientTape(persistent=True) as tape:
            y = ops.reduce_sum(x * x)
        return tape.gradient(y, [x], output_gradients=[])[0], tape.gradient(y, [x])[0]

    seeded, plain = grads(np.array([3.0, -1.0], np.float32))
    np.testing.assert_array_equal(seeded, [6.0, -2.0])
    np.testing.assert_array_equal(seeded, plain)


def test_reduce_prod_over_the_unknown_batch_of_a_keras_input():
    x = keras.Input((3,))
    assert tf.math.reduce_prod(x, axis=0).shape == (3,)
    model = keras.Model(x, x * tf.math.reduce_prod(x, axis=0))
    data = np.arange(1, 13, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(model.predict(data, batch_size=4), data * data.prod(axis=0))
