"""``tf.linalg`` basics, ``einsum`` / ``tensordot`` and the clipping functions.

``einsum`` is lowered to what the IPU's matmul unit runs: each operand's private axes summed out,
then one batched matmul (batch, free and contracted axes grouped by transposes and reshapes), then
the output permutation, so its cost is a matmul's. ``diag`` / ``diag_part`` / ``trace`` /
``band_part`` multiply by constant masks. Factorizations and solvers (``inv``, ``solve``,
``cholesky``, ``det``, ``svd``, ``qr``, ``eig``...) are not simulated (see
:mod:`ipusim.compat.not_simulated_ops`).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ipusim.compat.runtime import ops
from ipusim.compat.runtime.dispatch import is_symbolic, rank_of
from ipusim.compat.runtime.ops import matmul
from ipusim.compat.runtime.ops_array import eye
from ipusim.compat.runtime.ops_math import _op, _t, l2_normalize
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import linalg as gl
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import shape as gs


def _prod(dims: Any) -> int:
    return int(np.prod([int(d) for d in dims], dtype=np.int64))


# ---------------------------------------------------------------------- einsum
def _parse(equation: str, count: int) -> tuple[list[str], str]:
    text = equation.replace(" ", "")
    if "." in text:
        raise UnsupportedError("tf.einsum: ellipses (...) are not simulated by ipusim")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise ConfigurationError(
            f"tf.einsum: {equation!r} names {len(terms)} operands, received {count}"
        )
    if not arrow:
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for term in terms:
        if len(set(term)) != len(term):
            raise UnsupportedError(
                f"tf.einsum: a repeated index within one operand ({term!r}, a diagonal) is not "
                "simulated; use tf.linalg.diag_part first"
            )
    return terms, output


def _sum_private(x: Any, term: str, keep: set[str]) -> tuple[Any, str]:
    drop = [i for i, c in enumerate(term) if c not in keep]
    if not drop:
        return x, term
    return gr.reduce_sum(x, axis=tuple(drop)), "".join(c for c in term if c in keep)


def _arrange(x: Any, term: str, groups: list[str]) -> Any:
    order = "".join(groups)
    perm = tuple(term.index(c) for c in order)
    moved = gs.transpose(x, perm) if perm != tuple(builtins.range(len(term))) else x
    sizes = {c: x.shape[term.index(c)] for c in term}
    return gs.reshape(moved, tuple(_prod(sizes[c] for c in g) for g in groups))


def _einsum2(a: Any, b: Any, ta: str, tb: str, out: str) -> Any:
    a, ta = _sum_private(a, ta, set(tb) | set(out))
    b, tb = _sum_private(b, tb, set(ta) | set(out))
    batch = "".join(c for c in ta if c in tb and c in out)
    contract = "".join(c for c in ta if c in tb and c not in out)
    free_a = "".join(c for c in ta if c not in tb)
    free_b = "".join(c for c in tb if c not in ta)
    sizes = {c: a.shape[ta.index(c)] for c in ta} | {c: b.shape[tb.index(c)] for c in tb}
    left = _arrange(a, ta, [batch, free_a, contract])
    right = _arrange(b, tb, [batch, contract, free_b])
    product = gl.batch_matmul(left, right)
    result = gs.reshape(product, tuple(sizes[c] for c in batch + free_a + free_b))
    term = batch + free_a + free_b
    perm = tuple(term.index(c) for c in out)
    return gs.transpose(result, perm) if perm != tuple(builtins.range(len(out))) else result


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Any:
    """``tf.einsum``: one or two operands (more are contracted left to right), no ellipses and
    no repeated index within an operand."""
    terms, output = _parse(str(equation), len(inputs))

    def compose(*xs: Any) -> Any:
        x, term = xs[0], terms[0]
        for index in builtins.range(1, len(xs)):
            later = set(output).union(*terms[index + 1 :])
            other = terms[index]
            inter = "".join(dict.fromkeys(c for c in term + other if c in later))
            x, term = _einsum2(x, xs[index], term, other, inter), inter
        x, term = _sum_private(x, term, set(output))
        perm = tuple(term.index(c) for c in output)
        if perm != tuple(builtins.range(len(output))):
            return gs.transpose(x, perm)
        return gm.identity(x) if x is xs[0] else x

    return _op(compose, *map(_t, inputs))


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Any:
    """``tf.tensordot``: contract ``axes`` of ``a`` with those of ``b`` (an int: the last n of
    ``a`` with the first n of ``b``)."""
    ra, rb = rank_of(a), rank_of(b)
    if np.ndim(axes) == 0:
        n = int(axes)
        pairs = (list(builtins.range(ra - n, ra)), list(builtins.range(n)))
    else:
        first, second = axes
        pairs = (
            [int(v) % ra for v in np.asarray(first).reshape(-1)],
            [int(v) % rb for v in np.asarray(second).reshape(-1)],
        )
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    ta = [next(letters) for _ in builtins.range(ra)]
    tb = [next(letters) for _ in builtins.range(rb)]
    for i, j in zip(*pairs, strict=True):
        tb[j] = ta[i]
    out = "".join(c for c in ta if c not in tb) + "".join(c for c in tb if c not in ta)
    return einsum(f"{''.join(ta)},{''.join(tb)}->{out}", a, b)


# ---------------------------------------------------------------------- tf.linalg
def batched_matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Any:
    """``tf.matmul`` of operands of rank > 2: the leading (batch) axes broadcast, then one
    batched matmul (a rank-2 operand is broadcast over the other's batch)."""

    def compose(x: Any, y: Any) -> Any:
        lead = tuple(np.broadcast_shapes(tuple(x.shape[:-2]), tuple(y.shape[:-2])))
        if len(lead) == 0:
            return gl.batch_matmul(gs.expand_dims(x, 0), gs.expand_dims(y, 0),
                                   transpose_a=transpose_a, transpose_b=transpose_b)  # fmt: skip
        x = x if tuple(x.shape[:-2]) == lead else gs.broadcast_to(x, lead + tuple(x.shape[-2:]))
        y = y if tuple(y.shape[:-2]) == lead else gs.broadcast_to(y, lead + tuple(y.shape[-2:]))
        return gl.batch_matmul(x, y, transpose_a=transpose_a, transpose_b=transpose_b)

    return _op(compose, _t(a), _t(b, a))


def matvec(
    a: Any, b: Any, transpose_a: bool = False, name: str | None = None, **kwargs: Any
) -> Any:
    """``tf.linalg.matvec``: ``a @ b`` for a vector (last axis) ``b``."""

    column = _op(lambda v: gs.expand_dims(v, -1), _t(b, a))
    return ops.squeeze(matmul(a, column, transpose_a=bool(transpose_a)), axis=-1)


def matrix_transpose(a: Any, name: str | None = None, conjugate: bool = False) -> Any:
    """``tf.linalg.matrix_transpose`` / ``adjoint`` (real tensors): swap the last two axes."""

    def compose(x: Any) -> Any:
        perm = tuple(builtins.range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
        return gs.transpose(x, perm)

    return _op(compose, _t(a))


def adjoint(matrix: Any, name: str | None = None) -> Any:
    """``tf.linalg.adjoint``: the conjugate transpose (the transpose, for real tensors)."""
    return matrix_transpose(matrix)


def _eye_mask(n: int, m: int, dtype: str) -> np.ndarray:
    return np.eye(n, m, dtype=dtype)


def diag(diagonal: Any, name: str | None = None, k: int = 0, **kwargs: Any) -> Any:
    """``tf.linalg.diag``: a (batch of) square matrices with ``diagonal`` on the main diagonal."""
    if int(k) != 0:
        raise UnsupportedError("tf.linalg.diag: only k=0 (the main diagonal) is simulated")

    def compose(d: Any) -> Any:
        n = d.shape[-1]
        return gm.multiply(gs.expand_dims(d, -1), _eye_mask(n, n, d.dtype))

    return _op(compose, _t(diagonal))


def diag_part(input: Any, name: str | None = None, k: int = 0, **kwargs: Any) -> Any:  # noqa: A002
    """``tf.linalg.diag_part``: the main diagonal of the last two axes."""
    if int(k) != 0:
        raise UnsupportedError("tf.linalg.diag_part: only k=0 (the main diagonal) is simulated")

    def compose(x: Any) -> Any:
        n, m = x.shape[-2], x.shape[-1]
        picked = gr.reduce_sum(gm.multiply(x, _eye_mask(n, m, x.dtype)), axis=-1)
        return gs.slice_axis(picked, 0, min(n, m), -1) if m < n else picked

    return _op(compose, _t(input))


def set_diag(input: Any, diagonal: Any, name: str | None = None, k: int = 0, **kwargs: Any) -> Any:  # noqa: A002
    """``tf.linalg.set_diag``: ``input`` with its main diagonal replaced by ``diagonal``."""

    def compose(x: Any, d: Any) -> Any:
        n, m = x.shape[-2], x.shape[-1]
        mask = _eye_mask(n, m, x.dtype)
        placed = gm.multiply(gs.expand_dims(d, -1), mask[:, : d.shape[-1]] if m != n else mask)
        return gm.add(gm.multiply(x, 1.0 - mask), placed)

    return _op(compose, _t(input), _t(diagonal, input))


def trace(x: Any, name: str | None = None) -> Any:
    """``tf.linalg.trace``: the sum of the main diagonal."""
    return _op(lambda v: gr.reduce_sum(diag_part_graph(v), axis=-1), _t(x))


def diag_part_graph(x: Any) -> Any:
    n, m = x.shape[-2], x.shape[-1]
    return gr.reduce_sum(gm.multiply(x, _eye_mask(n, m, x.dtype)), axis=-1)


def band_part(input: Any, num_lower: int, num_upper: int, name: str | None = None) -> Any:  # noqa: A002
    """``tf.linalg.band_part``: keep ``num_lower`` sub- and ``num_upper`` super-diagonals
    (negative: all), zero the rest."""
    lower, upper = int(num_lower), int(num_upper)

    def compose(x: Any) -> Any:
        n, m = x.shape[-2], x.shape[-1]
        i, j = np.arange(n)[:, None], np.arange(m)[None, :]
        keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
        return gm.multiply(x, keep.astype(x.dtype))

    return _op(compose, _t(input))


def norm(
    tensor: Any,
    ord: Any = "euclidean",
    axis: Any = None,
    keepdims: bool = False,
    name: Any = None,  # noqa: A002
) -> Any:
    """``tf.norm`` / ``tf.linalg.norm``: vector norms (euclidean / 2, 1, inf) over ``axis``, and
    the Frobenius norm of matrices (``ord="fro"`` or euclidean over two axes)."""
    kind = "euclidean" if ord in ("euclidean", "fro", 2, 2.0) else ord
    if kind not in ("euclidean", 1, 1.0, np.inf):
        raise UnsupportedError(f"tf.norm: ord={ord!r} is not simulated; use 'euclidean', 1 or inf")
    axes = gm.axis_attr(axis)

    def compose(x: Any) -> Any:
        if kind == "euclidean":
            return gm.sqrt(gr.reduce_sum(gm.square(x), axis=axes, keepdims=keepdims))
        if kind == np.inf:
            return gr.reduce_max(gm.abs(x), axis=axes, keepdims=keepdims)
        return gr.reduce_sum(gm.abs(x), axis=axes, keepdims=keepdims)

    return _op(compose, _t(tensor))


def global_norm(t_list: Any, name: str | None = None) -> Any:
    """``tf.linalg.global_norm``: sqrt of the sum of squares of every tensor in ``t_list``
    (None entries are skipped)."""
    items = [_t(v) for v in t_list if v is not None]

    def compose(*vs: Any) -> Any:
        total = None
        for v in vs:
            part = gr.reduce_sum(gm.square(gm.cast(v, "float32") if v.dtype == "float16" else v))
            total = part if total is None else gm.add(total, part)
        return gm.sqrt(total)

    return _op(compose, *items)


def cross(a: Any, b: Any, name: str | None = None) -> Any:
    """``tf.linalg.cross``: the cross product of 3-vectors (last axis)."""

    def compose(u: Any, v: Any) -> Any:
        c = [gs.slice_axis(u, i, 1, -1) for i in builtins.range(3)]
        d = [gs.slice_axis(v, i, 1, -1) for i in builtins.range(3)]
        parts = [
            gm.subtract(gm.multiply(c[(i + 1) % 3], d[(i + 2) % 3]),
                        gm.multiply(c[(i + 2) % 3], d[(i + 1) % 3]))
            for i in builtins.range(3)
        ]  # fmt: skip
        return gs.concat(parts, -1)

    return _op(compose, _t(a), _t(b))


# ---------------------------------------------------------------------- clipping
def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None) -> Any:
    """``tf.clip_by_value``: min(max(t, lo), hi) (the gradient passes where t is inside, as
    TensorFlow's maximum / minimum pair)."""
    return _op(lambda v, lo, hi: gm.minimum(gm.maximum(v, lo), hi), _t(t), clip_value_min,
               clip_value_max)  # fmt: skip


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """``tf.clip_by_norm``: ``t * clip_norm / max(l2norm(t, axes), clip_norm)``."""
    axis = gm.axis_attr(axes)

    def compose(v: Any, c: Any) -> Any:
        l2 = gm.sqrt(gr.reduce_sum(gm.square(v), axis=axis, keepdims=True))
        return gm.divide(gm.multiply(v, c), gm.maximum(l2, c))

    return _op(compose, _t(t), clip_norm)


def clip_by_global_norm(
    t_list: Any, clip_norm: Any, use_norm: Any = None, name: str | None = None
) -> tuple[list[Any], Any]:
    """``tf.clip_by_global_norm``: every tensor scaled by ``clip_norm / max(global_norm,
    clip_norm)``; returns the clipped list (None entries kept) and the global norm. A
    non-finite global norm makes every entry nan, as TensorFlow's."""
    items = list(t_list)
    present = [i for i, v in enumerate(items) if v is not None]
    norm_value = global_norm([items[i] for i in present]) if use_norm is None else use_norm

    def compose(total: Any, c: Any, *vs: Any) -> Any:
        # A non-finite global norm makes every entry nan (total - total), as TensorFlow's.
        scale = gm.add(gm.divide(c, gm.maximum(total, c)), gm.subtract(total, total))
        return tuple(gm.multiply(v, gm.cast(scale, v.dtype)) for v in vs)

    clipped = _op(compose, _t(norm_value), float(clip_norm) if not is_symbolic(clip_norm)
                  else clip_norm, *[_t(items[i]) for i in present])  # fmt: skip
    out: list[Any] = [None] * len(items)
    for i, v in zip(present, clipped, strict=True):
        out[i] = v
    return out, norm_value


__all__ = [
    "adjoint", "band_part", "clip_by_global_norm", "clip_by_norm", "clip_by_value", "cross",
    "diag", "diag_part", "einsum", "eye", "global_norm", "l2_normalize", "matmul",
    "matrix_transpose", "matvec", "norm", "set_diag", "tensordot", "trace",
]  # fmt: skip
