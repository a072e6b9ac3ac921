"""``keras.ops``: Keras 3's names and arguments, checked against NumPy on concrete values and
inside models (functional-model tensors and a layer's ``call``)."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.keras import ops

RNG = np.random.default_rng(7)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _run(inputs: list, outputs: object, data: list[np.ndarray]) -> np.ndarray:
    """Predict a functional model of the given tensors on ``data``."""
    model = keras.Model(inputs, outputs)
    return np.asarray(model.predict(data if len(data) > 1 else data[0], batch_size=len(data[0])))


def test_keras_ops_is_keras_namespace() -> None:
    assert keras.ops is ops
    for name in ("matmul", "einsum", "slice", "reshape", "transpose", "softmax", "mean"):
        assert callable(getattr(ops, name))


# ---------------------------------------------------------------------------- concrete values
def test_concrete_values_compute_with_numpy() -> None:
    x, y = _rand(2, 3, 4), _rand(2, 3, 4)
    np.testing.assert_allclose(ops.add(x, y), x + y)
    np.testing.assert_allclose(ops.subtract(x, y), x - y)
    np.testing.assert_allclose(ops.multiply(x, y), x * y)
    np.testing.assert_allclose(ops.divide(x, y), x / y)
    np.testing.assert_allclose(ops.square(x), x * x)
    np.testing.assert_allclose(ops.sqrt(np.abs(x)), np.abs(x) ** 0.5, rtol=1e-6)
    np.testing.assert_allclose(
        ops.mean(x, axis=(0, 2), keepdims=True), x.mean((0, 2), keepdims=True)
    )
    assert ops.reshape(x, (6, -1)).shape == (6, 4)
    np.testing.assert_array_equal(ops.transpose(x, (2, 0, 1))[1, 0, 2], x[0, 2, 1])
    np.testing.assert_array_equal(ops.transpose(x), x.T)
    # Keras 3's example: a 2x2 window of a 5x5 matrix starting at (3, 3).
    grid = np.arange(25, dtype=np.float32).reshape(5, 5)
    np.testing.assert_array_equal(ops.slice(grid, (3, 3), (2, 2)), [[18, 19], [23, 24]])
    np.testing.assert_array_equal(ops.slice(grid, (1, 0), (2, -1)), grid[1:3])
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(ops.softmax(x, axis=-1), e / e.sum(-1, keepdims=True), rtol=1e-6)
    assert ops.cast(np.array([1, 255], np.uint8), "float32").dtype == np.float32


# ---------------------------------------------------------------------------- symbolic tensors
def test_attention_einsum_and_matmul_in_a_functional_model() -> None:
    q_in, k_in, v_in = (keras.Input((2, 3, 4), batch_size=2) for _ in range(3))
    scores = ops.einsum("bhqd,bhkd->bhqk", q_in, k_in)
    probs = ops.softmax(scores, axis=-1)
    out = ops.transpose(ops.matmul(probs, v_in), (0, 2, 1, 3))
    q, k, v = _rand(2, 2, 3, 4), _rand(2, 2, 3, 4), _rand(2, 2, 3, 4)
    got = _run([q_in, k_in, v_in], ops.reshape(out, (-1, 3, 8)), [q, k, v])
    # Naive loops: scores[b, h, i, j] = sum_d q[b, h, i, d] * k[b, h, j, d].
    expected = np.zeros((2, 3, 2, 4), np.float64)
    for b in range(2):
        for h in range(2):
            s = np.array([[q[b, h, i] @ k[b, h, j] for j in range(3)] for i in range(3)])
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            for i in range(3):
                expected[b, i, h] = sum(p[i, j] * v[b, h, j] for j in range(3))
    np.testing.assert_allclose(got, expected.reshape(2, 3, 8), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "subscripts", ["bij,bjk->bik", "bji,bjk->bik", "bij,bkj->bik", "bji,bkj->bik"]
)
def test_einsum_batched_products_with_transposes(subscripts: str) -> None:
    a_shape = (3, 4) if subscripts[1:3] == "ij" else (4, 3)
    b_shape = (4, 5) if subscripts[5:7] == "jk" else (5, 4)
    a_in, b_in = keras.Input(a_shape, batch_size=2), keras.Input(b_shape, batch_size=2)
    a, b = _rand(2, *a_shape), _rand(2, *b_shape)
    got = _run([a_in, b_in], ops.einsum(subscripts, a_in, b_in), [a, b])
    for n in range(2):
        a_m = a[n] if subscripts[1:3] == "ij" else a[n].T
        b_m = b[n] if subscripts[5:7] == "jk" else b[n].T
        expected = [
            [sum(a_m[i, j] * b_m[j, k] for j in range(4)) for k in range(5)] for i in range(3)
        ]
        np.testing.assert_allclose(got[n], expected, rtol=1e-5, atol=1e-6)


class _Projection(keras.layers.Layer):
    """``x @ w.T`` and ``x @ w`` written with a 2-D einsum and matmul in ``call``."""

    def build(self, input_shape: object) -> None:
        self.w = self.add_weight("w", (5, input_shape[-1]), initializer="glorot_uniform")
        self.built = True

    def call(self, x: object) -> object:
        projected = ops.einsum("ij,kj->ik", x, self.w)
        return ops.matmul(projected, self.w)


def test_matrix_einsum_and_matmul_inside_a_layer() -> None:
    model = keras.Sequential([keras.Input((4,)), _Projection()])
    x = _rand(3, 4)
    w = np.asarray(model.layers[0].w.numpy(), np.float64)
    got = model.predict(x, batch_size=3)
    projected = [[sum(x[i, j] * w[k, j] for j in range(4)) for k in range(5)] for i in range(3)]
    expected = [
        [sum(projected[i][k] * w[k, j] for k in range(5)) for j in range(4)] for i in range(3)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_slice_and_cast_of_functional_tensors() -> None:
    x_in = keras.Input((6, 3), batch_size=2, dtype="uint8")
    out = ops.slice(ops.cast(x_in, "float32"), (0, 1, 0), (-1, 4, 2))
    x = RNG.integers(0, 256, (2, 6, 3)).astype(np.uint8)
    got = _run([x_in], out, [x])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x[:, 1:5, :2].astype(np.float32))


class _GroupNorm(keras.layers.Layer):
    """Group normalisation over 2 groups of channels, written with keras.ops in ``call``."""

    def call(self, x: object) -> object:
        n, c = x.shape
        g = ops.reshape(x, (-1, 2, c // 2))
        mean = ops.mean(g, axis=2, keepdims=True)
        centred = ops.subtract(g, mean)
        var = ops.mean(ops.square(centred), axis=2, keepdims=True)
        normed = ops.divide(centred, ops.sqrt(ops.add(var, 1e-5)))
        return ops.multiply(ops.reshape(normed, (-1, c)), 2.0)


def test_ops_inside_a_layer_call() -> None:
    x = _rand(4, 6)
    model = keras.Sequential([keras.Input((6,)), _GroupNorm()])
    got = model.predict(x, batch_size=4)
    expected = np.empty_like(x, dtype=np.float64)
    for row in range(4):
        for group in range(2):
            values = x[row, 3 * group : 3 * group + 3].astype(np.float64)
            mu = sum(values) / 3
            var = sum((values - mu) ** 2) / 3
            expected[row, 3 * group : 3 * group + 3] = 2 * (values - mu) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- refused calls
def test_unsupported_forms_raise_named_errors() -> None:
    a_in = keras.Input((2, 3), batch_size=2)
    with pytest.raises(UnsupportedError, match="einsum") as info:
        ops.einsum("bij,bjk,bkl->bil", a_in, a_in, a_in)
    assert isinstance(info.value, NotImplementedError)
    with pytest.raises(UnsupportedError, match="einsum"):
        ops.einsum("bij->bji", a_in)
    with pytest.raises(UnsupportedError, match="matmul"):
        ops.matmul(a_in, keras.Input((3,), batch_size=2))
    with pytest.raises(ConfigurationError, match="start_indices") as bad:
        ops.slice(a_in, (0, 0), (1, 1))
    assert isinstance(bad.value, ValueError)
