"""The TensorFlow ops the documented IPU scripts use (``tf.add``, ``tf.matmul``, ``tf.nn.relu``...).

Every op works two ways:

- on traced tensors (graph Symbols, variables inside a traced function, Keras functional
  tensors) it adds nodes through :mod:`ipusim.graph.ops`, so the op has a cost and a gradient;
- on concrete values (numpy arrays, Python numbers) it runs at once and returns an
  :class:`~ipusim.compat.runtime.tensor.EagerTensor`. It does so by building the same one-op
  graph and executing it, so eager results have exactly the traced op's dtype rules and kernels
  (Python floats are float32 and Python ints int32 unless an array fixes the type).

``tf.constant`` and ``tf.range`` always return concrete values (a constant inside a traced
function becomes a graph constant where it meets a traced tensor). Iterating ``tf.range(n)`` in a
traced function makes an on-device loop, as autograph does (see
:func:`ipusim.compat.runtime.loops.traced_range_loop`); Python's ``range`` is unrolled.
Comparisons (``tf.less``...) and ``tf.control_dependencies`` (honoured by ``tf.identity``) are
here too, since graph Symbols have no comparison operators.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ipusim.compat.runtime import context, ops_control  # noqa: F401  (registers ipu_after)
from ipusim.compat.runtime.dispatch import default_array, rank_of
from ipusim.compat.runtime.dispatch import is_symbolic as _is_symbolic
from ipusim.compat.runtime.dispatch import run_op as _op
from ipusim.compat.runtime.ops_nn import (
    bias_add,
    log_softmax,
    nn,
    relu,
    sigmoid,
    softmax,
    sparse_softmax_cross_entropy_with_logits,
    tanh,
)
from ipusim.compat.runtime.strings import (
    fit_shape,
    host_strings,
    is_string_dtype,
    string_constant,
)
from ipusim.compat.runtime.tensor import EagerTensor
from ipusim.errors import InvalidTypeError, UnsupportedError
from ipusim.graph.graph import Symbol, apply
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import shape as gs
from ipusim.graph.ops.operators import getitem, power
from ipusim.graph.spec import canonical_dtype
from ipusim.graph.variable import Variable as _GraphVariable


# ---------------------------------------------------------------------- creation
def _holds_text(value: Any) -> bool:
    """Whether ``value`` is text: a str / bytes, an array of them, or lists holding them."""
    if isinstance(value, list | tuple):
        return bool(value) and _holds_text(value[0])
    return isinstance(value, str | bytes) or (
        isinstance(value, np.ndarray | np.generic) and value.dtype.kind in "OSU"
    )


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Any:
    """A concrete tensor holding ``value`` (filled or reshaped to ``shape`` when given)."""
    if isinstance(value, Symbol):
        return value if dtype is None else cast(value, dtype)
    if is_string_dtype(dtype) or (dtype is None and _holds_text(value)):
        return string_constant(value, shape)
    array = default_array(value, dtype)
    if array.dtype.kind not in "biuf":
        raise InvalidTypeError(f"tf.constant: expected numbers, received {value!r:.60}")
    hint = "; give a scalar (to fill the shape) or exactly as many elements as it holds"
    return np.array(fit_shape(array, shape, hint)).view(EagerTensor)


def convert_to_tensor(value: Any, dtype: Any = None, name: str | None = None) -> Any:
    if _is_symbolic(value):
        return value if dtype is None else cast(value, dtype)
    return constant(value, dtype)


def range(
    start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None, name: str | None = None
) -> Any:  # noqa: A001
    """``tf.range``: ``[start, limit)`` in steps of ``delta`` (int32 for ints, float32 for floats)."""
    if limit is None:
        start, limit = 0, start
    values = [start, limit, delta]
    if any(_is_symbolic(v) for v in values):
        raise InvalidTypeError(
            "tf.range: ipusim needs concrete bounds (Python numbers); a loop over a traced "
            "range is unrolled at trace time"
        )
    array = np.arange(*(np.asarray(v).item() for v in values))
    return default_array(array.tolist() if array.size else array, dtype).view(RangeTensor)


class RangeTensor(EagerTensor):
    """What ``tf.range`` returns: iterated inside a traced function, it is an on-device loop
    (see :func:`ipusim.compat.runtime.loops.traced_range_loop`); elsewhere an ordinary tensor."""

    def __iter__(self) -> Any:
        if context.is_tracing():
            from ipusim.compat.runtime.loops import traced_range_loop

            return traced_range_loop(np.asarray(self).view(np.ndarray))
        return iter(np.asarray(self).view(EagerTensor))


def zeros(shape: Any, dtype: Any = "float32", name: str | None = None) -> Any:
    return np.zeros(tuple(int(d) for d in shape), dtype=canonical_dtype(dtype)).view(EagerTensor)


def ones(shape: Any, dtype: Any = "float32", name: str | None = None) -> Any:
    return np.ones(tuple(int(d) for d in shape), dtype=canonical_dtype(dtype)).view(EagerTensor)


def _like(value: Any, fill: float, dtype: Any) -> Any:
    if _is_symbolic(value):
        sym = value if isinstance(value, Symbol) else gm.identity(value)
        filled = gm.add(gm.multiply(sym, 0), fill)
        return filled if dtype is None else gm.cast(filled, dtype)
    array = default_array(value)
    return np.full(array.shape, fill, dtype=canonical_dtype(dtype or array.dtype)).view(EagerTensor)


def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Any:  # noqa: A002
    return _like(input, 0, dtype)


def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Any:  # noqa: A002
    return _like(input, 1, dtype)


_variable_ids = itertools.count()


def Variable(  # noqa: N802 - TensorFlow's name
    initial_value: Any,
    trainable: bool = True,
    name: str | None = None,
    dtype: Any = None,
    **kwargs: Any,
) -> TFVariable:
    """``tf.Variable``: a named array that traced functions read and optimizers update."""
    if callable(initial_value):
        initial_value = initial_value()
    array = default_array(initial_value, dtype)
    label = name or f"Variable_{next(_variable_ids)}"
    variable = TFVariable(array, label if ":" in label else f"{label}:0", trainable=trainable)
    created = getattr(context.current_or_graph_mode(), "created_variables", None)
    if created is not None:  # a TF1 graph's variable: its initializer must run first
        created.append(variable)
    return variable


# ---------------------------------------------------------------------- elementwise
def cast(x: Any, dtype: Any, name: str | None = None) -> Any:
    return _op(gm.cast, x, canonical_dtype(dtype))


@host_strings("identity")
def identity(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """``input`` unchanged; inside ``control_dependencies`` it also waits for those ops."""
    deps = [d for d in _dependencies() if isinstance(d, Symbol)]
    if deps and _is_symbolic(input):
        graph = deps[0].graph
        mine = [d for d in deps if d.graph is graph]
        return apply("ipu_after", input, *mine)
    return _op(gm.identity, input)


_control = threading.local()


def _dependencies() -> list[Any]:
    return [d for frame in getattr(_control, "stack", []) for d in frame]


@contextmanager
def control_dependencies(control_inputs: Any) -> Iterator[None]:
    """``tf.control_dependencies``: ``identity`` inside the block runs after ``control_inputs``
    (operations such as an outfeed enqueue, or tensors). Other ops are not affected."""
    items = [] if control_inputs is None else list(control_inputs)
    frame = []
    for item in items:
        symbol = getattr(item, "symbol", item)
        if isinstance(symbol, Symbol):
            frame.append(symbol)
    stack = getattr(_control, "stack", None)
    if stack is None:
        stack = _control.stack = []
    stack.append(frame)
    try:
        yield
    finally:
        stack.pop()


def stop_gradient(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return _op(gm.stop_gradient, input)


def _elementwise(name: str, fn: Callable[..., Any], arity: int) -> Callable[..., Any]:
    """``tf.<name>(x[, y], name=None)``: ``fn`` on one or two tensors, traced or at once."""
    if arity == 1:

        def op(x: Any, name: str | None = None) -> Any:
            return _op(fn, x)
    else:

        def op(x: Any, y: Any, name: str | None = None) -> Any:  # type: ignore[misc]
            return _op(fn, x, y)

    op.__name__ = op.__qualname__ = name
    return op


add = _elementwise("add", gm.add, 2)
subtract = _elementwise("subtract", gm.subtract, 2)
multiply = _elementwise("multiply", gm.multiply, 2)
divide = _elementwise("divide", gm.divide, 2)
maximum = _elementwise("maximum", gm.maximum, 2)
minimum = _elementwise("minimum", gm.minimum, 2)
equal = host_strings("equal")(_elementwise("equal", gm.equal, 2))
negative = _elementwise("negative", gm.negative, 1)
abs = _elementwise("abs", gm.abs, 1)  # noqa: A001
square = _elementwise("square", gm.square, 1)
sqrt = _elementwise("sqrt", gm.sqrt, 1)
exp = _elementwise("exp", gm.exp, 1)
log = _elementwise("log", gm.log, 1)


def _comparison(name: str) -> Callable[..., Any]:
    def compare(x: Any, y: Any, name: str | None = None) -> Any:
        return _op(lambda a, b: apply("ipu_compare", a, b, comparison=kind), x, y)

    kind = name
    compare.__name__ = name
    compare.__doc__ = f"``tf.{name}``: elementwise, broadcasting, bool result."
    return compare


less = _comparison("less")
less_equal = _comparison("less_equal")
greater = _comparison("greater")
greater_equal = _comparison("greater_equal")
not_equal = host_strings("not_equal")(_comparison("not_equal"))
logical_and = _comparison("logical_and")
logical_or = _comparison("logical_or")


def matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    name: str | None = None,
    **kwargs: Any,
) -> Any:
    if max(rank_of(a), rank_of(b)) > 2:
        from ipusim.compat.runtime.ops_linalg import batched_matmul  # it imports this module

        return batched_matmul(a, b, bool(transpose_a), bool(transpose_b))
    return _op(gnn.matmul, a, b, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


def _operator(fn: Callable[..., Any], reflected: bool = False) -> Callable[..., Any]:
    """A binary operator method of :class:`TFVariable`: ``fn(self, other)``, or
    ``fn(other, self)`` for a reflected one (``__radd__``...)."""

    def method(self: Any, other: Any) -> Any:
        return fn(other, self) if reflected else fn(self, other)

    return method


class TFVariable(_GraphVariable):
    """``tf.Variable``: an ipusim variable with TensorFlow's operators (``w * x``, ``-w``...)."""

    def read_value(self) -> Any:
        return self if context.is_tracing() else self.numpy().view(EagerTensor)

    __add__, __radd__ = _operator(add), _operator(add, True)
    __sub__, __rsub__ = _operator(subtract), _operator(subtract, True)
    __mul__, __rmul__ = _operator(multiply), _operator(multiply, True)
    __truediv__, __rtruediv__ = _operator(divide), _operator(divide, True)
    __matmul__, __rmatmul__ = _operator(matmul), _operator(matmul, True)
    __pow__ = _operator(lambda a, b: _op(power, a, b))
    __rpow__ = _operator(lambda a, b: _op(power, a, b), True)

    def __neg__(self) -> Any:
        return negative(self)

    def __abs__(self) -> Any:
        return abs(self)

    def __getitem__(self, key: Any) -> Any:
        """``v[key]``: TensorFlow's basic indexing, traced or at once."""
        return _op(lambda v: getitem(v, key), self)


# ---------------------------------------------------------------------- reductions
def _reduction(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``tf.<name>(input_tensor, axis=None, keepdims=False, name=None)`` running ``fn``."""

    def reduce(
        input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
    ) -> Any:
        return _op(fn, input_tensor, axis=gm.axis_attr(axis), keepdims=bool(keepdims))

    reduce.__name__ = reduce.__qualname__ = name
    return reduce


def _reduce_min(x: Any, axis: Any, keepdims: bool) -> Any:
    return gm.negative(gr.reduce_max(gm.negative(x), axis=axis, keepdims=keepdims))


reduce_sum = _reduction("reduce_sum", gr.reduce_sum)
reduce_mean = _reduction("reduce_mean", gr.reduce_mean)
reduce_max = _reduction("reduce_max", gr.reduce_max)
reduce_min = _reduction("reduce_min", _reduce_min)


def argmax(input: Any, axis: int = -1, output_type: Any = "int64", name: str | None = None) -> Any:  # noqa: A002
    return _op(gr.argmax, input, axis=int(axis), output_type=canonical_dtype(output_type))


# ---------------------------------------------------------------------- shapes
@host_strings("reshape")
def reshape(tensor: Any, shape: Any, name: str | None = None) -> Any:
    return _op(gs.reshape, tensor, shape=tuple(int(d) for d in shape))


@host_strings("transpose")
def transpose(a: Any, perm: Any = None, name: str | None = None) -> Any:
    return _op(gs.transpose, a, perm=None if perm is None else tuple(int(p) for p in perm))


@host_strings("concat")
def concat(values: Any, axis: int, name: str | None = None) -> Any:
    return _op(lambda *vs, axis: gs.concat(list(vs), axis), *values, axis=int(axis))


@host_strings("expand_dims")
def expand_dims(input: Any, axis: int, name: str | None = None) -> Any:  # noqa: A002
    return _op(gs.expand_dims, input, axis=int(axis))


@host_strings("squeeze")
def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Any:  # noqa: A002
    return _op(gs.squeeze, input, axis=axis)


def one_hot(
    indices: Any,
    depth: int,
    on_value: Any = None,
    off_value: Any = None,
    axis: int | None = None,
    dtype: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.one_hot`` (TensorFlow's argument order): ``on_value`` where the class is,
    ``off_value`` elsewhere (1 / 0 by default), on a new last axis."""
    if axis not in (None, -1):
        raise UnsupportedError(f"tf.one_hot(axis={axis}) is not simulated; only the last axis")
    if dtype is None:  # TensorFlow: the values' dtype, else float32
        given = next((v for v in (on_value, off_value) if v is not None), None)
        dtype = "float32" if given is None else default_array(given).dtype.name
    dtype = canonical_dtype(dtype)
    # TensorFlow's OneHot takes uint8 and int8 indices too (labels often come as uint8):
    # widen them, as their values are the same class ids.
    if str(getattr(indices, "dtype", "")) in ("uint8", "int8"):
        indices = cast(indices, "int32")
    hot = _op(gnn.one_hot, indices, depth=int(depth), dtype=dtype)
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    if (on, off) == (1, 0):
        return hot
    scale = np.asarray(on, dtype=dtype) - np.asarray(off, dtype=dtype)
    return add(multiply(hot, scale), np.asarray(off, dtype=dtype))


truediv = divide

__all__ = [
    "Variable",
    "abs",
    "add",
    "argmax",
    "bias_add",
    "cast",
    "concat",
    "constant",
    "control_dependencies",
    "convert_to_tensor",
    "divide",
    "equal",
    "exp",
    "expand_dims",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "not_equal",
    "identity",
    "log",
    "log_softmax",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nn",
    "one_hot",
    "ones",
    "ones_like",
    "range",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "relu",
    "reshape",
    "sigmoid",
    "softmax",
    "sparse_softmax_cross_entropy_with_logits",
    "sqrt",
    "square",
    "squeeze",
    "stop_gradient",
    "subtract",
    "tanh",
    "transpose",
    "truediv",
    "zeros",
    "zeros_like",
]
