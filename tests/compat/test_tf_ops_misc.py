"""The rest of the tf top level: control flow (cond on concrete and traced predicates, map_fn,
folds, scan, while_loop), TensorShape / Tensor / Module, integer division helpers, histograms,
unravel_index, name_scope and friends."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim.compat import tf
from ipusim.errors import UnsupportedError


def test_cond_picks_a_branch_or_selects_when_traced():
    assert tf.cond(True, lambda: 1.0, lambda: 2.0) == 1.0
    x0 = np.array([1.0, -2.0, 3.0], np.float32)
    v = tf.Variable(x0)

    @tf.function
    def step(flag):
        with tf.GradientTape() as tape:
            out = tf.cond(tf.greater(flag, 0.0), lambda: v * 2.0, lambda: v * v)
            loss = tf.reduce_sum(out)
        return out, tape.gradient(loss, v)

    out, grad = step(np.float32(1.0))
    np.testing.assert_allclose(out, 2 * x0)
    np.testing.assert_allclose(grad, [2.0, 2.0, 2.0])
    out, grad = step(np.float32(-1.0))
    np.testing.assert_allclose(out, x0 * x0)
    np.testing.assert_allclose(grad, 2 * x0)


def test_functional_loops():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(tf.map_fn(lambda r: tf.reduce_sum(r * r), x), (x * x).sum(1))
    np.testing.assert_allclose(tf.vectorized_map(lambda r: r * 2.0, x), 2 * x)
    np.testing.assert_allclose(tf.foldl(lambda a, r: a + r, x), x.sum(0))
    np.testing.assert_allclose(
        tf.foldr(lambda a, r: a * 0.5 + r, x), ((x[3] * 0.5 + x[2]) * 0.5 + x[1]) * 0.5 + x[0]
    )
    np.testing.assert_allclose(tf.scan(lambda a, r: a + r, x), np.cumsum(x, 0))
    i, total = tf.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t + i), (0, 0))
    assert (i, total) == (5, 10)

    @tf.function
    def traced_loop(v):
        return tf.while_loop(lambda a: tf.reduce_sum(a) < 10.0, lambda a: a * 2.0, [v])

    with pytest.raises(UnsupportedError, match="while_loop"):
        traced_loop(np.ones(2, np.float32))


def test_shapes_types_and_modules():
    shape = tf.TensorShape([None, 3])
    assert shape.as_list() == [None, 3] and shape.rank == 2 and not shape.is_fully_defined()
    assert shape.is_compatible_with([5, 3]) and not shape.is_compatible_with([5, 4])
    assert tf.TensorShape([2, 3]).num_elements() == 6
    assert isinstance(tf.constant([1.0]), tf.Tensor) and not isinstance(3.0, tf.Tensor)
    assert tf.is_tensor(np.zeros(2)) and not tf.is_tensor([1, 2])
    assert tf.executing_eagerly()

    class Dense(tf.Module):
        def __init__(self):
            super().__init__(name="dense")
            self.w = tf.Variable(np.ones((2, 2), np.float32), name="w")
            self.frozen = tf.Variable(np.zeros(2, np.float32), trainable=False, name="f")

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(), Dense()]

    net = Net()
    assert net.name == "net" and len(net.variables) == 4 and len(net.trainable_variables) == 2
    assert len(net.submodules) == 2
    with tf.name_scope("block") as scope:
        assert scope == "block"
    assert tf.get_static_value(tf.constant([1, 2])).tolist() == [1, 2]
    assert tf.half == "float16" and tf.double == "float64" and tf.int8 == "int8"
    init = tf.constant_initializer(3.0)
    np.testing.assert_array_equal(init((2,)), [3.0, 3.0])


def test_integer_helpers_and_histograms():
    x, y = np.array([-7, 7, -7, 7], np.int32), np.array([2, -2, -2, 2], np.int32)
    c_quotient = np.trunc(x / y).astype(np.int32)
    np.testing.assert_array_equal(tf.truncatediv(x, y), c_quotient)
    np.testing.assert_array_equal(tf.truncatemod(x, y), np.fmod(x, y))
    np.testing.assert_array_equal(
        tf.unravel_index([5, 7, 0], [3, 4]), np.array(np.unravel_index([5, 7, 0], (3, 4)))
    )
    values = np.array([-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 5.0, 4.9], np.float32)
    np.testing.assert_array_equal(
        tf.histogram_fixed_width(values, [0.0, 5.0], nbins=5), [3, 2, 1, 0, 2]
    )
    np.testing.assert_array_equal(
        tf.histogram_fixed_width_bins(values, [0.0, 5.0], nbins=5), [0, 0, 0, 1, 1, 2, 4, 4]
    )
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_sub(np.ones(3, np.float32), [[1]], [5.0]), [1.0, -4.0, 1.0]
    )
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([3])).as_list() == [
        2,
        3,
    ]
    np.testing.assert_array_equal(tf.broadcast_dynamic_shape([2, 1], [1, 4]), [2, 4])
    assert tf.nest.flatten({"a": [1, 2], "b": 3}) == [1, 2, 3]


def test_random_image_flips_flip_about_half_of_a_batch():
    images = np.arange(200 * 2 * 3 * 1, dtype=np.float32).reshape(200, 2, 3, 1)
    out = np.asarray(tf.image.random_flip_left_right(images, seed=3))
    flipped = np.all(out == images[:, :, ::-1], axis=(1, 2, 3))
    kept = np.all(out == images, axis=(1, 2, 3))
    assert np.all(flipped ^ kept) and 70 < flipped.sum() < 130
    shifted = np.asarray(tf.image.random_brightness(images[:2], 0.5, seed=1)) - images[:2]
    assert np.ptp(shifted) < 1e-5 and abs(float(shifted.flat[0])) <= 0.5


def test_assertions_strided_slice_reverse_sequence_and_aliases():
    tf.debugging.assert_equal(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="x is wrong"):
        tf.debugging.assert_less(np.ones(2), np.zeros(2), message="x is wrong")
    with pytest.raises(ValueError, match="assert_greater failed for"):
        tf.debugging.assert_greater(np.zeros(2), np.ones(2), name="check_positive")
    with pytest.raises(ValueError):
        tf.debugging.check_numerics(np.array([np.nan]), "bad")
    tf.debugging.assert_shapes([(np.zeros((2, 3)), ("N", 3)), (np.zeros(2), ("N",))])
    with pytest.raises(ValueError):
        tf.debugging.assert_shapes([(np.zeros((2, 3)), ("N", 3)), (np.zeros(4), ("N",))])
    with pytest.raises(ValueError):
        tf.assert_rank(np.zeros((2, 3)), 3)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(
        tf.strided_slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]), x[0:2, 1:3, 0:4:2]
    )
    np.testing.assert_array_equal(
        tf.strided_slice(x, [1, 0, 1], [0, 0, 3], begin_mask=0, end_mask=0b010, shrink_axis_mask=1),
        x[1, 0:, 1:3],
    )
    np.testing.assert_array_equal(  # negative stride, shrink at a negative index
        tf.strided_slice(x, [1, -1], [0, 0], [1, -1], end_mask=0b10, shrink_axis_mask=1),
        x[1, ::-1],
    )
    v = tf.Variable(x)

    @tf.function
    def grad():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.strided_slice(v, [0, 1, 0], [2, 3, 4], [1, 1, 2]))
        return tape.gradient(loss, v)

    expected = np.zeros_like(x)
    expected[0:2, 1:3, 0:4:2] = 1.0
    np.testing.assert_array_equal(grad(), expected)
    seq = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(
        tf.reverse_sequence(seq, [2, 4], seq_axis=1), [[1, 0, 2, 3], [7, 6, 5, 4]]
    )
    assert tf.dtypes.as_dtype("float32") == tf.float32
    assert tf.py_function(lambda a: a + 1, [np.int32(1)], tf.int32) == 2


def test_not_simulated_table_lists_no_name_that_resolves():
    from ipusim.compat.keras import backend
    from ipusim.compat.not_simulated_ops import NOT_SIMULATED_OPS

    holders = {"tf": tf, "tf.math": tf.math, "tf.nn": tf.nn, "tf.linalg": tf.linalg,
               "tf.random": tf.random, "tf.keras.backend": backend}  # fmt: skip
    for key, (reason, instead) in NOT_SIMULATED_OPS.items():
        assert reason and instead, key
        if key.endswith("*"):
            continue
        module, _, name = key.rpartition(".")
        assert not hasattr(holders[module], name), f"{key} resolves but is listed as not simulated"
