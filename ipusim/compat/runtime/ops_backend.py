"""``keras.backend`` tensor functions (``K.mean``, ``K.dot``, ``K.batch_dot``, ``K.int_shape``...)
over the runtime's TensorFlow ops, with Keras 2's argument names and defaults (``axis=None,
keepdims=False``; ``K.clip`` clamps ``max_value`` up to ``min_value`` as Keras does).

The settings functions (``floatx``, ``epsilon``, ``clear_session``...) stay in
:mod:`ipusim.keras.backend`; ``ipusim.compat.keras.backend`` offers both.
"""

from __future__ import annotations

import builtins
import inspect
import itertools
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np

from ipusim.compat.runtime import ops, ops_array, ops_linalg, ops_math, ops_nn_extra
from ipusim.compat.runtime.dispatch import default_array, is_symbolic, rank_of
from ipusim.compat.runtime.ops_math import _op
from ipusim.compat.runtime.ops_nn import nn as _nn
from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import math_extra as me
from ipusim.keras import backend as _settings
from ipusim.keras import backend_ops as _keras
from ipusim.keras.backend_ops import int_shape

_image_format = {"value": "channels_last"}
_learning_phase = {"value": 0}
_uids: dict[str, itertools.count[int]] = {}


def _reduction(fn: Callable[..., Any]) -> Callable[..., Any]:
    def reduce(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return fn(x, axis=axis, keepdims=keepdims)

    reduce.__doc__ = f"``K.{fn.__name__}``: Keras' name for ``tf.math.{fn.__name__}``."
    return reduce


sum = _reduction(ops.reduce_sum)  # noqa: A001
mean = _reduction(ops.reduce_mean)
max = _reduction(ops.reduce_max)  # noqa: A001
min = _reduction(ops.reduce_min)  # noqa: A001
prod = _reduction(ops_math.reduce_prod)
std = _reduction(ops_math.reduce_std)
var = _reduction(ops_math.reduce_variance)
all = _reduction(ops_math.reduce_all)  # noqa: A001
any = _reduction(ops_math.reduce_any)  # noqa: A001
logsumexp = _reduction(ops_math.reduce_logsumexp)

abs = ops.abs  # noqa: A001
square, sqrt, exp, log = ops.square, ops.sqrt, ops.exp, ops.log
sign, round, sin, cos = ops_math.sign, ops_math.round, ops_math.sin, ops_math.cos  # noqa: A001
equal, not_equal = ops.equal, ops.not_equal
greater, greater_equal, less, less_equal = ops.greater, ops.greater_equal, ops.less, ops.less_equal
maximum, minimum = ops.maximum, ops.minimum
sigmoid, tanh = ops.sigmoid, ops.tanh
in_top_k = ops_math.in_top_k


def _keras_fn(
    name: str, fn: Callable[..., Any], /, *required: str, **optional: Any
) -> Callable[..., Any]:
    """``K.<name>(*required, **optional)``: ``fn`` called with the same arguments in the same
    order (Keras' names and defaults; ``fn`` takes them positionally)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = inspect.Signature(
        [inspect.Parameter(p, kind, annotation="Any") for p in required]
        + [inspect.Parameter(p, kind, default=d, annotation="Any") for p, d in optional.items()],
        return_annotation="Any",
    )

    def op(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return fn(*bound.args)

    op.__name__ = op.__qualname__ = name
    op.__signature__ = signature  # type: ignore[attr-defined]
    op.__doc__ = f"``K.{name}``: ``{getattr(fn, '__name__', name)}`` with Keras' arguments."
    return op


softplus = _keras_fn("softplus", ops_math.softplus, "x")
softsign = _keras_fn("softsign", ops_math.softsign, "x")
transpose = _keras_fn("transpose", ops.transpose, "x")
squeeze = _keras_fn("squeeze", ops.squeeze, "x", "axis")
zeros_like = _keras_fn("zeros_like", ops.zeros_like, "x", dtype=None, name=None)
ones_like = _keras_fn("ones_like", ops.ones_like, "x", dtype=None, name=None)
gather = _keras_fn("gather", ops_array.gather, "reference", "indices")
pow = _keras_fn("pow", ops_math.pow, "x", "a")  # noqa: A001
cumsum = _keras_fn("cumsum", ops_math.cumsum, "x", axis=0)
cumprod = _keras_fn("cumprod", ops_math.cumprod, "x", axis=0)
argmax = _keras_fn("argmax", ops.argmax, "x", axis=-1)
argmin = _keras_fn("argmin", ops_math.argmin, "x", axis=-1)
softmax = _keras_fn("softmax", _nn.softmax, "x", axis=-1)
l2_normalize = _keras_fn("l2_normalize", ops_math.l2_normalize, "x", axis=None)
reshape = _keras_fn("reshape", ops.reshape, "x", "shape")
permute_dimensions = _keras_fn("permute_dimensions", ops.transpose, "x", "pattern")
expand_dims = _keras_fn("expand_dims", ops.expand_dims, "x", axis=-1)
stack = _keras_fn("stack", ops_array.stack, "x", axis=0)
repeat_elements = _keras_fn("repeat_elements", ops_array.repeat, "x", "rep", "axis")
one_hot = _keras_fn("one_hot", ops.one_hot, "indices", "num_classes")
cast = _keras_fn("cast", ops.cast, "x", "dtype")
arange = _keras_fn("arange", ops.range, "start", stop=None, step=1, dtype="int32")
shape = _keras_fn("shape", ops_array.shape, "x")


def stop_gradient(variables: Any) -> Any:
    """``K.stop_gradient``: one tensor or a list of them."""
    if isinstance(variables, list | tuple):
        return [ops.stop_gradient(v) for v in variables]
    return ops.stop_gradient(variables)


def tile(x: Any, n: Any) -> Any:
    """``K.tile``: an int repeats the last axis... as Keras: an int ``n`` becomes ``[n]``."""
    return ops_array.tile(x, [n] if isinstance(n, int) else n)


def eye(size: Any, dtype: Any = None, name: Any = None) -> Any:
    """``K.eye``: an identity matrix (``size`` an int or a pair), of ``floatx()`` by default."""
    rows, cols = (size, size) if isinstance(size, int) else tuple(size)
    return ops_array.eye(rows, cols, dtype=dtype or _settings.floatx())


def backend() -> str:
    """``K.backend``: ``"tensorflow"``, as Keras 2 reports."""
    return "tensorflow"


def to_dense(tensor: Any) -> Any:
    """``K.to_dense``: every ipusim tensor is dense already."""
    return tensor


def clip(x: Any, min_value: Any, max_value: Any) -> Any:
    """``K.clip``: clamp to ``[min_value, max_value]`` (``max_value`` raised to ``min_value``
    when smaller, and None meaning unbounded, as Keras)."""
    lo = -np.inf if min_value is None else min_value
    hi = np.inf if max_value is None else max_value
    if not is_symbolic(lo) and not is_symbolic(hi) and np.all(np.asarray(hi) < np.asarray(lo)):
        hi = lo
    return ops_linalg.clip_by_value(x, lo, hi)


def relu(x: Any, alpha: float = 0.0, max_value: Any = None, threshold: float = 0.0) -> Any:
    """``K.relu``: slope ``alpha`` below ``threshold``, capped at ``max_value`` (Keras 2's
    backend formula)."""
    negative_part = None
    if alpha != 0:
        shifted = ops.add(ops.negative(x), threshold) if threshold != 0 else ops.negative(x)
        negative_part = ops.relu(shifted)
    clip_max = max_value is not None
    if threshold != 0:
        x = ops.multiply(x, ops.cast(ops.greater(x, np.asarray(threshold, dtype=_dt(x))), _dt(x)))
    elif max_value == 6:
        x, clip_max = ops_nn_extra.relu6(x), False
    else:
        x = ops.relu(x)
    if clip_max:
        x = ops_linalg.clip_by_value(x, 0.0, float(max_value))
    if negative_part is not None:
        x = ops.subtract(x, ops.multiply(negative_part, float(alpha)))
    return x


def _dt(x: Any) -> str:
    return str(getattr(x, "dtype", "float32"))


def elu(x: Any, alpha: float = 1.0) -> Any:
    """``K.elu``: elu scaled by ``alpha`` below 0."""
    if alpha == 1.0:
        return ops_nn_extra.elu(x)
    return _op(
        lambda v: gm.add(gm.relu(v), gm.multiply(gm.subtract(_elu(v), gm.relu(v)), float(alpha))), x
    )


def _elu(v: Any) -> Any:
    return me.unary("elu", v)


def hard_sigmoid(x: Any) -> Any:
    """``K.hard_sigmoid``: clip(0.2 x + 0.5, 0, 1)."""
    return _op(lambda v: gm.minimum(gm.maximum(gm.add(gm.multiply(v, 0.2), 0.5), 0.0), 1.0), x)


def dot(x: Any, y: Any) -> Any:
    """``K.dot``: matrix product; a rank > 2 ``y`` contracts its second-to-last axis, as Keras."""
    rx, ry = rank_of(x), rank_of(y)
    if rx == 2 and ry == 2:
        return ops.matmul(x, y)
    return ops_linalg.tensordot(x, y, [[rx - 1], [builtins.max(ry - 2, 0)]])


def batch_dot(x: Any, y: Any, axes: Any = None) -> Any:
    """``K.batch_dot``: per-sample dot over ``axes`` (default: the last of x with the
    second-to-last of y, or the last for a rank-2 y), for rank-2 and rank-3 operands."""
    rx, ry = len(x.shape), len(y.shape)
    if axes is None:
        axes = [rx - 1, ry - 2 if ry > 2 else ry - 1]
    ax = [int(a) % r for a, r in zip(np.broadcast_to(axes, (2,)), (rx, ry), strict=True)]
    if rx > 3 or ry > 3:
        raise UnsupportedError("K.batch_dot: operands of rank above 3 are not simulated")
    lx, ly = "bij"[:rx], "bkl"[:ry]
    ly = ly[: ax[1]] + lx[ax[0]] + ly[ax[1] + 1 :]
    out = "".join(dict.fromkeys(c for c in lx + ly if c == "b" or (lx + ly).count(c) == 1))
    result = ops_linalg.einsum(f"{lx},{ly}->{out}", x, y)
    return expand_dims(result, 1) if len(out) == 1 else result


def concatenate(tensors: Any, axis: int = -1) -> Any:
    """``K.concatenate``."""
    return ops.concat(list(tensors), axis)


def flatten(x: Any) -> Any:
    """``K.flatten``: a 1-D tensor."""
    return _op(_keras.flatten, x)


def batch_flatten(x: Any) -> Any:
    """``K.batch_flatten``: ``(batch, everything else)``."""
    return _op(_keras.batch_flatten, x)


def repeat(x: Any, n: int) -> Any:
    """``K.repeat``: a 2-D ``(batch, dim)`` tensor repeated to ``(batch, n, dim)``."""
    return ops_array.tile(expand_dims(x, 1), [1, int(n), 1])


def reverse(x: Any, axes: Any) -> Any:
    """``K.reverse``."""
    return ops_array.reverse(x, np.asarray(axes).reshape(-1))


def cast_to_floatx(x: Any) -> Any:
    """``K.cast_to_floatx``: a NumPy array of ``floatx()``."""
    return np.asarray(x, dtype=_settings.floatx())


def constant(value: Any, dtype: Any = None, shape: Any = None, name: Any = None) -> Any:
    """``K.constant``: dtype defaults to ``floatx()``."""
    return ops.constant(value, dtype=dtype or _settings.floatx(), shape=shape)


def zeros(shape: Any, dtype: Any = None, name: Any = None) -> Any:
    """``K.zeros``."""
    return ops.zeros(shape, dtype or _settings.floatx())


def ones(shape: Any, dtype: Any = None, name: Any = None) -> Any:
    """``K.ones``."""
    return ops.ones(shape, dtype or _settings.floatx())


def variable(value: Any, dtype: Any = None, name: Any = None, constraint: Any = None) -> Any:
    """``K.variable``: a ``tf.Variable`` of ``floatx()`` by default."""
    return ops.Variable(default_array(value, dtype or _settings.floatx()), name=name)


def get_value(x: Any) -> Any:
    """``K.get_value``: the value of a variable or tensor as a NumPy array."""
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


eval = _keras_fn("eval", get_value, "x")  # noqa: A001


def batch_get_value(tensors: Any) -> list[Any]:
    """``K.batch_get_value``."""
    return [get_value(t) for t in tensors]


def set_value(x: Any, value: Any) -> None:
    """``K.set_value``: assign ``value`` to the variable ``x``."""
    if not hasattr(x, "assign"):
        raise InvalidTypeError(
            f"K.set_value: expected a variable, received {type(x).__name__} (a plain number "
            "cannot be updated in place; set the attribute that holds it instead)"
        )
    x.assign(np.asarray(value))


def batch_set_value(tuples: Any) -> None:
    """``K.batch_set_value``."""
    for x, value in tuples:
        set_value(x, value)


def update(x: Any, new_x: Any) -> Any:
    """``K.update``: assign and return the variable."""
    set_value(x, get_value(new_x))
    return x


def update_add(x: Any, increment: Any) -> Any:
    """``K.update_add``."""
    return update(x, get_value(x) + get_value(increment))


def update_sub(x: Any, decrement: Any) -> Any:
    """``K.update_sub``."""
    return update(x, get_value(x) - get_value(decrement))


def dtype(x: Any) -> str:
    """``K.dtype``: the dtype's name."""
    return str(getattr(x, "dtype", np.asarray(x).dtype)).replace("dtype('", "").rstrip("')")


def count_params(x: Any) -> int:
    """``K.count_params``: the number of elements of a variable."""
    return int(np.prod(int_shape(x)))  # type: ignore[arg-type]  # a variable's sizes are known


def is_keras_tensor(x: Any) -> bool:
    """``K.is_keras_tensor``: a symbolic tensor of a Keras functional model."""
    return bool(getattr(x, "_is_deferred_tensor", False))


def is_sparse(tensor: Any) -> bool:
    """``K.is_sparse``: never (ipusim has no sparse tensors)."""
    return False


def image_data_format() -> str:
    """``K.image_data_format``: ``"channels_last"`` (IPU programs' NHWC)."""
    return _image_format["value"]


def set_image_data_format(data_format: str) -> None:
    """``K.set_image_data_format``: only ``channels_last`` is simulated."""
    if data_format != "channels_last":
        raise UnsupportedError(
            f"K.set_image_data_format: {data_format!r} is not simulated; IPU programs and ipusim "
            "use 'channels_last'"
        )
    _image_format["value"] = data_format


def learning_phase() -> int:
    """``K.learning_phase``: 0 (inference) unless ``set_learning_phase(1)``."""
    return _learning_phase["value"]


def set_learning_phase(value: int) -> None:
    """``K.set_learning_phase`` (deprecated in Keras: pass ``training=`` to layers instead)."""
    if value not in (0, 1):
        raise ConfigurationError(f"K.set_learning_phase: expected 0 or 1, received {value!r}")
    _learning_phase["value"] = int(value)


@contextmanager
def learning_phase_scope(value: int) -> Any:
    """``K.learning_phase_scope``."""
    previous = learning_phase()
    set_learning_phase(value)
    try:
        yield
    finally:
        set_learning_phase(previous)


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """``K.in_train_phase``: ``x`` in training (``training`` or the learning phase), else ``alt``."""
    flag = learning_phase() if training is None else training
    chosen = x if bool(flag) else alt
    return chosen() if callable(chosen) else chosen


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """``K.in_test_phase``."""
    return in_train_phase(alt, x, training)


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Any:
    """``K.switch``: a concrete condition picks a branch; a tensor selects elementwise."""
    pick = [then_expression() if callable(then_expression) else then_expression,
            else_expression() if callable(else_expression) else else_expression]  # fmt: skip
    if not is_symbolic(condition) and np.ndim(condition) == 0:
        return pick[0] if bool(np.asarray(condition)) else pick[1]
    return ops_array.where(condition, pick[0], pick[1])


def get_uid(prefix: str = "") -> int:
    """``K.get_uid``: 1, 2, ... per prefix."""
    return next(_uids.setdefault(prefix, itertools.count(1)))


def reset_uids() -> None:
    """``K.reset_uids``."""
    _uids.clear()


def manual_variable_initialization(value: bool) -> None:
    """``K.manual_variable_initialization``: no effect (ipusim initialises variables at once)."""


@contextmanager
def name_scope(name: str) -> Any:
    """``K.name_scope``: names are not part of ipusim's graphs; a no-op scope."""
    yield name


__all__ = [n for n in dir() if not n.startswith("_") and n not in {
    "Any", "Callable", "ConfigurationError", "EagerTensor", "InvalidTypeError", "UnsupportedError",
    "annotations", "builtins",
    "contextmanager", "default_array", "gm", "gs", "inspect", "is_symbolic", "itertools", "np", "ops",
    "ops_array", "ops_linalg", "ops_math", "ops_nn_extra", "ops_random",
}]  # fmt: skip
