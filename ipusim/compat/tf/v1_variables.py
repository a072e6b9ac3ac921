"""TF1's named variables: ``tf.compat.v1.get_variable``, ``variable_scope`` and ``AUTO_REUSE``.

In a TF1 graph (:mod:`ipusim.compat.tf.v1_session`) ``get_variable(name, shape, ...)`` creates
the variable ``<scope>/<name>:0`` once; asking again for the same name is an error unless the
enclosing ``variable_scope`` reuses (``reuse=True``: it must exist; ``AUTO_REUSE``: created on
first use), as TF1's variable store does. In eager code, as in TensorFlow 2 without a variable
store, every call creates a new variable. The default initializer is Glorot uniform for floating
point variables and zeros for integer ones (TF1's ``VariableScope`` defaults).
S: tensorflow/python/ops/variable_scope.py (TF 2.21).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.context import TraceContext
from ipusim.compat.runtime.ops import TFVariable, Variable
from ipusim.errors import ConfigurationError
from ipusim.graph.spec import canonical_dtype
from ipusim.keras import initializers

__all__ = ["AUTO_REUSE", "get_variable", "variable_scope"]


class _ReuseMode:
    def __repr__(self) -> str:
        return "AUTO_REUSE"


#: ``tf.compat.v1.AUTO_REUSE``: create a variable on first use, reuse it afterwards.
AUTO_REUSE = _ReuseMode()

_local = threading.local()
#: TF1 graph trace -> {full name: variable} (TF1's per-graph variable store).
_STORES: weakref.WeakKeyDictionary[TraceContext, dict[str, TFVariable]] = (
    weakref.WeakKeyDictionary()
)


def _scopes() -> list[tuple[str, Any, Any]]:
    scopes: list[tuple[str, Any, Any]] = _local.__dict__.setdefault("scopes", [])
    return scopes


@contextmanager
def variable_scope(
    name_or_scope: Any,
    default_name: str | None = None,
    values: Any = None,
    initializer: Any = None,
    reuse: Any = None,
    **kwargs: Any,
) -> Iterator[str]:
    """``tf.compat.v1.variable_scope``: prefix ``get_variable`` names with the scope; ``reuse``
    (True or AUTO_REUSE) is inherited by inner scopes, as is ``initializer``.

    Raises:
        ConfigurationError: neither ``name_or_scope`` nor ``default_name``.
    """
    del values, kwargs
    name = name_or_scope if isinstance(name_or_scope, str) else default_name
    if not name:
        raise ConfigurationError(
            "variable_scope: expected a scope name (name_or_scope) or a default_name, received "
            "neither"
        )
    outer = _scopes()[-1] if _scopes() else ("", None, None)
    prefix = f"{outer[0]}/{name}" if outer[0] else name
    inherited = reuse if reuse is not None else outer[1]
    _scopes().append((prefix, inherited, initializer if initializer is not None else outer[2]))
    try:
        yield prefix
    finally:
        _scopes().pop()


def _initial_value(shape: Any, dtype: str, initializer: Any) -> np.ndarray:
    if initializer is None:
        initializer = "glorot_uniform" if np.dtype(dtype).kind == "f" else "zeros"
    if isinstance(initializer, np.ndarray | list | tuple | int | float) and shape is None:
        return np.asarray(initializer, dtype=dtype)
    if shape is None:
        raise ConfigurationError(
            "get_variable: the shape of a new variable must be given (or the initializer must "
            "be a constant value)"
        )
    init = initializers.get(initializer) if not callable(initializer) else initializer
    if isinstance(init, type):
        init = init()
    return np.asarray(init(tuple(int(d) for d in shape), dtype=dtype), dtype=dtype)


def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Any = None,
    trainable: bool | None = None,
    **kwargs: Any,
) -> Any:
    """``tf.compat.v1.get_variable`` (see the module docstring).

    Raises:
        ConfigurationError: (a ValueError) TF1's variable-store errors (the name exists without reuse, or reuse=True
            for a name that does not exist).
    """
    del regularizer, kwargs
    prefix, reuse, scope_init = _scopes()[-1] if _scopes() else ("", None, None)
    full = f"{prefix}/{name}" if prefix else name
    ctx = context.current_or_graph_mode()
    graph_ctx = ctx if ctx is not None and hasattr(ctx, "created_variables") else None
    store = _STORES.setdefault(graph_ctx, {}) if graph_ctx is not None else None
    if store is not None and full in store:
        if reuse is None or reuse is False:
            raise ConfigurationError(
                f"Variable {full} already exists, disallowed. Did you mean to set reuse=True or "
                "reuse=tf.AUTO_REUSE in VarScope?"
            )
        return store[full]
    if reuse is True and store is not None:
        raise ConfigurationError(
            f"Variable {full} does not exist, or was not created with tf.get_variable(). Did "
            "you mean to set reuse=tf.AUTO_REUSE in VarScope?"
        )
    kind = canonical_dtype(dtype) if dtype is not None else "float32"
    value = _initial_value(shape, kind, initializer if initializer is not None else scope_init)
    variable = Variable(value, trainable=True if trainable is None else trainable, name=full)
    if store is not None:
        store[full] = variable
    return variable
