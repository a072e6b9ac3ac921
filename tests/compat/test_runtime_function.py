"""tf.function, strategy.run (reference §2), ipu_compiler.compile, GradientTape and the eager /
traced behaviour of the TensorFlow ops."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim.compat.ipu.scopes import ipu_scope
from ipusim.compat.runtime import ops
from ipusim.compat.runtime.function import Function, function
from ipusim.compat.runtime.function import compile as ipu_compile
from ipusim.compat.runtime.tape import GradientTape
from ipusim.compat.runtime.tensor import EagerTensor
from ipusim.strategy import IPUStrategy

pytestmark = pytest.mark.usefixtures("one_ipu")


def test_strategy_run_needs_a_tf_function():
    with pytest.raises(ValueError, match="does not support eager execution"):
        IPUStrategy().run(lambda: 1)


def test_strategy_run_rejects_float64_inputs_and_outputs():
    strategy = IPUStrategy()
    with pytest.raises(TypeError, match="Unsupported data type for input: float64"):
        strategy.run(function(lambda x: x * 2.0), args=(np.ones(3),))
    with pytest.raises(TypeError, match="Unsupported data type for output: float64"):
        strategy.run(function(lambda x: ops.cast(x, "float64")), args=(np.ones(3, np.float32),))


def test_strategy_run_computes_simulates_and_returns_eager_tensors():
    @function(experimental_compile=True)
    def affine(x, w):
        return ops.nn.relu(ops.matmul(x, w) + 1.0)

    x = np.array([[1.0, -2.0]], np.float32)
    w = np.array([[1.0, 0.0], [1.0, 1.0]], np.float32)
    strategy = IPUStrategy()
    out = strategy.run(affine, args=(x, w))
    assert isinstance(out, EagerTensor)
    np.testing.assert_array_equal(out.numpy(), [[0.0, 0.0]])
    report = strategy.last_simulation
    assert report is not None and report.steps == 1
    assert "matmul" in set(report.trace.to_dataframe()["op"])


def test_strategy_run_inside_a_function_is_part_of_that_trace():
    strategy = IPUStrategy()
    inner = function(lambda x: x + 1.0)

    @function
    def outer(x):
        return strategy.run(inner, args=(x,)) * 2.0

    np.testing.assert_array_equal(strategy.run(outer, args=(np.ones(2, np.float32),)), [4.0, 4.0])


def test_functions_are_traced_once_per_signature():
    traces = []

    @function
    def double(x):
        traces.append(x.shape)
        return x * 2.0

    assert isinstance(double, Function)
    np.testing.assert_array_equal(double(np.ones(3, np.float32)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(double(np.full(3, 4.0, np.float32)), [8.0, 8.0, 8.0])
    double(np.ones(2, np.float32))
    assert traces == [(3,), (2,)]


def test_a_function_called_in_a_strategy_scope_is_simulated():
    strategy = IPUStrategy()
    with strategy.scope():
        function(lambda x: x + x)(np.ones(4, np.float32))
    assert strategy.last_simulation is not None


def test_compile_returns_a_list_of_outputs():
    with ipu_scope("/device:IPU:0"):
        result = ipu_compile(lambda a, b: a * b, inputs=[np.float32(3.0), np.float32(4.0)])
    assert isinstance(result, list) and float(result[0]) == 12.0


def test_eager_ops_follow_tensorflow_dtype_rules():
    assert ops.add(1.0, 2.0).dtype == np.float32
    assert ops.add(1, 2).dtype == np.int32
    assert ops.multiply(np.arange(3, dtype=np.int64), 2).dtype == np.int64
    np.testing.assert_array_equal(ops.range(4), [0, 1, 2, 3])
    assert ops.range(4).dtype == np.int32
    np.testing.assert_array_equal(ops.constant(2.0, shape=[2, 2]), np.full((2, 2), 2.0))
    loss = ops.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.array([0]), logits=np.array([[0.0, 0.0]], np.float32)
    )
    np.testing.assert_allclose(loss, [np.log(2.0)], rtol=1e-6)
    np.testing.assert_array_equal(
        ops.reduce_min(np.array([[3.0, 1.0], [2.0, 5.0]]), axis=1), [1, 2]
    )
    assert ops.less(np.float32(1.0), 2.0).dtype == np.bool_
    with pytest.raises(ValueError, match="named arguments"):
        ops.nn.sparse_softmax_cross_entropy_with_logits(np.array([0]), np.zeros((1, 2)))


def test_gradient_tape_gives_analytic_gradients():
    @function
    def grads(x):
        w = ops.Variable(np.array([2.0, -1.0], np.float32), name="tape_w")
        with GradientTape(persistent=True) as tape:
            y = ops.reduce_sum(w * w * x)  # dy/dw = 2 w x
            z = ops.reduce_sum(x * x)
        gw = tape.gradient(y, w)
        gx = tape.gradient(y, [x])[0]
        none = tape.gradient(z, [w])[0]
        return gw, gx, none is None

    gw, gx, unconnected = grads(np.array([3.0, 5.0], np.float32))
    np.testing.assert_array_equal(gw, [12.0, -10.0])
    np.testing.assert_array_equal(gx, [4.0, 1.0])
    assert unconnected


def test_gradient_tape_errors():
    @function
    def twice(x):
        with GradientTape() as tape:
            y = ops.reduce_sum(x * x)
        tape.gradient(y, [x])
        tape.gradient(y, [x])

    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        twice(np.ones(2, np.float32))
    with GradientTape() as tape:
        y = ops.multiply(np.float32(2.0), 3.0)
    with pytest.raises(RuntimeError, match="traced function"):
        tape.gradient(y, [])


def test_a_method_decorated_with_tf_function_binds_its_instance():
    class Scaler:
        def __init__(self, factor: float) -> None:
            self.factor = factor

        @function
        def scale(self, x):
            return x * self.factor

    np.testing.assert_array_equal(Scaler(2.0).scale(np.ones(2, np.float32)), [2.0, 2.0])
    np.testing.assert_array_equal(Scaler(3.0).scale(np.ones(2, np.float32)), [3.0, 3.0])
