"""tf.random draws (distributions, determinism, fresh numbers per traced execution, stateless
draws fixed by their seed) and keras.backend functions against NumPy / Keras 2's formulas."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim.compat import tf
from ipusim.compat.keras import backend as K
from ipusim.errors import UnsupportedError


def test_distributions_have_their_moments_and_ranges():
    u = np.asarray(tf.random.uniform([20000], minval=-1.0, maxval=3.0, seed=1))
    assert u.dtype == np.float32 and u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 0.03 and abs(u.var() - 16 / 12) < 0.05
    n = np.asarray(tf.random.normal([20000], mean=2.0, stddev=0.5, seed=2))
    assert abs(n.mean() - 2.0) < 0.02 and abs(n.std() - 0.5) < 0.01
    t = np.asarray(tf.random.truncated_normal([20000], stddev=2.0, seed=3))
    assert np.abs(t).max() <= 4.0
    # a normal truncated at 2 sigma has standard deviation 0.8796 sigma
    assert abs(t.std() - 2.0 * 0.8796) < 0.03
    i = np.asarray(tf.random.uniform([5000], maxval=7, dtype=tf.int32, seed=4))
    assert i.dtype == np.int32 and set(np.unique(i)) == set(range(7))
    c = np.asarray(tf.random.categorical(np.log([[0.2, 0.8], [0.9, 0.1]]), 4000, seed=5))
    assert c.shape == (2, 4000) and c.dtype == np.int64
    assert abs(c[0].mean() - 0.8) < 0.03 and abs(c[1].mean() - 0.1) < 0.03
    s = np.asarray(tf.random.shuffle(np.arange(10), seed=6))
    assert sorted(s.tolist()) == list(range(10)) and s.tolist() != list(range(10))


def test_seeds_repeat_and_stateless_draws_depend_on_the_seed_only():
    a = tf.random.stateless_normal([5], seed=[1, 2])
    np.testing.assert_array_equal(a, tf.random.stateless_normal([5], seed=[1, 2]))
    assert not np.array_equal(a, tf.random.stateless_normal([5], seed=[1, 3]))
    np.testing.assert_array_equal(
        tf.random.stateless_uniform([3], [4, 4]), tf.random.stateless_uniform([3], [4, 4])
    )
    g = tf.random.Generator.from_seed(3)
    first, second = g.normal([4]), g.normal([4])
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(tf.random.Generator.from_seed(3).normal([4]), first)
    assert g.make_seeds(2).shape == (2, 2)


def test_traced_draws_are_fresh_at_every_execution_and_stateless_ones_are_not():
    @tf.function
    def draw():
        return (
            tf.random.uniform([4]),
            tf.random.stateless_uniform([4], seed=[7, 7]),
            tf.random.shuffle(np.arange(6.0)),
        )

    u1, s1, p1 = draw()
    u2, s2, p2 = draw()
    assert not np.array_equal(u1, u2)
    np.testing.assert_array_equal(s1, s2)
    assert sorted(np.asarray(p1).tolist()) == list(range(6))


def test_backend_reductions_and_elementwise():
    x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)
    np.testing.assert_allclose(K.mean(x, axis=1), x.mean(1))
    np.testing.assert_allclose(K.sum(x, axis=0, keepdims=True), x.sum(0, keepdims=True))
    np.testing.assert_allclose(K.max(x), 5.0)
    np.testing.assert_allclose(K.min(x, axis=1), x.min(1))
    np.testing.assert_allclose(K.std(x, axis=1), x.std(1), rtol=1e-6)
    np.testing.assert_allclose(K.var(x), x.var(), rtol=1e-6)
    np.testing.assert_allclose(K.prod(x, axis=0), x.prod(0))
    np.testing.assert_allclose(K.square(x), x**2)
    np.testing.assert_allclose(K.clip(x, -1.0, 2.0), np.clip(x, -1, 2))
    np.testing.assert_allclose(K.clip(x, 2.0, -1.0), np.full_like(x, 2.0))  # max raised to min
    np.testing.assert_allclose(
        K.relu(x, alpha=0.1, max_value=4.0), np.where(x > 0, np.minimum(x, 4), 0.1 * x)
    )
    np.testing.assert_allclose(K.relu(x, threshold=2.0), np.where(x > 2, x, 0))
    np.testing.assert_allclose(K.hard_sigmoid(x), np.clip(0.2 * x + 0.5, 0, 1))
    np.testing.assert_array_equal(K.argmax(x), [2, 1])
    np.testing.assert_array_equal(K.argmin(x, axis=0), [0, 0, 1])
    np.testing.assert_allclose(K.cumsum(x, axis=1), np.cumsum(x, 1))
    np.testing.assert_allclose(K.pow(np.abs(x), 0.5), np.sqrt(np.abs(x)), rtol=1e-6)


def test_backend_products_and_shapes():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(20, dtype=np.float32).reshape(4, 5)
    np.testing.assert_allclose(K.dot(a, b), a @ b)
    np.testing.assert_allclose(K.dot(a[0], b), a[0] @ b)
    x, y = a[:, 0], a[:, 1]
    np.testing.assert_allclose(K.batch_dot(x, y, axes=1), (x * y).sum(1, keepdims=True))
    c = np.arange(30, dtype=np.float32).reshape(2, 3, 5)
    np.testing.assert_allclose(
        K.batch_dot(np.swapaxes(a, 1, 2), c), np.einsum("bji,bjk->bik", a, c)
    )
    assert K.int_shape(a) == (2, 3, 4) and K.ndim(a) == 3
    np.testing.assert_array_equal(K.shape(a), [2, 3, 4])
    np.testing.assert_allclose(K.concatenate([a, a], axis=-1), np.concatenate([a, a], -1))
    np.testing.assert_allclose(K.permute_dimensions(a, (2, 0, 1)), a.transpose(2, 0, 1))
    np.testing.assert_allclose(K.batch_flatten(a), a.reshape(2, 12))
    np.testing.assert_allclose(K.repeat_elements(a, 2, axis=1), np.repeat(a, 2, 1))
    np.testing.assert_allclose(K.repeat(a[:, 0], 3), np.repeat(a[:, None, 0], 3, 1))
    np.testing.assert_allclose(K.one_hot(np.array([0, 2]), 3), np.eye(3)[[0, 2]])
    np.testing.assert_allclose(K.temporal_padding(a), np.pad(a, ((0, 0), (1, 1), (0, 0))))


def test_backend_variables_settings_and_losses():
    v = K.variable([[1.0, 2.0]])
    assert K.get_value(v).dtype == np.float32
    K.set_value(v, [[3.0, 4.0]])
    np.testing.assert_array_equal(K.get_value(v), [[3.0, 4.0]])
    K.update_add(v, np.ones((1, 2), np.float32))
    np.testing.assert_array_equal(K.eval(v), [[4.0, 5.0]])
    assert K.count_params(v) == 2
    with pytest.raises(TypeError, match="variable"):
        K.set_value(0.1, 0.2)
    assert K.image_data_format() == "channels_last"
    with pytest.raises(UnsupportedError):
        K.set_image_data_format("channels_first")
    assert K.learning_phase() == 0
    with K.learning_phase_scope(1):
        assert K.in_train_phase(1.0, 2.0) == 1.0
    assert K.in_train_phase(1.0, 2.0) == 2.0
    assert K.floatx() == "float32" and K.epsilon() == 1e-7
    t = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    p = np.array([[0.8, 0.2], [0.6, 0.4]], np.float32)
    eps = 1e-7
    bce = -(t * np.log(p + eps) + (1 - t) * np.log(1 - p + eps))
    np.testing.assert_allclose(K.binary_crossentropy(t, p), bce, rtol=1e-5)
    np.testing.assert_allclose(K.categorical_crossentropy(t, p), -(t * np.log(p)).sum(1), rtol=1e-5)
    np.testing.assert_allclose(
        K.sparse_categorical_crossentropy(np.array([0, 1]), p), -np.log([0.8, 0.4]), rtol=1e-5
    )
