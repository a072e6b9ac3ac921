"""keras.backend tensor functions in Lambda layers (graph ops) and on NumPy values, against
NumPy written out here."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.keras import backend as K  # noqa: N812 - Keras' conventional name

X = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 10) / 7

CASES = {
    "mean": (lambda t: K.mean(t, axis=1), lambda x: x.mean(axis=1)),
    "sum_keep": (
        lambda t: K.sum(t, axis=[1, 2], keepdims=True),
        lambda x: x.sum((1, 2), keepdims=True),
    ),
    "max": (lambda t: K.max(t, axis=-1), lambda x: x.max(-1)),
    "square_sqrt": (lambda t: K.sqrt(K.square(t) + 1), lambda x: np.sqrt(x**2 + 1)),
    "abs_exp_log": (lambda t: K.log(K.exp(K.abs(t))), lambda x: np.abs(x)),
    "clip": (lambda t: K.clip(t, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5)),
    "l2_normalize": (
        lambda t: K.l2_normalize(t, axis=-1),
        lambda x: x / np.sqrt(np.maximum((x * x).sum(-1, keepdims=True), 1e-12)),
    ),
    "expand_squeeze": (lambda t: K.squeeze(K.expand_dims(t, 1), 1), lambda x: x),
    "permute": (lambda t: K.permute_dimensions(t, (0, 2, 1)), lambda x: x.transpose(0, 2, 1)),
    "batch_flatten": (lambda t: K.batch_flatten(t), lambda x: x.reshape(2, -1)),
    "concatenate": (lambda t: K.concatenate([t, t * 2]), lambda x: np.concatenate([x, 2 * x], -1)),
    "softmax": (
        lambda t: K.softmax(t),
        lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
    ),
    "sigmoid_tanh_relu": (
        lambda t: K.sigmoid(t) + K.tanh(t) + K.relu(t, max_value=0.5),
        lambda x: 1 / (1 + np.exp(-x)) + np.tanh(x) + np.clip(x, 0, 0.5),
    ),
    "pow_max_min": (
        lambda t: K.pow(K.maximum(t, 0.1), 2) + K.minimum(t, 0.0),
        lambda x: np.maximum(x, 0.1) ** 2 + np.minimum(x, 0.0),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_backend_functions_in_a_lambda_layer_and_on_numpy(name):
    fn, expected = CASES[name]
    inp = keras.Input((3, 4))
    model = keras.Model(inp, keras.layers.Lambda(fn)(inp))
    np.testing.assert_allclose(model.predict(X, verbose=0), expected(X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fn(X), expected(X), rtol=1e-5, atol=1e-6)


def test_shape_helpers_and_dot():
    inp = keras.Input((3, 4))
    assert K.int_shape(inp) == (None, 3, 4) and K.ndim(inp) == 3
    a, b = np.ones((2, 3), np.float32), np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(K.dot(a, b), a @ b)
    assert K.cast(np.array([1.7]), "int32").dtype == np.int32
