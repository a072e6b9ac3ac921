"""``x[key]`` and ``x ** y`` on graph Symbols: values against NumPy, gradients against finite
differences, and the index errors TensorFlow raises."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_gradients, run_op

from ipusim.errors import IPUSimError
from ipusim.graph.graph import Graph
from ipusim.graph.op import get_op
from ipusim.graph.ops.operators import IndexKeyError, canonical_index
from ipusim.graph.spec import TensorSpec

X = np.arange(2 * 5 * 4, dtype=np.float32).reshape(2, 5, 4) - 17.0

# Keys as scripts write them; NumPy's basic indexing is the expectation (TensorFlow's
# Tensor.__getitem__ follows it for these keys).
KEYS = [
    0,
    -1,
    (slice(None), 0),
    (slice(None), -1, slice(1, 3)),
    (Ellipsis, 1),
    (Ellipsis, None),
    (None, slice(None), 2),
    (slice(None), slice(None, None, 2)),
    (slice(None), slice(None, None, -1)),
    (slice(None), slice(4, 0, -2), slice(-3, None)),
    (1, Ellipsis, slice(1, 2)),
    (slice(None), slice(10, 20)),  # out-of-range slices are empty or clipped, as in NumPy / TF
    (slice(None), slice(-100, 2)),
    (0, 4, 3),
    (slice(None), None, 1, None),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy(key):
    out = run_op(lambda x: x[key], X)
    expected = X[key]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    ("key", "shape"),
    [
        ((slice(None), 0), (None, 4)),
        ((slice(None), slice(None, None, 2)), (None, 3, 4)),
        ((Ellipsis, None), (None, 5, 4, 1)),
        ((None, Ellipsis, slice(1, -1)), (1, None, 5, 2)),
        ((slice(1, None), 2), (None, 4)),  # a slice of the unknown batch axis stays unknown
        (0, (5, 4)),
    ],
    ids=repr,
)
def test_getitem_spec_with_unknown_batch(key, shape):
    graph = Graph("spec")
    x = graph.placeholder(TensorSpec((None, 5, 4), "float32"))
    assert x[key].shape == shape


@pytest.mark.parametrize("key", [(slice(None), slice(1, 4, 2), 2), (Ellipsis, None, -1), 1])
def test_getitem_gradient_matches_finite_differences(key):
    x = np.random.default_rng(1).standard_normal((3, 5, 4))
    check_gradients(lambda t: t[key] * t[key], x)


def test_getitem_gradient_scatters_into_zeros():
    """d sum(x[:, 1]) / dx is 1 on column 1 and 0 elsewhere (hand-derived)."""
    from ipusim.graph.autodiff import gradients
    from ipusim.graph.execute import Executor
    from ipusim.graph.ops.reduce import reduce_sum

    graph = Graph("g")
    x = graph.placeholder(TensorSpec((2, 3), "float32"))
    (dx,) = gradients(reduce_sum(x[:, 1]), [x])
    value = Executor(graph, [dx], [x]).run([np.ones((2, 3), np.float32)])[0]
    np.testing.assert_array_equal(value, [[0, 1, 0], [0, 1, 0]])


@pytest.mark.parametrize(
    ("key", "error"),
    [
        ([0, 1], IndexKeyError),  # TF: TypeError, only integers, slices, ellipsis, newaxis
        (0.5, IndexKeyError),
        ((slice(None), slice(0.5, 2)), IndexKeyError),
        ((Ellipsis, Ellipsis), ValueError),
        ((0, 0, 0, 0), ValueError),  # more indices than axes
        ((slice(None), 5), ValueError),  # static out of bounds: TF raises ValueError too
        ((slice(None), -6), ValueError),
        ((slice(None, None, 0),), ValueError),
    ],
    ids=repr,
)
def test_bad_keys_raise_tensorflow_types_as_ipusim_errors(key, error):
    graph = Graph("e")
    x = graph.placeholder(TensorSpec((None, 5, 4), "float32"))
    with pytest.raises(error) as info:
        x[key]
    assert isinstance(info.value, IPUSimError)


def test_tensor_indices_concrete_scalars_work_symbolic_ones_are_not_simulated():
    np.testing.assert_array_equal(run_op(lambda x: x[np.array(1)], X), X[1])
    graph = Graph("t")
    x = graph.placeholder(TensorSpec((4, 3), "float32"))
    i = graph.placeholder(TensorSpec((), "int32"))
    with pytest.raises(NotImplementedError, match="not simulated"):
        x[i]


def test_canonical_index_fills_ellipsis_and_missing_axes():
    full = (None, None, None)
    assert canonical_index((Ellipsis, 1), 3) == (full, full, 1)
    assert canonical_index(1, 3) == (1, full, full)
    assert canonical_index((None, Ellipsis), 2) == (None, full, full)


def test_strided_slice_costs_only_the_bytes_it_moves():
    op = get_op("strided_slice")
    index = canonical_index((slice(None), 0), 2)
    cost = op.cost((TensorSpec((8, 100), "float32"),), (TensorSpec((8,), "float32"),), index=index)
    assert cost.flops == 0
    assert cost.bytes_read == 8 * 4 and cost.bytes_written == 8 * 4


def test_symbolic_tensor_iterates_over_a_known_first_axis_only():
    graph = Graph("i")
    with pytest.raises(TypeError, match="unknown first dimension"):
        list(graph.placeholder(TensorSpec((None, 3), "float32")))
    with pytest.raises(TypeError, match="unknown first dimension"):
        list(graph.placeholder(TensorSpec((), "float32")))
    a, b = run_op(lambda x: tuple(x), X[:2])
    np.testing.assert_array_equal(a, X[0])
    np.testing.assert_array_equal(b, X[1])


@pytest.mark.parametrize("power", [2, 3, 0.5, 1, 1.7, -1.0])
def test_pow_matches_numpy_and_its_gradient(power):
    x = np.random.default_rng(2).uniform(0.5, 2.0, (3, 4))
    np.testing.assert_allclose(run_op(lambda t: t**power, x), x**power, rtol=1e-12)
    check_gradients(lambda t: t**power, x)


def test_rpow_and_tensor_exponent():
    x = np.random.default_rng(3).uniform(0.5, 2.0, (3, 4))
    np.testing.assert_allclose(run_op(lambda t: 2.0**t, x), 2.0**x, rtol=1e-12)
    np.testing.assert_allclose(run_op(lambda a, b: a**b, x, x + 1), x ** (x + 1), rtol=1e-12)
    np.testing.assert_array_equal(run_op(lambda t: abs(t), x - 1), np.abs(x - 1))


def test_pow_of_negative_base_with_integer_exponent_is_defined():
    x = np.array([-2.0, -0.5, 3.0])
    np.testing.assert_allclose(run_op(lambda t: t**3, x), x**3)


def test_numpy_operands_on_the_left_defer_to_the_symbol():
    """``array + x`` is a graph node (TensorFlow's tensors win over NumPy arrays too), not an
    object array of per-element nodes."""
    a = np.arange(4.0).reshape(2, 2)
    out = run_op(lambda x: (a + x, a * x, 2.0 - x, np.float64(3) / x, a @ x), np.ones((2, 2)) * 2)
    expected = (
        a + 2,
        a * 2,
        2.0 - np.full((2, 2), 2.0),
        3 / np.full((2, 2), 2.0),
        a @ (np.ones((2, 2)) * 2),
    )
    for got, exp in zip(out, expected, strict=True):
        np.testing.assert_allclose(got, exp)


@pytest.mark.parametrize("divisor", [2.0, -1.5, 0.75])
def test_floordiv_and_mod_match_python_floor_semantics(divisor):
    x = np.array([-3.5, -2.0, -0.25, 0.0, 0.5, 2.0, 7.3])
    np.testing.assert_allclose(run_op(lambda t: t // divisor, x), np.floor_divide(x, divisor))
    np.testing.assert_allclose(run_op(lambda t: t % divisor, x), np.mod(x, divisor), atol=1e-12)
    np.testing.assert_allclose(run_op(lambda t: 10.0 // (t + 8), x), 10.0 // (x + 8))
    np.testing.assert_allclose(run_op(lambda t: 10.0 % (t + 8), x), np.mod(10.0, x + 8))


def test_mod_gradient_is_one_where_floor_is_flat():
    """d(x % 2)/dx = 1 away from the jumps (floor contributes no gradient, as in TensorFlow)."""
    x = np.array([0.3, 1.1, 2.7, -0.6])
    check_gradients(lambda t: t % 2.0, x)


def test_floordiv_of_integer_tensors_is_refused_with_the_cast_to_make():
    graph = Graph("f")
    with pytest.raises(TypeError, match="float"):
        graph.placeholder(TensorSpec((2,), "int32")) // 2
