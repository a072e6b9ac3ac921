"""More tf.nn / tf.math / tf.linalg / TensorArray against NumPy references."""

from __future__ import annotations

import numpy as np

from ipusim.compat import tf
from ipusim.compat.keras import backend as K

RNG = np.random.default_rng(11)


def test_space_depth_round_trip_and_reference():
    x = RNG.normal(size=(1, 4, 6, 8)).astype(np.float32)
    d2s = np.asarray(tf.nn.depth_to_space(x, 2))
    ref = x.reshape(1, 4, 6, 2, 2, 2).transpose(0, 1, 3, 2, 4, 5).reshape(1, 8, 12, 2)
    np.testing.assert_array_equal(d2s, ref)
    np.testing.assert_array_equal(tf.nn.space_to_depth(d2s, 2), x)


def test_pool1d_3d_and_lrn():
    x = RNG.normal(size=(2, 6, 3)).astype(np.float32)
    np.testing.assert_allclose(tf.nn.max_pool1d(x, 2, 2, "VALID"), x.reshape(2, 3, 2, 3).max(2))
    np.testing.assert_allclose(
        tf.nn.avg_pool1d(x, 3, 3, "VALID"), x.reshape(2, 2, 3, 3).mean(2), rtol=1e-6
    )
    v = RNG.normal(size=(1, 4, 4, 2, 1)).astype(np.float32)
    np.testing.assert_allclose(
        tf.nn.max_pool3d(v, 2, 2, "VALID"), v.reshape(1, 2, 2, 2, 2, 1, 2, 1).max((2, 4, 6))
    )
    c = RNG.normal(size=(1, 2, 2, 7)).astype(np.float32)
    out = np.asarray(
        tf.nn.local_response_normalization(c, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75)
    )
    sq = np.pad(c**2, ((0, 0), (0, 0), (0, 0), (2, 2)))
    window = np.stack([sq[..., i : i + 5].sum(-1) for i in range(7)], -1)
    np.testing.assert_allclose(out, c / (1.5 + 0.3 * window) ** 0.75, rtol=1e-5)


def test_separable_atrous_and_moment_helpers():
    x = RNG.normal(size=(1, 5, 5, 2)).astype(np.float32)
    dw = RNG.normal(size=(3, 3, 2, 2)).astype(np.float32)
    pw = RNG.normal(size=(1, 1, 4, 3)).astype(np.float32)
    depth = tf.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "VALID")
    np.testing.assert_allclose(
        tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "VALID"),
        np.einsum("nhwc,co->nhwo", np.asarray(depth), pw[0, 0]),
        rtol=1e-5,
        atol=1e-5,
    )
    w = RNG.normal(size=(2, 2, 2, 1)).astype(np.float32)
    dilated = np.zeros((3, 3, 2, 1), np.float32)
    dilated[::2, ::2] = w
    np.testing.assert_allclose(
        tf.nn.atrous_conv2d(x, w, 2, "VALID"),
        tf.nn.conv2d(x, dilated, 1, "VALID"),
        rtol=1e-5,
        atol=1e-5,
    )
    count, total, squares, _ = tf.nn.sufficient_statistics(x, [0, 1, 2])
    mean, var = tf.nn.normalize_moments(count, total, squares, None)
    np.testing.assert_allclose(mean, x.mean((0, 1, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var((0, 1, 2)), rtol=1e-4, atol=1e-6)


def test_math_and_linalg_extras():
    labels, preds = np.array([0, 1, 2, 2]), np.array([0, 2, 2, 1])
    np.testing.assert_array_equal(
        tf.math.confusion_matrix(labels, preds), [[1, 0, 0], [0, 0, 1], [0, 1, 1]]
    )
    assert bool(tf.math.is_non_decreasing([1, 2, 2, 5])) and not bool(
        tf.math.is_strictly_increasing([1, 2, 2, 5])
    )
    assert bool(tf.math.is_strictly_increasing([1.0, 2.0, 3.0])) and not bool(
        tf.math.is_non_decreasing([3, 1])
    )
    np.testing.assert_array_equal(
        tf.math.invert_permutation([2, 0, 3, 1]), np.argsort([2, 0, 3, 1])
    )
    x = RNG.normal(size=(5,)).astype(np.float32)
    np.testing.assert_allclose(
        tf.math.cumulative_logsumexp(x), np.log(np.cumsum(np.exp(x))), rtol=1e-5
    )
    np.testing.assert_array_equal(tf.math.bincount([1, 1, 3]), [0, 2, 0, 1])
    np.testing.assert_array_equal(tf.math.bincount([1, 1, 3], minlength=6), [0, 2, 0, 1, 0, 0])
    data = np.ones((3, 2), np.float32)
    np.testing.assert_allclose(
        tf.math.unsorted_segment_sqrt_n(data, [0, 0, 1], 2),
        [[2 / np.sqrt(2)] * 2, [1.0, 1.0]],
        rtol=1e-6,
    )
    m = RNG.normal(size=(3, 4))
    unit, size = tf.linalg.normalize(m, axis=1)
    np.testing.assert_allclose(size[:, 0], np.linalg.norm(m, axis=1))
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0)
    np.testing.assert_allclose(
        tf.linalg.tensor_diag_part(tf.linalg.tensor_diag([1.0, 2.0])), [1.0, 2.0]
    )


def test_tensor_array_in_an_unrolled_traced_loop():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            ta = tf.TensorArray(tf.float32, size=3)
            h = v
            for i in range(3):
                h = h * 2.0
                ta = ta.write(i, h)
            loss = tf.reduce_sum(ta.stack())
        return ta.stack(), tape.gradient(loss, v)

    stacked, grad = step()
    np.testing.assert_allclose(stacked, [[2, 4], [4, 8], [8, 16]])
    np.testing.assert_allclose(grad, [14.0, 14.0])  # d/dv (2v + 4v + 8v)


def test_keras_backend_3d_and_resize():
    v = RNG.normal(size=(1, 2, 2, 2, 1)).astype(np.float32)
    np.testing.assert_allclose(K.pool3d(v, (2, 2, 2), (2, 2, 2)), v.max((1, 2, 3), keepdims=True))
    x = RNG.normal(size=(1, 2, 2, 1)).astype(np.float32)
    np.testing.assert_allclose(
        K.resize_images(x, 2, 2, "channels_last"), x.repeat(2, 1).repeat(2, 2)
    )


def test_segment_extremes_bitwise_and_generic_wrappers():
    data = np.array([[1.0, 5.0], [3.0, -1.0], [2.0, 2.0]], np.float32)
    ids = np.array([0, 0, 2])
    np.testing.assert_allclose(tf.math.unsorted_segment_max(data, ids, 3)[[0, 2]], [[3, 5], [2, 2]])
    assert float(tf.math.unsorted_segment_max(data, ids, 3)[1, 0]) == float(
        np.finfo(np.float32).min
    )
    np.testing.assert_allclose(tf.math.segment_min(data, [0, 0, 1]), [[1, -1], [2, 2]])
    np.testing.assert_allclose(tf.math.segment_prod(data, [0, 0, 1]), [[3, -5], [2, 2]])
    a, b = np.array([12, 10, -3], np.int32), np.array([10, 6, 1], np.int32)
    np.testing.assert_array_equal(tf.bitwise.bitwise_and(a, b), a & b)
    np.testing.assert_array_equal(tf.bitwise.bitwise_xor(a, b), a ^ b)
    np.testing.assert_array_equal(tf.bitwise.left_shift(a, np.int32(2)), a << 2)
    np.testing.assert_array_equal(tf.bitwise.invert(a), ~a)
    np.testing.assert_array_equal(tf.bitwise.invert(np.array([0, 5], np.uint8)), [255, 250])
    x = RNG.normal(size=(1, 4, 4, 2)).astype(np.float32)
    w = RNG.normal(size=(2, 2, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(tf.nn.convolution(x, w), tf.nn.conv2d(x, w, 1, "VALID"))
    np.testing.assert_allclose(
        tf.nn.pool(x, [2, 2], "MAX", strides=[2, 2]), tf.nn.max_pool2d(x, 2, 2, "VALID")
    )
    v = RNG.normal(size=(1, 1, 2, 2, 1)).astype(np.float32)
    np.testing.assert_allclose(K.resize_volumes(v, 2, 1, 2), v.repeat(2, 1).repeat(2, 3))
