"""``tf`` for ported IPU scripts: ``import tensorflow as tf`` becomes ``from ipusim.compat import tf``.

The names the documented IPU TensorFlow 2 scripts use, backed by ipusim:

* ``tf.keras`` is :mod:`ipusim.compat.keras` (the same module as ``from ipusim.compat import
  keras``); ``tf.python.ipu`` is :mod:`ipusim.compat.ipu` (so ``from tensorflow.python import
  ipu`` ports too);
* ``tf.data`` (``Dataset``, ``AUTOTUNE``, ``experimental``), ``tf.cast``, ``tf.newaxis``, the
  dtypes ``float16 float32 float64 int32 int64 uint8 bool``, ``tf.TensorSpec``;
* ``tf.constant`` and ``tf.random`` (seeded);
* ``tf.device`` / ``tf.DeviceSpec`` (parsed as TensorFlow does; placement does not change the
  simulated IPU program, see :mod:`ipusim.compat.tf.device_scope`);
* ``tf.function``, ``tf.GradientTape``, ``tf.nn``, ``tf.math`` and any other name come from
  ipusim's custom-training-loop runtime (``ipusim.compat.runtime``) on first use.

``tf.__version__`` is ``"2.6.0-ipusim"``: the TensorFlow version whose API this mirrors (scripts
check ``tf.__version__[0] == '2'``), marked so it is never mistaken for a real TensorFlow.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from ipusim.compat import ipu, keras
from ipusim.compat._alias import optional_module, runtime_getattr
from ipusim.compat.dataset_benchmark import OutOfRangeError
from ipusim.compat.runtime.strings import as_dtype, fit_shape, string
from ipusim.compat.tf import (  # type: ignore[attr-defined]
    # image, initializers, linalg, losses, math, metrics, nn and optimizers are made by the
    # import hook of ipusim.compat._alias (MODULES, FORWARDS), which mypy cannot follow
    config,
    data,
    distribute,
    estimator,
    experimental,
    image,
    initializers,
    linalg,
    losses,
    math,
    metrics,
    nn,
    optimizers,
    python,
    random,
    strings,
    summary,
)
from ipusim.compat.tf.device_scope import DeviceSpec, device
from ipusim.compat.tf.python.platform import test
from ipusim.compat.tf.strings import as_string
from ipusim.compat.tf.tensor_spec import TensorSpec
from ipusim.compat.tf.v1_graph import FailedPreconditionError
from ipusim.data import dtypes as _dtypes
from ipusim.data.dtypes import (
    DType,
    bool_,
    float16,
    float32,
    float64,
    int32,
    int64,
    newaxis,
    uint8,
)
from ipusim.errors import InvalidTypeError

#: The TensorFlow version whose API this mirrors, marked as ipusim's.
__version__ = "2.6.0-ipusim"

# ``ops`` before ``tape``: the tape module imports the graph's ``reduce_sum``, which must not
# shadow the runtime's (eager-capable) ``tf.reduce_sum``.
_RUNTIME = (
    "ipusim.compat.runtime.function",
    "ipusim.compat.runtime.ops",
    "ipusim.compat.runtime.tape",
    "ipusim.compat.runtime.namespaces:top",
)
_RUNTIME_NAMES = ("GradientTape", "Variable", "function")

#: ``tf.errors``: the error types ported scripts catch.
errors = SimpleNamespace(
    FailedPreconditionError=FailedPreconditionError, OutOfRangeError=OutOfRangeError
)

__all__ = [
    "DType",
    "DeviceSpec",
    "GradientTape",
    "TensorSpec",
    "Variable",
    "__version__",
    "as_dtype",
    "as_string",
    "bool",
    "cast",
    "compat",
    "constant",
    "config",
    "data",
    "device",
    "distribute",
    "errors",
    "estimator",
    "experimental",
    "float16",
    "float32",
    "float64",
    "function",
    "image",
    "initializers",
    "int32",
    "int64",
    "ipu",
    "keras",
    "linalg",
    "losses",
    "math",
    "metrics",
    "newaxis",
    "nn",
    "optimizers",
    "python",
    "random",
    "string",
    "strings",
    "summary",
    "test",
    "uint8",
]

from ipusim.compat.tf import compat  # noqa: E402 - tf.compat.v2 is this module

globals()["bool"] = bool_  # ``tf.bool``, without shadowing the builtin in this module's code

# Symbolic tensors' `<`, `>`, `&`, `|` (Keras functional tensors too) build the runtime's
# comparison op, registered when its module loads: load it now, not on the first tf.function.
optional_module("ipusim.compat.runtime.ops_control")


def _runtime_op(name: str) -> Any:
    """The runtime's op ``name`` (``ipusim.compat.runtime.ops``), or None when not installed."""
    ops = optional_module("ipusim.compat.runtime.ops")
    return getattr(ops, name, None) if ops is not None else None


def _is_host_value(x: Any) -> bool:
    """Numpy arrays / scalars, Python numbers and (nested) lists, tuples and dicts of them."""
    if isinstance(x, dict):
        return all(_is_host_value(v) for v in x.values())
    if isinstance(x, list | tuple):
        return all(_is_host_value(v) for v in x)
    return isinstance(x, np.ndarray | np.generic | int | float | complex)


def cast(x: Any, dtype: Any, name: str | None = None) -> Any:
    """``tf.cast``: convert ``x`` to ``dtype``.

    Numpy values (what ``Dataset.map`` functions receive in ipusim) are cast by
    :func:`ipusim.data.cast`; any other tensor is handed to the runtime's ``cast``.

    Raises:
        TypeError: ``x`` is neither a numpy value nor a tensor the runtime knows.
    """
    if _is_host_value(x):
        return _dtypes.cast(x, dtype)
    op = _runtime_op("cast")
    if op is None:
        raise InvalidTypeError(
            f"tf.cast: cannot cast a {type(x).__name__}; ipusim casts numpy arrays, Python "
            "numbers and (nested) tuples / lists / dicts of them"
        )
    return op(x, dtype, name=name) if name is not None else op(x, dtype)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Any:
    """``tf.constant``: a tensor holding ``value``.

    Uses the runtime's ``constant`` when it is installed (so constants inside a ``tf.function``
    are traced); otherwise a numpy array of ``dtype`` (inferred as TensorFlow does: Python
    floats become float32, ints int32), reshaped or broadcast to ``shape`` when given.

    Raises:
        TypeError: ``value`` is not numeric.
        ValueError: ``value`` cannot take ``shape``.
    """
    op = _runtime_op("constant")
    if op is not None:
        return op(value, dtype=dtype, shape=shape, name=name)
    array = np.asarray(value)
    if dtype is not None:
        array = array.astype(as_dtype(dtype).dtype)
    elif array.dtype == np.float64 and not isinstance(value, np.ndarray | np.generic):
        array = array.astype(np.float32)
    elif array.dtype == np.int64 and not isinstance(value, np.ndarray | np.generic):
        array = array.astype(np.int32)
    if array.dtype.kind not in "biuf":
        raise InvalidTypeError(f"tf.constant: expected numbers, received {value!r:.60}")
    hint = "; give a scalar (to fill the shape) or exactly as many elements as the shape holds"
    return fit_shape(array, shape, hint)


_runtime_getattr = runtime_getattr(__name__, _RUNTIME, _RUNTIME_NAMES)


def __getattr__(name: str) -> Any:
    if name == "Graph":  # TF1 graphs for tf.compat.v1.Session (``tf.Graph().as_default()``)
        from ipusim.compat.tf.v1_session import Graph

        return Graph
    return _runtime_getattr(name)
