"""The rest of the ``tf`` top level that model code and training loops call: functional control
flow (``cond``, ``map_fn``, ``foldl`` / ``foldr`` / ``scan``, ``while_loop`` on concrete values),
``TensorShape`` / ``Tensor`` / ``Module``, ``tf.nest``, ``tf.print``, ``name_scope``,
``executing_eagerly``, initializer aliases, integer division helpers, histograms and
``unravel_index``.

Control flow on traced values follows what an IPU program can hold: ``tf.cond`` with a traced
predicate computes both branches and selects (shapes fixed at compile time, as XLA's select);
loops whose trip count depends on traced values are refused (use ``ipu.loops.repeat`` or a
``tf.range`` loop).
"""

from __future__ import annotations

import builtins
import enum
import logging
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np

from ipusim.compat.runtime import context, ops, ops_array
from ipusim.compat.runtime.dispatch import is_symbolic, shape_of
from ipusim.compat.runtime.ops_math import _op, _t, floordiv, floormod, sign
from ipusim.compat.runtime.tensor import EagerTensor, is_tensor_like
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import math_extra as me
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import shape as gs
from ipusim.keras import initializers as _init
from ipusim.keras.engine import nest as _nest


# ---------------------------------------------------------------------- dtypes and types
class _TensorMeta(type):
    def __instancecheck__(cls, value: Any) -> bool:
        return is_tensor_like(value) and not isinstance(value, np.generic)


class Tensor(metaclass=_TensorMeta):
    """``tf.Tensor`` for ``isinstance`` checks: arrays, traced and Keras symbolic tensors."""


class TensorShape(builtins.tuple[int | None, ...]):
    """``tf.TensorShape``: a tuple of sizes (None where unknown) with TensorFlow's accessors."""

    def __new__(cls, dims: Any = None) -> TensorShape:
        if dims is None:
            raise UnsupportedError("tf.TensorShape(None) (unknown rank) is not simulated")
        items = [dims] if isinstance(dims, int) else list(dims)
        return super().__new__(cls, (None if d is None else int(d) for d in items))

    @property
    def rank(self) -> int:
        return len(self)

    ndims = rank

    @property
    def dims(self) -> list[int | None]:
        return list(self)

    def as_list(self) -> list[int | None]:
        return list(self)

    def is_fully_defined(self) -> bool:
        return all(d is not None for d in self)

    def num_elements(self) -> int | None:
        # np.prod sees no None: the shape is fully defined
        return int(np.prod(self)) if self.is_fully_defined() else None  # type: ignore[arg-type]

    def is_compatible_with(self, other: Any) -> bool:
        other = TensorShape(other)
        return len(other) == len(self) and all(
            a is None or b is None or a == b for a, b in zip(self, other, strict=True)
        )

    def concatenate(self, other: Any) -> TensorShape:
        return TensorShape(list(self) + list(TensorShape(other)))


class VariableAggregation(enum.Enum):
    """``tf.VariableAggregation`` (how replicas' updates combine)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableSynchronization(enum.Enum):
    """``tf.VariableSynchronization``."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class AggregationMethod:
    """``tf.AggregationMethod``: names only (ipusim sums gradients one way)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class Module:
    """``tf.Module``: a named container whose ``variables`` / ``trainable_variables`` are the
    ``tf.Variable`` objects in its attributes (and in nested modules, lists and dicts)."""

    def __init__(self, name: str | None = None) -> None:
        self._name = name or type(self).__name__.lower()

    @property
    def name(self) -> str:
        return self._name

    @property
    def name_scope(self) -> Any:
        return name_scope(self._name)

    def _walk(self, seen: set[int]) -> Iterator[Any]:
        for value in vars(self).values():
            yield from _leaves(value, seen)

    @property
    def variables(self) -> builtins.tuple[Any, ...]:
        return builtins.tuple(
            v for v in self._walk(set()) if getattr(v, "_is_ipusim_variable", False)
        )

    @property
    def trainable_variables(self) -> builtins.tuple[Any, ...]:
        return builtins.tuple(v for v in self.variables if getattr(v, "trainable", True))

    @property
    def submodules(self) -> builtins.tuple[Module, ...]:
        return builtins.tuple(v for v in self._walk(set()) if isinstance(v, Module))


def _leaves(value: Any, seen: set[int]) -> Iterator[Any]:
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, Module):
        yield value
        yield from value._walk(seen)
    elif isinstance(value, list | builtins.tuple):
        for item in value:
            yield from _leaves(item, seen)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item, seen)
    elif getattr(value, "_is_ipusim_variable", False):
        yield value


# ---------------------------------------------------------------------- execution context
def executing_eagerly() -> bool:
    """``tf.executing_eagerly``: False while a tf.function is being traced."""
    return not context.is_tracing()


def inside_function() -> bool:
    """``tf.inside_function``."""
    return context.is_tracing()


def is_tensor(x: Any) -> bool:
    """``tf.is_tensor``."""
    return isinstance(x, Tensor)


class name_scope:  # noqa: N801 - TensorFlow's name
    """``tf.name_scope``: names are not part of ipusim's graphs; a scope that does nothing."""

    def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.name = name

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc: Any) -> None:
        return None


def get_current_name_scope() -> str:
    """``tf.get_current_name_scope``: always the root scope."""
    return ""


def no_op(name: str | None = None) -> None:
    """``tf.no_op``."""
    return None


def group(*inputs: Any, **kwargs: Any) -> None:
    """``tf.group``: every op of an ipusim function runs; nothing to group."""
    return None


def tuple(  # noqa: A001
    tensors: Any, name: str | None = None, control_inputs: Any = None
) -> list[Any]:
    """``tf.tuple``: the tensors, unchanged."""
    return list(tensors)


def get_static_value(tensor: Any, partial: bool = False) -> Any:
    """``tf.get_static_value``: the value of a concrete tensor, None for a traced one."""
    if is_symbolic(tensor):
        return None
    return np.asarray(tensor).view(np.ndarray)


def make_ndarray(tensor: Any) -> np.ndarray:
    """``tf.make_ndarray``: a NumPy copy of a concrete tensor."""
    return np.array(tensor).view(np.ndarray)


def timestamp(name: str | None = None) -> Any:
    """``tf.timestamp``: seconds since the epoch, as float64."""
    return np.asarray(time.time(), dtype=np.float64).view(EagerTensor)


def get_logger() -> logging.Logger:
    """``tf.get_logger``: the ``"tensorflow"`` logger."""
    return logging.getLogger("tensorflow")


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Any:
    """``tf.ensure_shape``: ``x`` when its static shape is compatible with ``shape``."""
    have = TensorShape(shape_of(x))
    if not have.is_compatible_with(shape):
        raise ConfigurationError(
            f"tf.ensure_shape: shape {have.as_list()} is not compatible with {shape}"
        )
    return x


def print(*inputs: Any, **kwargs: Any) -> None:  # noqa: A001
    """``tf.print``: prints concrete values now; inside a traced function (whose values exist
    only on the device) it prints, once at trace time, which tensors would have been printed."""
    sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
    shown = [
        f"<traced tensor {builtins.tuple(getattr(v, 'shape', ()))}: not printed by ipusim>"
        if is_symbolic(v)
        else (np.asarray(v) if is_tensor_like(v) else v)
        for v in inputs
    ]
    builtins.print(*shown, sep=sep, end=end)


# ---------------------------------------------------------------------- arithmetic
def realdiv(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.realdiv``: x / y for floats."""
    return ops.divide(x, y)


def truncatediv(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.truncatediv``: the quotient rounded toward zero (C division)."""
    return ops.multiply(ops.multiply(sign(x), sign(y)), floordiv(ops.abs(x), ops.abs(y)))


def truncatemod(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.truncatemod``: the remainder with the sign of ``x`` (C's fmod)."""
    return ops.multiply(sign(x), floormod(ops.abs(x), ops.abs(y)))


def tensor_scatter_nd_sub(
    tensor: Any, indices: Any, updates: Any, name: str | None = None, bad_indices_policy: str = ""
) -> Any:
    """``tf.tensor_scatter_nd_sub``: ``tensor`` minus ``updates`` scattered at ``indices``."""
    return ops_array.tensor_scatter_nd_add(tensor, indices, ops.negative(_t(updates, tensor)))


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Any:
    """``tf.unravel_index``: row-major coordinates of flat ``indices`` in a shape ``dims``,
    stacked along a new first axis."""
    sizes = [int(d) for d in np.asarray(dims).reshape(-1)]
    strides = [int(np.prod(sizes[i + 1 :])) for i in builtins.range(len(sizes))]

    def compose(flat: Any) -> Any:
        parts = [
            gm.cast(me.apply_binary("floormod", me.floordiv(flat, s), n), flat.dtype)
            for s, n in zip(strides, sizes, strict=True)
        ]
        return gs.concat([gs.expand_dims(p, 0) for p in parts], 0)

    return _op(compose, _t(indices))


def histogram_fixed_width_bins(
    values: Any, value_range: Any, nbins: int = 100, dtype: Any = "int32", name: Any = None
) -> Any:
    """``tf.histogram_fixed_width_bins``: the bin of each value (values outside the range go to
    the first or last bin)."""
    lo, hi = (float(v) for v in np.asarray(value_range).reshape(-1))

    def compose(v: Any) -> Any:
        scaled = gm.multiply(gm.subtract(gm.cast(v, "float32"), lo), nbins / (hi - lo))
        return gm.cast(gm.clip(me.unary("floor", scaled), 0.0, float(nbins - 1)), dtype)

    return _op(compose, _t(values))


def histogram_fixed_width(
    values: Any, value_range: Any, nbins: int = 100, dtype: Any = "int32", name: Any = None
) -> Any:
    """``tf.histogram_fixed_width``: counts of ``values`` in ``nbins`` equal bins."""
    bins = histogram_fixed_width_bins(values, value_range, nbins, "int32")

    def compose(b: Any) -> Any:
        hot = gnn.one_hot(b, depth=int(nbins), dtype="float32")
        counts = gr.reduce_sum(hot, axis=builtins.tuple(builtins.range(hot.ndim - 1)))
        return gm.cast(counts, dtype)

    return _op(compose, bins)


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """``tf.broadcast_static_shape``."""
    return TensorShape(np.broadcast_shapes(builtins.tuple(shape_x), builtins.tuple(shape_y)))


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Any:
    """``tf.broadcast_dynamic_shape``: of concrete shapes."""
    sizes = np.broadcast_shapes(
        builtins.tuple(np.asarray(shape_x).tolist()), builtins.tuple(np.asarray(shape_y).tolist())
    )
    return np.asarray(sizes, dtype=np.int32).view(EagerTensor)


parallel_stack = ops_array.stack

# ---------------------------------------------------------------------- initializers
constant_initializer = _init.Constant
zeros_initializer = _init.Zeros
ones_initializer = _init.Ones
random_normal_initializer = _init.RandomNormal
random_uniform_initializer = _init.RandomUniform

#: ``tf.nest``.
nest = SimpleNamespace(
    flatten=_nest.flatten,
    map_structure=_nest.map_structure,
    pack_sequence_as=_nest.pack_sequence_as,
    is_nested=lambda seq: isinstance(seq, list | builtins.tuple | dict),
)


# ---------------------------------------------------------------------- control flow
def _call(fn: Any) -> Any:
    return fn() if callable(fn) else fn


def cond(pred: Any, true_fn: Callable[[], Any] | None = None,
         false_fn: Callable[[], Any] | None = None, name: str | None = None) -> Any:  # fmt: skip
    """``tf.cond``: a concrete ``pred`` runs one branch; a traced one runs both and selects
    elementwise (both branches must give the same structure, shapes and dtypes)."""
    if not is_symbolic(pred):
        return _call(true_fn if bool(np.asarray(pred)) else false_fn)
    yes, no = _call(true_fn), _call(false_fn)
    flat_yes, flat_no = _nest.flatten(yes), _nest.flatten(no)
    if len(flat_yes) != len(flat_no):
        raise ConfigurationError("tf.cond: true_fn and false_fn must return the same structure")
    picked = [ops_array.where(pred, a, b) for a, b in zip(flat_yes, flat_no, strict=True)]
    return _nest.pack_sequence_as(yes, picked)


def case(pred_fn_pairs: Any, default: Any = None, exclusive: bool = False, strict: bool = False,
         name: str | None = None) -> Any:  # fmt: skip
    """``tf.case``: the first pair whose (concrete) predicate holds, else ``default``."""
    for pred, fn in pred_fn_pairs:
        if is_symbolic(pred):
            raise UnsupportedError("tf.case: a traced predicate is not simulated; use tf.cond")
        if bool(np.asarray(pred)):
            return fn()
    if default is None:
        raise ConfigurationError("tf.case: no predicate holds and no default was given")
    return default()


def switch_case(branch_index: Any, branch_fns: Any, default: Any = None, name: Any = None) -> Any:
    """``tf.switch_case``: the branch of a concrete index (else ``default``)."""
    if is_symbolic(branch_index):
        raise UnsupportedError(
            "tf.switch_case: a traced branch index is not simulated; compute every branch and "
            "pick with tf.where / tf.gather"
        )
    fns = dict(branch_fns) if isinstance(branch_fns, dict) else dict(enumerate(branch_fns))
    fn = fns.get(int(np.asarray(branch_index)), default)
    if fn is None:
        raise ConfigurationError(f"tf.switch_case: no branch {int(branch_index)} and no default")
    return fn()


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, maximum_iterations: Any = None,
               name: Any = None) -> Any:  # fmt: skip
    """``tf.while_loop`` whose condition is concrete at every step (unrolled when traced)."""
    values = loop_vars
    count = 0
    while True:
        if maximum_iterations is not None and count >= int(maximum_iterations):
            return values
        flag = cond(*values) if isinstance(values, list | builtins.tuple) else cond(values)
        if is_symbolic(flag):
            raise UnsupportedError(
                "tf.while_loop: a condition on traced values is not simulated (an IPU loop has "
                "a fixed trip count); use ipu.loops.repeat or `for i in tf.range(n)`"
            )
        if not bool(np.asarray(flag)):
            return values
        values = body(*values) if isinstance(values, list | builtins.tuple) else body(values)
        count += 1


def map_fn(fn: Callable[..., Any], elems: Any, dtype: Any = None, parallel_iterations: Any = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: Any = None, fn_output_signature: Any = None) -> Any:  # fmt: skip
    """``tf.map_fn``: ``fn`` on each slice along the first axis (of each tensor of ``elems``),
    results stacked (unrolled when traced)."""
    flat = _nest.flatten(elems)
    columns = [ops_array.unstack(e) for e in flat]
    results = [fn(_nest.pack_sequence_as(elems, list(row))) for row in zip(*columns, strict=True)]
    leaves = [_nest.flatten(r) for r in results]
    stacked = [
        ops_array.stack([leaf[i] for leaf in leaves]) for i in builtins.range(len(leaves[0]))
    ]
    return _nest.pack_sequence_as(results[0], stacked)


def vectorized_map(
    fn: Callable[..., Any], elems: Any, fallback_to_while_loop: bool = True, warn: bool = True
) -> Any:
    """``tf.vectorized_map``: as ``map_fn`` (the slices are computed one by one)."""
    return map_fn(fn, elems)


def foldl(fn: Callable[..., Any], elems: Any, initializer: Any = None, **kwargs: Any) -> Any:
    """``tf.foldl``: left fold over the first axis (unrolled when traced)."""
    return _fold(fn, ops_array.unstack(elems), initializer)


def foldr(fn: Callable[..., Any], elems: Any, initializer: Any = None, **kwargs: Any) -> Any:
    """``tf.foldr``: right fold over the first axis (unrolled when traced)."""
    return _fold(fn, ops_array.unstack(elems)[::-1], initializer)


def _fold(fn: Callable[..., Any], items: list[Any], initializer: Any) -> Any:
    acc = items.pop(0) if initializer is None else initializer
    for item in items:
        acc = fn(acc, item)
    return acc


def scan(fn: Callable[..., Any], elems: Any, initializer: Any = None, **kwargs: Any) -> Any:
    """``tf.scan``: every intermediate of a left fold over the first axis, stacked."""
    items = ops_array.unstack(elems)
    acc = items.pop(0) if initializer is None else initializer
    out = [acc] if initializer is None else []
    for item in items:
        acc = fn(acc, item)
        out.append(acc)
    return ops_array.stack(out)


__all__ = [
    "AggregationMethod", "Module", "Tensor", "TensorShape", "VariableAggregation",
    "VariableSynchronization", "broadcast_dynamic_shape", "broadcast_static_shape", "case",
    "cond", "constant_initializer", "ensure_shape", "executing_eagerly", "foldl", "foldr",
    "get_current_name_scope", "get_logger", "get_static_value", "group", "histogram_fixed_width",
    "histogram_fixed_width_bins", "inside_function", "is_tensor", "make_ndarray", "map_fn",
    "name_scope", "nest", "no_op", "ones_initializer", "parallel_stack", "print",
    "random_normal_initializer", "random_uniform_initializer", "realdiv", "scan", "switch_case",
    "tensor_scatter_nd_sub", "timestamp", "truncatediv", "truncatemod", "tuple", "unravel_index",
    "vectorized_map", "while_loop", "zeros_initializer",
]  # fmt: skip
