"""``tf.debugging`` / ``tf.dtypes`` / ``tf.version`` namespaces, the ``tf.assert_*`` checks, and
small ``tf`` helpers: ``guarantee_const``, ``init_scope``, ``recompute_grad``,
``py_function`` / ``numpy_function`` (concrete values only), ``strided_slice`` and
``reverse_sequence``.

Assertions check concrete values at once and raise ``InvalidArgumentError`` as TensorFlow does;
on traced values (which exist only on the device) they check what is known when tracing (shapes,
ranks) and otherwise do nothing, as IPU TensorFlow drops ``Assert`` ops from device code.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import numpy as np

from ipusim.compat.runtime import ops, ops_array
from ipusim.compat.runtime.dispatch import is_symbolic, rank_of, shape_of
from ipusim.compat.runtime.ops_math import _op, _t
from ipusim.errors import InputDataError, UnsupportedError
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import operators as go
from ipusim.graph.ops import shape as gs


class InvalidArgumentError(InputDataError):
    """``tf.errors.InvalidArgumentError``: a failed ``tf.debugging`` assertion."""


def _check(condition: Any, message: Any, default: str) -> None:
    if any(is_symbolic(c) for c in (condition,)):
        return  # device-side assertions are dropped, as IPU TensorFlow does
    if not bool(np.all(np.asarray(condition))):
        raise InvalidArgumentError(str(message) if message else default)


def _compare(op_name: str, fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def check(x: Any, y: Any, message: Any = None, summarize: Any = None, name: Any = None) -> None:
        if is_symbolic(x) or is_symbolic(y):
            return None
        _check(fn(np.asarray(x), np.asarray(y)), message, f"{op_name} failed for {x!r} and {y!r}")
        return None

    check.__name__ = op_name
    check.__doc__ = f"``tf.debugging.{op_name}``: checked on concrete values."
    return check


assert_equal = _compare("assert_equal", np.equal)
assert_none_equal = _compare("assert_none_equal", np.not_equal)
assert_greater = _compare("assert_greater", np.greater)
assert_greater_equal = _compare("assert_greater_equal", np.greater_equal)
assert_less = _compare("assert_less", np.less)
assert_less_equal = _compare("assert_less_equal", np.less_equal)


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, message: Any = None,
                summarize: Any = None, name: Any = None) -> None:  # fmt: skip
    """``tf.debugging.assert_near``."""
    if is_symbolic(x) or is_symbolic(y):
        return
    a, b = np.asarray(x), np.asarray(y)
    eps = float(np.finfo(a.dtype if a.dtype.kind == "f" else np.float32).eps)
    ok = np.abs(a - b) <= (10 * eps if atol is None else atol) + (
        10 * eps if rtol is None else rtol
    ) * np.abs(b)
    _check(ok, message, "assert_near failed")


def assert_rank(x: Any, rank: int, message: Any = None, name: Any = None) -> None:
    """``tf.debugging.assert_rank``: checked from the static shape (traced tensors too)."""
    if rank_of(x) != int(rank):
        raise InvalidArgumentError(message or f"expected rank {rank}, received {rank_of(x)}")


def assert_rank_at_least(x: Any, rank: int, message: Any = None, name: Any = None) -> None:
    """``tf.debugging.assert_rank_at_least``."""
    if rank_of(x) < int(rank):
        raise InvalidArgumentError(message or f"expected rank >= {rank}, received {rank_of(x)}")


def assert_shapes(shapes: Any, data: Any = None, summarize: Any = None, message: Any = None,
                  name: Any = None) -> None:  # fmt: skip
    """``tf.debugging.assert_shapes``: each tensor's static shape against its spec (ints must
    match; names must be consistent across tensors)."""
    sizes: dict[str, int] = {}
    for tensor, spec in shapes:
        shape = shape_of(tensor)
        if len(shape) != len(spec):
            raise InvalidArgumentError(message or f"shape {shape} does not match {spec}")
        for dim, want in zip(shape, spec, strict=True):
            if isinstance(want, str):
                if dim is not None and sizes.setdefault(want, dim) != dim:
                    raise InvalidArgumentError(message or f"dimension {want!r} is inconsistent")
            elif dim is not None and int(want) != dim:
                raise InvalidArgumentError(message or f"shape {shape} does not match {spec}")


def _sign_check(name: str, fn: Callable[[Any, Any], Any]) -> Callable[..., None]:
    def check(x: Any, message: Any = None, summarize: Any = None, name: Any = None) -> None:
        if not is_symbolic(x):
            _check(fn(np.asarray(x), 0), message, f"{check.__name__} failed")

    check.__name__ = check.__qualname__ = name
    check.__doc__ = f"``tf.debugging.{name}``."
    return check


assert_positive = _sign_check("assert_positive", np.greater)
assert_non_negative = _sign_check("assert_non_negative", np.greater_equal)


def Assert(condition: Any, data: Any, summarize: Any = None, name: Any = None) -> None:  # noqa: N802
    """``tf.Assert``: raises when a concrete ``condition`` is false (printing ``data``)."""
    if not is_symbolic(condition) and not bool(np.all(np.asarray(condition))):
        raise InvalidArgumentError(f"assertion failed: {[np.asarray(d) for d in data]}")


def check_numerics(tensor: Any, message: str, name: Any = None) -> Any:
    """``tf.debugging.check_numerics``: concrete values must be finite; returns ``tensor``."""
    if not is_symbolic(tensor) and not np.all(np.isfinite(np.asarray(tensor))):
        raise InvalidArgumentError(f"{message}: tensor had NaN or Inf values")
    return tensor


def is_numeric_tensor(tensor: Any) -> bool:
    """``tf.debugging.is_numeric_tensor``."""
    from ipusim.compat.runtime.ops_misc import is_tensor

    return is_tensor(tensor) and str(getattr(tensor, "dtype", "")) != "bool"


#: ``tf.debugging``.
debugging = SimpleNamespace(
    Assert=Assert, assert_equal=assert_equal, assert_none_equal=assert_none_equal,
    assert_greater=assert_greater, assert_greater_equal=assert_greater_equal,
    assert_less=assert_less, assert_less_equal=assert_less_equal, assert_near=assert_near,
    assert_rank=assert_rank, assert_rank_at_least=assert_rank_at_least,
    assert_shapes=assert_shapes, assert_positive=assert_positive,
    assert_non_negative=assert_non_negative, check_numerics=check_numerics,
    is_numeric_tensor=is_numeric_tensor,
    set_log_device_placement=lambda enabled: None,
    enable_check_numerics=lambda *a, **k: None, disable_check_numerics=lambda: None,
)  # fmt: skip


def _dtypes() -> SimpleNamespace:
    from ipusim.data import dtypes as d

    return SimpleNamespace(
        DType=d.DType, as_dtype=d.as_dtype, cast=ops.cast, saturate_cast=ops_array.saturate_cast,
        float16=d.float16, float32=d.float32, float64=d.float64, int32=d.int32, int64=d.int64,
        uint8=d.uint8, bool=d.bool_, half=d.float16, double=d.float64,
        int8=d.DType("int8"), int16=d.DType("int16"),
    )  # fmt: skip


#: ``tf.dtypes``.
dtypes = _dtypes()

#: ``tf.version``: the API version this mirrors (see ``tf.__version__``).
version = SimpleNamespace(VERSION="2.6.0-ipusim", GIT_VERSION="ipusim", COMPILER_VERSION="ipusim")


def guarantee_const(input: Any, name: Any = None) -> Any:  # noqa: A002
    """``tf.guarantee_const``: ``input`` unchanged."""
    return ops.identity(input)


@contextmanager
def init_scope() -> Iterator[None]:
    """``tf.init_scope``: ipusim creates variables eagerly anyway; a scope that does nothing."""
    yield


def recompute_grad(f: Callable[..., Any]) -> Callable[..., Any]:
    """``tf.recompute_grad``: the same values and gradients (recomputation changes memory, not
    numerics; ipusim models recomputation through the pipelining options, not this wrapper)."""
    return f


def py_function(func: Callable[..., Any], inp: Any, Tout: Any, name: Any = None) -> Any:  # noqa: N803
    """``tf.py_function`` on concrete values (a Python callback cannot run inside the IPU
    program)."""
    if any(is_symbolic(v) for v in inp):
        raise UnsupportedError(
            "tf.py_function / numpy_function inside a traced function is not simulated: IPU "
            "programs cannot call back into Python; compute it in the input pipeline"
        )
    return func(*inp)


def numpy_function(func: Callable[..., Any], inp: Any, Tout: Any, stateful: bool = True,
                   name: Any = None) -> Any:  # noqa: N803  # fmt: skip
    """``tf.numpy_function`` on concrete values (see ``py_function``)."""
    return py_function(func, [np.asarray(v) for v in inp], Tout)


def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None, name: Any = None) -> Any:  # fmt: skip
    """``tf.strided_slice`` with begin / end masks and shrink axes (no ellipsis or new axes):
    the graph's strided-slice op of ``x[key]``, the key built from the masks."""
    if ellipsis_mask or new_axis_mask:
        raise UnsupportedError(
            "tf.strided_slice: ellipsis_mask and new_axis_mask are not simulated"
        )
    starts, stops = np.asarray(begin).reshape(-1), np.asarray(end).reshape(-1)
    steps = np.ones_like(starts) if strides is None else np.asarray(strides).reshape(-1)
    key: list[Any] = []
    for axis in builtins.range(len(starts)):
        if shrink_axis_mask >> axis & 1:
            key.append(int(starts[axis]))
            continue
        lo = None if begin_mask >> axis & 1 else int(starts[axis])
        hi = None if end_mask >> axis & 1 else int(stops[axis])
        key.append(builtins.slice(lo, hi, int(steps[axis])))
    return _op(lambda x: go.getitem(x, builtins.tuple(key)), _t(input_))


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None, batch_axis: int = 0,  # noqa: A002
                     name: Any = None) -> Any:  # fmt: skip
    """``tf.reverse_sequence``: reverse the first ``seq_lengths[b]`` steps of each batch entry
    (concrete lengths; a gather with fixed indices)."""
    if is_symbolic(seq_lengths):
        raise UnsupportedError("tf.reverse_sequence: seq_lengths must be concrete")
    lengths = np.asarray(seq_lengths).reshape(-1)

    def compose(x: Any) -> Any:
        # seq_axis=None raises TypeError here, as TensorFlow's op does without a seq_axis
        if int(batch_axis) != 0 or int(seq_axis) != 1:  # type: ignore[arg-type]
            raise UnsupportedError(
                "tf.reverse_sequence: only batch_axis=0, seq_axis=1 is simulated"
            )
        batch, steps = x.shape[0], x.shape[1]
        order = np.tile(np.arange(steps), (batch, 1))
        for b, n in enumerate(lengths):
            order[b, : int(n)] = order[b, : int(n)][::-1]
        flat = (order + np.arange(batch)[:, None] * steps).astype(np.int32)
        rows = gs.reshape(x, (batch * steps,) + builtins.tuple(x.shape[2:]))
        return gnn.embedding_lookup(rows, flat)

    return _op(compose, _t(input))


__all__ = [
    "Assert", "InvalidArgumentError", "assert_equal", "assert_greater", "assert_less",
    "assert_rank", "debugging", "dtypes", "guarantee_const", "init_scope", "numpy_function",
    "py_function", "recompute_grad", "reverse_sequence", "strided_slice", "version",
]  # fmt: skip
