"""``tf.math`` beyond the core ops: trigonometric and special functions, rounding, ``pow``,
floor division, safe divisions, more reductions (``reduce_prod``, ``reduce_logsumexp``,
``reduce_std``...), scans, ``top_k`` / ``argmin`` / ``in_top_k``, segment sums and predicates.

Every function works eagerly and on traced tensors (see :mod:`.dispatch`): each is one graph op
(:mod:`ipusim.graph.ops.math_extra`, :mod:`ipusim.graph.ops.scan`) or a composition of graph ops
that is exact (``reduce_logsumexp`` subtracts the maximum first, as TensorFlow does).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.compat.runtime.dispatch import default_array, is_array, is_symbolic, run_op
from ipusim.compat.runtime.ops import equal, not_equal
from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.graph import apply
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import math_extra as me
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import scan as gsc
from ipusim.graph.ops import shape as gs
from ipusim.graph.spec import canonical_dtype

_FLOATS = ("float16", "float32", "float64")


def _read(value: Any) -> Any:
    """A variable read inside a traced function as a Symbol (so compositions can ask its
    ``ndim``); anything else unchanged."""
    if getattr(value, "_is_ipusim_variable", False) and is_symbolic(value):
        return gm.identity(value)
    return value


def _op(fn: Callable[..., Any], *args: Any, **attrs: Any) -> Any:
    """:func:`~ipusim.compat.runtime.dispatch.run_op` with traced variables read first."""
    return run_op(fn, *(_read(a) for a in args), **attrs)


def _t(value: Any, like: Any = None) -> Any:
    """A list or Python number as a concrete array: of ``like``'s float dtype when given (as
    TensorFlow converts a list next to a tensor), else with TensorFlow's defaults. Tensors and
    arrays are unchanged."""
    if is_symbolic(value) or is_array(value):
        return value
    dtype = getattr(like, "dtype", None)
    if dtype is not None and str(dtype) in _FLOATS and np.asarray(value).dtype.kind in "fiu":
        return default_array(value, str(dtype))
    return default_array(value)


def _unary(fn: str, doc: str) -> Callable[..., Any]:
    def op(x: Any, name: str | None = None) -> Any:
        return _op(lambda v: me.unary(fn, v), x)

    op.__name__ = fn
    op.__doc__ = doc
    return op


sin = _unary("sin", "``tf.math.sin``: sine, elementwise (radians).")
cos = _unary("cos", "``tf.math.cos``: cosine, elementwise (radians).")
tan = _unary("tan", "``tf.math.tan``: tangent, elementwise (radians).")
asin = _unary("asin", "``tf.math.asin``: arcsine (nan outside [-1, 1]).")
acos = _unary("acos", "``tf.math.acos``: arccosine (nan outside [-1, 1]).")
atan = _unary("atan", "``tf.math.atan``: arctangent.")
sinh = _unary("sinh", "``tf.math.sinh``: hyperbolic sine.")
cosh = _unary("cosh", "``tf.math.cosh``: hyperbolic cosine.")
asinh = _unary("asinh", "``tf.math.asinh``: inverse hyperbolic sine.")
acosh = _unary("acosh", "``tf.math.acosh``: inverse hyperbolic cosine (nan below 1).")
atanh = _unary("atanh", "``tf.math.atanh``: inverse hyperbolic tangent.")
erf = _unary("erf", "``tf.math.erf``: the error function.")
erfc = _unary("erfc", "``tf.math.erfc``: 1 - erf(x), accurate for large x.")
floor = _unary("floor", "``tf.math.floor``: round down (no gradient, as TensorFlow).")
ceil = _unary("ceil", "``tf.math.ceil``: round up (no gradient, as TensorFlow).")
round = _unary("round", "``tf.math.round``: round half to even, as TensorFlow.")  # noqa: A001
rint = round
sign = _unary("sign", "``tf.math.sign``: -1, 0 or 1 (nan stays nan); zero gradient.")
reciprocal = _unary("reciprocal", "``tf.math.reciprocal``: 1 / x.")
rsqrt = _unary("rsqrt", "``tf.math.rsqrt``: 1 / sqrt(x).")
expm1 = _unary("expm1", "``tf.math.expm1``: exp(x) - 1, accurate near 0.")
log1p = _unary("log1p", "``tf.math.log1p``: log(1 + x), accurate near 0.")
lgamma = _unary("lgamma", "``tf.math.lgamma``: log |Gamma(x)| (no gradient rule).")


def softsign(features: Any, name: str | None = None) -> Any:
    """``tf.math.softsign``: x / (1 + |x|)."""
    return _op(lambda v: me.unary("softsign", v), features)


def _predicate(fn: str) -> Callable[..., Any]:
    def op(x: Any, name: str | None = None) -> Any:
        return _op(lambda v: apply("float_predicate", v, fn=fn), x)

    op.__name__ = fn
    op.__doc__ = f"``tf.math.{fn}``: elementwise, bool result."
    return op


is_nan = _predicate("is_nan")
is_inf = _predicate("is_inf")
is_finite = _predicate("is_finite")


def softplus(features: Any, name: str | None = None) -> Any:
    """``tf.math.softplus``: log(1 + exp(x)), evaluated without overflow."""
    return _op(gm.softplus, features)


def log_sigmoid(x: Any, name: str | None = None) -> Any:
    """``tf.math.log_sigmoid``: -softplus(-x)."""
    return _op(lambda v: gm.negative(gm.softplus(gm.negative(v))), x)


# ---------------------------------------------------------------------- binary
def pow(x: Any, y: Any, name: str | None = None) -> Any:  # noqa: A001
    """``tf.math.pow``: x ** y elementwise."""
    return _op(me.pow_, x, y)


def atan2(y: Any, x: Any, name: str | None = None) -> Any:
    """``tf.math.atan2``: the angle of (x, y), in (-pi, pi]."""
    return _op(lambda a, b: _binary("atan2", a, b), y, x)


def _binary(fn: str, a: Any, b: Any) -> Any:
    return apply("binary_math", a, b, fn=fn)


def floordiv(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.floordiv``: floor(x / y) (integers or floats)."""
    return _op(me.floordiv, x, y)


def floormod(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.floormod`` / ``mod``: x - floor(x / y) * y (the sign of y, as Python's %)."""
    return _op(lambda a, b: _binary("floormod", a, b), x, y)


mod = floormod


def squared_difference(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.squared_difference``: (x - y) ** 2."""
    return _op(lambda a, b: gm.square(gm.subtract(a, b)), x, y)


def _is_zero(v: Any) -> Any:
    return gm.equal(v, apply("multiply", v, 0))


def divide_no_nan(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.divide_no_nan``: x / y, and 0 where y == 0 (gradient 0 there too)."""
    return _op(divide_no_nan_graph, x, y)


def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.multiply_no_nan``: x * y, and 0 where y == 0 even if x is inf or nan."""

    def compose(a: Any, b: Any) -> Any:
        product = gm.multiply(a, b)
        return me.select(_is_zero(b), gm.multiply(b, 0.0), product)

    return _op(compose, x, y)


def reciprocal_no_nan(x: Any, name: str | None = None) -> Any:
    """``tf.math.reciprocal_no_nan``: 1 / x, and 0 where x == 0."""
    return _op(lambda v: divide_no_nan_graph(gm.add(gm.multiply(v, 0.0), 1.0), v), x)


def divide_no_nan_graph(a: Any, b: Any) -> Any:
    zero = _is_zero(b)
    safe = me.select(zero, gm.add(gm.multiply(b, 0.0), 1.0), b)
    return me.select(zero, gm.multiply(gm.divide(a, safe), 0.0), gm.divide(a, safe))


def xdivy(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.xdivy``: 0 where x == 0, else x / y."""
    return _op(lambda a, b: me.select(_is_zero(a), gm.multiply(a, 0.0), gm.divide(a, b)), x, y)


def xlogy(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.xlogy``: 0 where x == 0, else x * log(y)."""
    return _op(
        lambda a, b: me.select(_is_zero(a), gm.multiply(a, 0.0), gm.multiply(a, gm.log(b))), x, y
    )


def xlog1py(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.xlog1py``: 0 where x == 0, else x * log1p(y)."""

    def compose(a: Any, b: Any) -> Any:
        return me.select(_is_zero(a), gm.multiply(a, 0.0), gm.multiply(a, me.unary("log1p", b)))

    return _op(compose, x, y)


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Any:
    """``tf.math.scalar_mul``: ``scalar * x``."""
    return _op(gm.multiply, x, scalar)


def add_n(inputs: Any, name: str | None = None) -> Any:
    """``tf.math.add_n``: the elementwise sum of a list of tensors of one shape and dtype."""
    values = list(inputs)
    if not values:
        raise ConfigurationError("add_n: `inputs` must hold at least one tensor, received none")

    def compose(*vs: Any) -> Any:
        total = vs[0]
        for v in vs[1:]:
            total = gm.add(total, v)
        return gm.identity(total) if len(vs) == 1 else total

    return _op(compose, *values)


def accumulate_n(
    inputs: Any, shape: Any = None, tensor_dtype: Any = None, name: str | None = None
) -> Any:
    """``tf.math.accumulate_n``: as ``add_n`` (``shape`` and ``tensor_dtype`` are checks only)."""
    return add_n(inputs)


def logical_not(x: Any, name: str | None = None) -> Any:
    """``tf.math.logical_not``: elementwise not of a bool tensor."""
    return equal(x, False)


def logical_xor(x: Any, y: Any, name: str | None = None) -> Any:
    """``tf.math.logical_xor``: true where exactly one of ``x``, ``y`` is."""
    return not_equal(x, y)


# ---------------------------------------------------------------------- reductions
def _float_of(v: Any) -> Any:
    return v if v.dtype in _FLOATS else gm.cast(v, "float32")


def _reduction(name: str, fn: Callable[..., Any], doc: str, **fixed: Any) -> Callable[..., Any]:
    """``tf.math.<name>(input_tensor, axis=None, keepdims=False, name=None)`` running ``fn``
    (with the ``fixed`` attributes)."""

    def reduce(
        input_tensor: Any, axis: Any = None, keepdims: bool = False, name: str | None = None
    ) -> Any:
        return _op(fn, input_tensor, axis=gm.axis_attr(axis), keepdims=bool(keepdims), **fixed)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = doc
    return reduce


def _reduce(v: Any, axis: Any, keepdims: bool, how: str) -> Any:
    """Reduce a (cast-to-float when needed) tensor and cast back to its dtype."""
    dtype = v.dtype
    f = _float_of(v)
    if how == "max":
        out = gr.reduce_max(f, axis=axis, keepdims=keepdims)
    elif how == "min":
        out = gm.negative(gr.reduce_max(gm.negative(f), axis=axis, keepdims=keepdims))
    else:
        out = gr.reduce_sum(f, axis=axis, keepdims=keepdims)
    return gm.cast(out, dtype)


reduce_all = _reduction(
    "reduce_all", _reduce, "``tf.math.reduce_all``: logical and over ``axis``.", how="min"
)
reduce_any = _reduction(
    "reduce_any", _reduce, "``tf.math.reduce_any``: logical or over ``axis``.", how="max"
)


def _axes(rank: int, axis: Any) -> list[int]:
    if axis is None:
        return list(builtins.range(rank))
    items = list(axis) if isinstance(axis, list | tuple) else [axis]
    return sorted({int(a) % rank for a in items}, reverse=True) if rank else []


def _reduce_prod(v: Any, axis: Any, keepdims: bool) -> Any:
    out = v
    for a in _axes(v.ndim, axis):
        n = out.shape[a]
        if n is None:  # an unknown size (a Keras input's batch): the reversed scan's first entry
            scanned, last = gsc.cumprod(out, axis=a, reverse=True), 0
        else:
            scanned, last = gsc.cumprod(out, axis=a), n - 1
        begin = tuple(last if i == a else 0 for i in builtins.range(v.ndim))
        size = tuple(1 if i == a else -1 for i in builtins.range(v.ndim))
        out = gs.slice(scanned, begin, size)
    if keepdims:
        return out
    kept = [d for i, d in enumerate(out.shape) if i not in _axes(v.ndim, axis)]
    return gs.reshape(out, tuple(kept))


reduce_prod = _reduction(
    "reduce_prod",
    _reduce_prod,
    """``tf.math.reduce_prod``: the product over ``axis`` (the last entry of a cumulative
    product; its gradient divides by the input, so an exact 0 gives a non-finite gradient).""",
)


def _logsumexp(v: Any, axis: Any, keepdims: bool) -> Any:
    peak = gm.stop_gradient(gr.reduce_max(v, axis=axis, keepdims=True))
    finite = me.select(apply("float_predicate", peak, fn="is_finite"), peak, gm.multiply(peak, 0.0))
    total = gr.reduce_sum(gm.exp(gm.subtract(v, finite)), axis=axis, keepdims=True)
    out = gm.add(gm.log(total), finite)
    return out if keepdims else gs.squeeze(out, axis=tuple(sorted(_axes(v.ndim, axis))))


reduce_logsumexp = _reduction(
    "reduce_logsumexp",
    _logsumexp,
    """``tf.math.reduce_logsumexp``: log(sum(exp(x))) over ``axis``, computed after subtracting
    the (finite) maximum, as TensorFlow does.""",
)


def _variance(v: Any, axis: Any, keepdims: bool, root: bool) -> Any:
    mean = gr.reduce_mean(v, axis=axis, keepdims=True)
    out = gr.reduce_mean(gm.square(gm.subtract(v, mean)), axis=axis, keepdims=keepdims)
    return gm.sqrt(out) if root else out


reduce_variance = _reduction(
    "reduce_variance",
    _variance,
    "``tf.math.reduce_variance``: mean squared deviation from the mean (population).",
    root=False,
)
reduce_std = _reduction(
    "reduce_std",
    _variance,
    "``tf.math.reduce_std``: square root of ``reduce_variance``.",
    root=True,
)
reduce_euclidean_norm = _reduction(
    "reduce_euclidean_norm",
    lambda v, axis, keepdims: gm.sqrt(gr.reduce_sum(gm.square(v), axis=axis, keepdims=keepdims)),
    "``tf.math.reduce_euclidean_norm``: sqrt(sum(x ** 2)) over ``axis``.",
)


def count_nonzero(
    input: Any,  # noqa: A002
    axis: Any = None,
    keepdims: bool = False,
    dtype: Any = "int64",
    name: str | None = None,
) -> Any:
    """``tf.math.count_nonzero``: how many entries of ``input`` are not 0 (or True)."""

    def compose(v: Any, axis: Any, keepdims: bool) -> Any:
        nonzero = gm.cast(_nonzero(v), "float32")
        return gm.cast(gr.reduce_sum(nonzero, axis=axis, keepdims=keepdims), canonical_dtype(dtype))

    return _op(compose, input, axis=gm.axis_attr(axis), keepdims=bool(keepdims))


def _nonzero(v: Any) -> Any:
    if v.dtype == "bool":
        return v
    f = _float_of(v)
    return gm.cast(gm.abs(me.unary("sign", f)), "bool")


def zero_fraction(value: Any, name: str | None = None) -> Any:
    """``tf.math.zero_fraction``: the fraction of entries equal to 0, as float32."""
    return _op(lambda v: gm.subtract(1.0, gr.reduce_mean(gm.cast(_nonzero(v), "float32"))), value)


# ---------------------------------------------------------------------- scans and selection
def cumsum(
    x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None
) -> Any:
    """``tf.math.cumsum``: cumulative sum along ``axis``."""
    return _op(gsc.cumsum, x, axis=int(axis), exclusive=bool(exclusive), reverse=bool(reverse))


def cumprod(
    x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False, name: str | None = None
) -> Any:
    """``tf.math.cumprod``: cumulative product along ``axis``."""
    return _op(gsc.cumprod, x, axis=int(axis), exclusive=bool(exclusive), reverse=bool(reverse))


def top_k(input: Any, k: int = 1, sorted: bool = True, name: str | None = None) -> Any:  # noqa: A002
    """``tf.math.top_k``: ``(values, indices)`` of the ``k`` largest entries of the last axis,
    values descending and, among equal values, the lower index first."""
    values, indices = _op(gsc.top_k, input, k=int(k))
    return _TopK(values, indices)


class _TopK(tuple[Any, Any]):
    """``TopKV2(values, indices)``: a pair with named fields, as TensorFlow returns."""

    def __new__(cls, values: Any, indices: Any) -> _TopK:
        return super().__new__(cls, (values, indices))

    @property
    def values(self) -> Any:
        return self[0]

    @property
    def indices(self) -> Any:
        return self[1]


def argmin(input: Any, axis: int = -1, output_type: Any = "int64", name: str | None = None) -> Any:  # noqa: A002
    """``tf.math.argmin``: index of the smallest entry along ``axis`` (the first on ties)."""
    kind = canonical_dtype(output_type)
    return _op(
        lambda v: gr.argmax(gm.negative(_float_of(v)), axis=int(axis), output_type=kind), input
    )


def in_top_k(targets: Any, predictions: Any, k: int, name: str | None = None) -> Any:
    """``tf.math.in_top_k``: whether each target class is among the ``k`` highest predictions
    (ties counted as TensorFlow: a target is in if fewer than ``k`` entries beat it)."""

    def compose(t: Any, p: Any) -> Any:
        hot = gnn.one_hot(t, depth=p.shape[-1], dtype=p.dtype)
        target = gr.reduce_sum(gm.multiply(hot, p), axis=-1, keepdims=True)
        beats = me.positive_mask(gm.subtract(p, target))  # 1 where an entry beats the target
        count = gr.reduce_sum(beats, axis=-1)
        return gm.cast(me.positive_mask(gm.subtract(float(k), count)), "bool")

    return _op(compose, _t(targets), _t(predictions))


def l2_normalize(
    x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None, dim: Any = None
) -> Any:
    """``tf.math.l2_normalize``: x / sqrt(max(sum(x ** 2, axis), epsilon))."""
    axis = dim if axis is None and dim is not None else axis

    def compose(v: Any, axis: Any) -> Any:
        total = gr.reduce_sum(gm.square(v), axis=axis, keepdims=True)
        return gm.multiply(v, me.unary("rsqrt", gm.maximum(total, float(epsilon))))

    return _op(compose, x, axis=gm.axis_attr(axis))


def unsorted_segment_sum(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Any:
    """``tf.math.unsorted_segment_sum``: rows of ``data`` summed into ``num_segments`` buckets
    by ``segment_ids`` (its leading axes); ids must be in range."""
    n = int(np.asarray(num_segments))

    def compose(d: Any, ids: Any) -> Any:
        return apply("embedding_lookup_grad", d, ids, shape=(n,) + tuple(d.shape[ids.ndim :]))

    return _op(compose, _t(data), _t(segment_ids))


def unsorted_segment_mean(
    data: Any, segment_ids: Any, num_segments: Any, name: str | None = None
) -> Any:
    """``tf.math.unsorted_segment_mean``: segment sums divided by the segment sizes (0 if empty)."""
    sums = unsorted_segment_sum(data, segment_ids, num_segments)
    ones = _op(lambda d: gm.add(gm.multiply(d, 0.0), 1.0), data)
    counts = unsorted_segment_sum(ones, segment_ids, num_segments)
    return divide_no_nan(sums, counts)


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """``tf.math.segment_sum``: as ``unsorted_segment_sum`` with ``max(ids) + 1`` segments; the
    ids must be concrete (the number of segments fixes the output shape)."""
    return unsorted_segment_sum(data, segment_ids, segment_count(segment_ids, "segment_sum"))


def segment_count(segment_ids: Any, what: str) -> int:
    """``max(ids) + 1`` of concrete integer ``segment_ids`` (0 when empty)."""
    ids = np.asarray(segment_ids)
    if ids.dtype == object or not np.issubdtype(ids.dtype, np.integer):
        raise InvalidTypeError(
            f"{what}: `segment_ids` must be concrete integers (a shape depends on them)"
        )
    return int(ids.max()) + 1 if ids.size else 0


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Any:
    """``tf.math.segment_mean``: as ``unsorted_segment_mean`` with ``max(ids) + 1`` segments."""
    ids = np.asarray(segment_ids)
    return unsorted_segment_mean(data, segment_ids, int(ids.max()) + 1 if ids.size else 0)


def polyval(coeffs: Any, x: Any, name: str | None = None) -> Any:
    """``tf.math.polyval``: sum of coeffs[i] * x ** (n - 1 - i), by Horner's rule."""
    coefficients = list(coeffs)
    if not coefficients:
        return _op(lambda v: gm.multiply(v, 0.0), x)

    def compose(v: Any, *cs: Any) -> Any:
        total = gm.add(gm.multiply(v, 0.0), cs[0])
        for c in cs[1:]:
            total = gm.add(gm.multiply(total, v), c)
        return total

    return _op(compose, x, *coefficients)


__all__ = [name for name in dir() if not name.startswith("_") and name not in {
    "Any", "Callable", "annotations", "builtins", "canonical_dtype", "divide_no_nan_graph", "segment_count",
    "apply", "gm", "gnn", "gr", "gs", "gsc", "me", "np", "equal", "not_equal",
}]  # fmt: skip
