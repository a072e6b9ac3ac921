"""tf.math beyond the core ops: values against NumPy / the math module, gradients of every new
graph op (unary_math, binary_math, select, scan, top_k) against finite differences, and the tf
functions eagerly and inside tf.function with GradientTape."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ipusim.compat import tf
from ipusim.graph.ops import math_extra as me
from ipusim.graph.ops import scan
from tests.gradcheck import check_gradients, run_op

RNG = np.random.default_rng(7)
X = RNG.uniform(-0.9, 0.9, (3, 4))  # inside every domain (asin, atanh, log1p...)

_REFERENCE = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "atanh": np.arctanh, "erf": np.vectorize(math.erf), "erfc": np.vectorize(math.erfc),
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "sign": np.sign,
    "reciprocal": lambda v: 1 / v, "expm1": np.expm1, "log1p": np.log1p,
    "lgamma": np.vectorize(math.lgamma), "softsign": lambda v: v / (1 + np.abs(v)),
    "elu": lambda v: np.where(v > 0, v, np.expm1(v)), "relu6": lambda v: np.clip(v, 0, 6),
    "selu": lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * np.expm1(v)),
}  # fmt: skip
_SMOOTH = [f for f in _REFERENCE if f not in ("floor", "ceil", "round", "sign", "lgamma")]


@pytest.mark.parametrize("fn", sorted(_REFERENCE))
def test_unary_math_matches_numpy(fn):
    got = run_op(lambda v: me.unary(fn, v), X)
    np.testing.assert_allclose(got, _REFERENCE[fn](X), rtol=1e-12, atol=1e-12)


def test_domain_functions_outside_their_domain():
    got = run_op(lambda v: me.unary("acosh", v), np.array([0.5, 1.0, 2.0]))
    np.testing.assert_allclose(got, [np.nan, 0.0, np.arccosh(2.0)])
    got = run_op(lambda v: me.unary("rsqrt", v), np.array([-1.0, 4.0]))
    np.testing.assert_allclose(got, [np.nan, 0.5])
    # round half to even, as TensorFlow's round
    got = run_op(lambda v: me.unary("round", v), np.array([0.5, 1.5, 2.5, -0.5, -1.5]))
    np.testing.assert_array_equal(got, [0.0, 2.0, 2.0, -0.0, -2.0])


@pytest.mark.parametrize("fn", sorted(_SMOOTH) + ["acosh", "rsqrt"])
def test_unary_math_gradients(fn):
    x = X + 2.0 if fn in ("acosh", "rsqrt") else X
    check_gradients(lambda v: me.unary(fn, v), x)


@pytest.mark.parametrize("fn", ["pow", "atan2", "floormod"])
def test_binary_math_values_and_gradients(fn):
    a = RNG.uniform(0.5, 2.0, (3, 4))
    b = RNG.uniform(0.5, 1.7, (4,))
    expected = {"pow": np.power, "atan2": np.arctan2, "floormod": np.mod}[fn](a, b)
    np.testing.assert_allclose(run_op(lambda x, y: me.apply_binary(fn, x, y), a, b), expected)
    check_gradients(lambda x, y: me.apply_binary(fn, x, y), a, b)


def test_select_routes_gradients_to_the_chosen_side():
    cond = np.array([True, False, True])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, -2.0, -3.0])
    np.testing.assert_array_equal(run_op(me.select, cond, a, b), [1.0, -2.0, 3.0])
    check_gradients(lambda x, y: me.select(cond, x, y), a, b)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_match_numpy_and_differentiate(exclusive, reverse):
    x = RNG.uniform(0.5, 1.5, (3, 4))

    def reference(v, product):
        v = v[:, ::-1] if reverse else v
        out = np.cumprod(v, 1) if product else np.cumsum(v, 1)
        if exclusive:
            out = np.concatenate([np.full((3, 1), 1.0 if product else 0.0), out[:, :-1]], 1)
        return out[:, ::-1] if reverse else out

    for product in (False, True):
        fn = scan.cumprod if product else scan.cumsum
        got = run_op(lambda v, fn=fn: fn(v, axis=1, exclusive=exclusive, reverse=reverse), x)
        np.testing.assert_allclose(got, reference(x, product), rtol=1e-12)
        check_gradients(lambda v, fn=fn: fn(v, axis=1, exclusive=exclusive, reverse=reverse), x)


def test_top_k_orders_ties_by_index_and_differentiates():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [0.0, -1.0, 5.0, 5.0]])
    values, indices = run_op(lambda v: scan.top_k(v, 3), x)
    np.testing.assert_array_equal(values, [[3, 3, 2], [5, 5, 0]])
    np.testing.assert_array_equal(indices, [[1, 2, 3], [2, 3, 0]])
    assert indices.dtype == np.int32
    check_gradients(lambda v: scan.top_k(v, 2)[0], RNG.normal(size=(2, 5)))


def test_tf_math_functions_eagerly():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]], np.float32)
    np.testing.assert_allclose(tf.math.reduce_prod(x, axis=1), [6.0, 0.0])
    np.testing.assert_allclose(
        tf.math.reduce_logsumexp(x, axis=1), np.log(np.exp(x).sum(1)), rtol=1e-6
    )
    np.testing.assert_allclose(tf.math.reduce_std(x, axis=0), x.std(0), rtol=1e-6)
    np.testing.assert_allclose(tf.math.reduce_variance(x), x.var(), rtol=1e-6)
    np.testing.assert_array_equal(tf.math.argmin(x, axis=1), [1, 0])
    assert int(tf.math.count_nonzero(x)) == 5
    np.testing.assert_array_equal(tf.math.in_top_k([0, 1], x, 1), [True, True])
    np.testing.assert_array_equal(tf.math.in_top_k([2, 0], x, 1), [False, False])
    np.testing.assert_allclose(tf.math.divide_no_nan(x, x * 0), np.zeros_like(x))
    np.testing.assert_allclose(tf.math.xlogy(x, x + 1), np.where(x == 0, 0, x * np.log(x + 1)))
    np.testing.assert_allclose(tf.math.squared_difference(x, 1.0), (x - 1) ** 2)
    np.testing.assert_allclose(tf.math.floordiv(x, 2.0), np.floor_divide(x, 2))
    np.testing.assert_array_equal(tf.math.logical_xor(x > 1, x > 2), (x > 1) ^ (x > 2))
    np.testing.assert_array_equal(tf.math.logical_not(x > 1), ~(x > 1))
    np.testing.assert_allclose(tf.math.add_n([x, x, x]), 3 * x)
    np.testing.assert_allclose(tf.math.polyval([1.0, 2.0, 3.0], x), x**2 + 2 * x + 3)
    sums = tf.math.unsorted_segment_sum(x, [1, 1], 3)
    np.testing.assert_allclose(sums, [np.zeros(3), x.sum(0), np.zeros(3)])
    np.testing.assert_allclose(tf.math.segment_mean(x, [0, 0]), [x.mean(0)])
    np.testing.assert_array_equal(tf.math.is_nan([np.nan, 1.0, np.inf]), [True, False, False])
    np.testing.assert_array_equal(tf.math.is_finite([np.nan, 1.0, np.inf]), [False, True, False])
    np.testing.assert_allclose(tf.math.zero_fraction(x), 1 / 6, rtol=1e-6)
    # l2_normalize: epsilon bounds the squared norm from below, as TensorFlow
    np.testing.assert_allclose(
        tf.math.l2_normalize([[0.0, 1e-7]], axis=1, epsilon=1e-12), [[0.0, 1e-7 / 1e-6]], rtol=1e-5
    )
    np.testing.assert_allclose(tf.cumsum(x, axis=1), np.cumsum(x, 1))
    np.testing.assert_allclose(tf.sin(x), np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(tf.pow(x, 2), x**2)


def test_tf_math_inside_tf_function_with_gradients():
    """The gradient of a composition of new ops, from GradientTape in a traced function,
    against central differences of the same function run eagerly in float64."""
    x0 = np.array([[0.3, -0.2, 0.9], [1.5, 0.1, -0.7]], np.float32)
    v = tf.Variable(x0)

    def objective(a):
        terms = [
            tf.reduce_sum(tf.math.sin(a) * tf.math.cumsum(a, axis=1)),
            tf.reduce_sum(tf.math.reduce_logsumexp(a, axis=1)),
            tf.reduce_sum(tf.math.top_k(a, 2).values),
            tf.reduce_sum(tf.math.reduce_prod(a + 2.0, axis=0)),
            tf.reduce_sum(tf.math.atan2(a, a * a + 1.0)),
            tf.reduce_sum(tf.math.l2_normalize(a, axis=1) * np.arange(3, dtype=a.dtype)),
        ]
        return tf.math.add_n(terms)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = objective(v)
        return loss, tape.gradient(loss, v)

    loss, grad = step()
    np.testing.assert_allclose(loss, objective(x0.astype(np.float64)), rtol=1e-5)
    numeric = np.zeros_like(x0, dtype=np.float64)
    base = x0.astype(np.float64)
    for i in np.ndindex(x0.shape):
        plus, minus = base.copy(), base.copy()
        plus[i] += 1e-6
        minus[i] -= 1e-6
        numeric[i] = (float(objective(plus)) - float(objective(minus))) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=2e-3, atol=2e-4)
