"""How the runtime's TensorFlow ops choose between building graph nodes and computing at once.

:func:`run_op` calls a graph-op function on traced tensors as it is; on concrete values it builds
the same one-op graph and executes it, so eager results follow the traced op's dtype rules and
kernels exactly (Python floats are float32 and Python ints int32 unless an array fixes the type).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.strings import HOST_STRUCTURAL, is_string_array
from ipusim.compat.runtime.tensor import to_eager
from ipusim.errors import UnsupportedError
from ipusim.graph.execute import Executor
from ipusim.graph.graph import Graph, Symbol, default_graph
from ipusim.graph.spec import TensorSpec, canonical_dtype
from ipusim.keras.engine.nest import flatten, map_structure

__all__ = [
    "as_list", "default_array", "is_array", "is_int", "is_symbolic", "rank_of", "run_op", "shape_of",
]  # fmt: skip


def is_symbolic(value: Any) -> bool:
    if isinstance(value, Symbol) or getattr(value, "_is_deferred_tensor", False):
        return True
    if getattr(value, "_is_ipusim_variable", False):
        return context.is_tracing()
    if isinstance(value, list | tuple):
        return any(is_symbolic(v) for v in value)
    return False


def is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic) or getattr(
        value, "_is_ipusim_variable", False
    )


def as_list(inputs: Any) -> list[Any]:
    """``inputs`` as a list: [] for None, a list or tuple copied, anything else wrapped."""
    if inputs is None:
        return []
    if isinstance(inputs, list | tuple):
        return list(inputs)
    return [inputs]


def is_int(value: Any) -> bool:
    """Whether ``value`` is a Python or NumPy integer (not a bool)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def shape_of(value: Any) -> tuple[int | None, ...]:
    """The static shape of a tensor, array or nested list."""
    return tuple(value.shape) if hasattr(value, "shape") else np.shape(value)


def rank_of(value: Any) -> int:
    """The number of axes of a tensor, array or nested list."""
    return len(shape_of(value))


def default_array(value: Any, dtype: Any = None) -> np.ndarray:
    """``value`` as an array with TensorFlow's defaults (Python floats float32, ints int32)."""
    if getattr(value, "_is_ipusim_variable", False):
        value = value.value
    if dtype is not None:
        return np.asarray(value, dtype=canonical_dtype(dtype))
    array = np.asarray(value)
    if isinstance(value, np.ndarray | np.generic):
        return array
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64:
        return array.astype(np.int32)
    return array


def run_op(fn: Callable[..., Any], *args: Any, **attrs: Any) -> Any:
    """``fn(*args, **attrs)`` on traced tensors, or executed at once on concrete ones."""
    if any(is_symbolic(a) for a in args):
        return fn(*args, **attrs)
    if any(is_string_array(a) for a in flatten(list(args))):
        op = getattr(fn, "__name__", "<op>")
        raise UnsupportedError(
            f"{'this op' if op.startswith('<') else 'tf.' + op} does not take tf.string "
            "tensors; on the host "
            "ipusim's string tensors take tf.strings.*, ==, != and the shape ops (tf.stack, "
            f"tf.unstack, tf.reshape, ...: {', '.join(sorted(HOST_STRUCTURAL))})"
        )
    graph = Graph("eager")
    feeds: list[np.ndarray] = []
    placeholders: list[Symbol] = []
    any_array = any(is_array(a) for a in flatten(list(args)))

    def convert(value: Any) -> Any:
        if isinstance(value, list | tuple) and any(is_array(v) for v in value):
            return type(value)(convert(v) for v in value)
        is_number = isinstance(value, bool | int | float) and not any_array
        is_list = isinstance(value, list | tuple) and not any_array
        if is_array(value) or is_number or is_list:
            array = default_array(value)
            sym = graph.placeholder(TensorSpec(array.shape, array.dtype.name))
            placeholders.append(sym)
            feeds.append(array)
            return sym
        return value

    converted = [convert(a) for a in args]
    with default_graph(graph):
        out = fn(*converted, **attrs)
    flat = [s for s in flatten(out) if isinstance(s, Symbol)]
    values = iter(Executor(graph, flat, placeholders).run(feeds))
    return to_eager(map_structure(lambda s: next(values) if isinstance(s, Symbol) else s, out))
