"""``tf.experimental.numpy``: TensorFlow's NumPy API as a thin layer over NumPy and ipusim's ops.

On concrete values (NumPy arrays, Python numbers, the eager tensors ipusim returns) every function
is NumPy's own, so results have NumPy's dtypes exactly as TensorFlow's NumPy API gives them
(``float64`` / ``int64`` defaults) and come back as eager tensors (``.numpy()`` works). On
symbolic tensors (inside a traced function or a Keras layer) the elementwise, reduction and shape
functions that ipusim has graph ops for build those ops (so they have a cost and a gradient);
any other function on a symbolic tensor raises :class:`~ipusim.errors.UnsupportedError` naming
it. Only the names TensorFlow's module has are provided (:data:`FUNCTIONS`, taken from
TensorFlow 2.21's ``tf.experimental.numpy``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _np

from ipusim.compat.runtime.tensor import to_eager
from ipusim.errors import UnsupportedError
from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import shape as gs

__all__ = ["FUNCTIONS", "experimental_enable_numpy_behavior"]

#: The functions of TensorFlow's ``tf.experimental.numpy`` (those NumPy also has).
FUNCTIONS = frozenset(
    """abs absolute add all allclose amax amin angle any append arange arccos arccosh arcsin
    arcsinh arctan arctan2 arctanh argmax argmin argsort around array array_equal asanyarray
    asarray ascontiguousarray atleast_1d atleast_2d atleast_3d average bitwise_and bitwise_not
    bitwise_or bitwise_xor broadcast_arrays broadcast_to cbrt ceil clip compress concatenate
    conj conjugate copy cos cosh count_nonzero cross cumprod cumsum deg2rad diag diag_indices
    diagflat diagonal diff divide divmod dot dsplit dstack einsum empty empty_like equal exp
    exp2 expand_dims expm1 eye fabs finfo fix flip fliplr flipud float_power floor floor_divide
    full full_like gcd geomspace greater greater_equal heaviside hsplit hstack hypot identity
    imag inner isclose iscomplex iscomplexobj isfinite isinf isnan isneginf isposinf isreal
    isrealobj isscalar issubdtype ix_ kron lcm less less_equal linspace log log10 log1p log2
    logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logspace matmul max
    maximum mean meshgrid min minimum mod moveaxis multiply nanmean nanprod nansum ndim
    negative nextafter nonzero not_equal ones ones_like outer pad polyval positive power prod
    promote_types ptp rad2deg ravel real reciprocal remainder repeat reshape result_type roll
    rot90 round select shape sign signbit sin sinc sinh size sort split sqrt square squeeze
    stack std subtract sum swapaxes take take_along_axis tan tanh tensordot tile trace
    transpose tri tril triu true_divide vander var vdot vsplit vstack where zeros zeros_like""".split()  # noqa: SIM905 - a word table
)

# NumPy renamed a few of TensorFlow's names (NumPy 2): TensorFlow's name -> NumPy's.
_NUMPY_NAME = {"around": "round", "product": "prod"}

# Constants and dtypes of the module.
bool_, int8, int16, int32, int64 = _np.bool_, _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
ndarray, iinfo, inexact = _np.ndarray, _np.iinfo, _np.inexact
e, pi, inf, newaxis = _np.e, _np.pi, _np.inf, None


def experimental_enable_numpy_behavior(
    prefer_float32: bool = False, dtype_conversion_mode: str = "legacy"
) -> None:  # noqa: E501
    """Accepted for compatibility: ipusim's tensors already behave as NumPy arrays."""
    if prefer_float32:
        raise UnsupportedError(
            "tf.experimental.numpy.experimental_enable_numpy_behavior(prefer_float32=True) is "
            "not simulated: ipusim's tf.experimental.numpy keeps NumPy's float64 default"
        )


def _symbolic_ops() -> dict[str, Callable[..., Any]]:
    """TensorFlow NumPy names -> graph-op builders taking the same leading arguments."""
    return {
        "abs": gm.abs, "absolute": gm.abs, "add": gm.add, "subtract": gm.subtract,
        "multiply": gm.multiply, "divide": gm.divide, "true_divide": gm.divide,
        "maximum": gm.maximum, "minimum": gm.minimum, "negative": gm.negative,
        "exp": gm.exp, "log": gm.log, "sqrt": gm.sqrt, "square": gm.square, "tanh": gm.tanh,
        "matmul": gnn.matmul, "dot": gnn.matmul, "transpose": gs.transpose,
        "reshape": gs.reshape, "expand_dims": gs.expand_dims, "squeeze": gs.squeeze,
        "concatenate": lambda arrays, axis=0: gs.concat(arrays, axis),
        "sum": lambda a, axis=None, keepdims=False: gm.reduce_sum(a, axis, keepdims=keepdims),
        "mean": lambda a, axis=None, keepdims=False: gm.reduce_mean(a, axis, keepdims=keepdims),
        "amax": lambda a, axis=None, keepdims=False: gm.reduce_max(a, axis, keepdims=keepdims),
        "max": lambda a, axis=None, keepdims=False: gm.reduce_max(a, axis, keepdims=keepdims),
        "clip": lambda a, a_min, a_max: gm.clip(a, a_min, a_max),
        "power": lambda a, b: a**b,
        "positive": lambda a: a,
    }  # fmt: skip


def _is_symbolic(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return any(_is_symbolic(v) for v in value)
    return isinstance(value, Symbol) or getattr(value, "_is_deferred_tensor", False)


def _concrete(value: Any) -> Any:
    if getattr(value, "_is_ipusim_variable", False):
        return _np.asarray(value.value)
    if isinstance(value, list | tuple):
        return type(value)(_concrete(v) for v in value)
    return value


def _function(name: str) -> Callable[..., Any]:
    numpy_fn = getattr(_np, _NUMPY_NAME.get(name, name))

    def call(*args: Any, **kwargs: Any) -> Any:
        if any(_is_symbolic(a) for a in (*args, *kwargs.values())):
            op = _symbolic_ops().get(name)
            if op is None:
                raise UnsupportedError(
                    f"tf.experimental.numpy.{name} on a symbolic tensor is not simulated by "
                    "ipusim; on concrete values it works (NumPy's), and on traced tensors use "
                    "the tf.* op of the same name where one exists"
                )
            return op(*args, **kwargs)
        result = numpy_fn(*(_concrete(a) for a in args), **kwargs)
        return to_eager(result)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``tf.experimental.numpy.{name}``: NumPy's ``{numpy_fn.__name__}``."
    return call


def __getattr__(name: str) -> Any:
    if name in FUNCTIONS:
        fn = globals()[name] = _function(name)  # built once
        return fn
    if name == "random":
        return _np.random
    raise AttributeError(
        f"module 'tf.experimental.numpy' has no attribute {name!r} (TensorFlow's module lacks it "
        "too, or it is not a NumPy function)"
    )


def __dir__() -> list[str]:
    return sorted(set(globals()) | FUNCTIONS)
