"""More of ``tf.nn`` / ``tf.math`` / ``tf.linalg``: 1-D and 3-D convolution and pooling,
atrous and separable convolutions, ``depth_to_space`` / ``space_to_depth``, local response
normalisation, moment helpers, ``confusion_matrix``, monotonicity checks, ``invert_permutation``,
``cumulative_logsumexp``, ``tensor_diag``, and the ``TensorArray`` of RNN-style loops.
"""

from __future__ import annotations

import builtins
from types import SimpleNamespace
from typing import Any

import numpy as np

from ipusim.compat.runtime import ops, ops_array, ops_linalg, ops_math, ops_nn_extra
from ipusim.compat.runtime.dispatch import is_symbolic, rank_of, shape_of
from ipusim.compat.runtime.ops_math import _float_of, _op, _t
from ipusim.compat.runtime.ops_nn_extra import _conv_attrs, _hw, _nhwc, _pooling
from ipusim.errors import ConfigurationError, IndexOutOfRangeError, UnsupportedError
from ipusim.graph.graph import apply
from ipusim.graph.ops import conv3d as gc3
from ipusim.graph.ops import conv_grouped as ggc
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import math_extra as me
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import pool3d as gp3
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import scan as gsc
from ipusim.graph.ops import shape as gs


# ---------------------------------------------------------------------- convolution and pooling
def atrous_conv2d(value: Any, filters: Any, rate: int, padding: str, name: Any = None) -> Any:
    """``tf.nn.atrous_conv2d``: a stride-1 convolution with dilation ``rate``."""
    return ops_nn_extra.conv2d(value, filters, 1, padding, dilations=int(rate))


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any, strides: Any,  # noqa: A002
                     padding: str, data_format: Any = None, dilations: Any = None,
                     name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.separable_conv2d``: depthwise, then a 1x1 pointwise convolution."""
    depth = ops_nn_extra.depthwise_conv2d(input, depthwise_filter, strides, padding, data_format,
                                          dilations)  # fmt: skip
    return ops_nn_extra.conv2d(depth, pointwise_filter, 1, "VALID")


def _pool1d(kind: str, input: Any, ksize: Any, strides: Any, padding: str, data_format: Any) -> Any:  # noqa: A002
    _nhwc(data_format, f"{kind}_pool1d")
    size, step = _hw(ksize, 1)[0], _hw(strides, 1)[0]
    fn = ops_nn_extra.max_pool2d if kind == "max" else ops_nn_extra.avg_pool2d
    out = fn(ops.expand_dims(input, 1), [1, size], [1, step], padding)
    return ops.squeeze(out, 1)


max_pool1d = _pooling(_pool1d, "max", "max_pool1d", "NWC",
                      "``tf.nn.max_pool1d``: NWC, through 2-D pooling over a height-1 image.")  # fmt: skip
avg_pool1d = _pooling(_pool1d, "avg", "avg_pool1d", "NWC",
                      "``tf.nn.avg_pool1d``: NWC, through 2-D pooling over a height-1 image.")  # fmt: skip


def conv3d(input: Any, filters: Any, strides: Any, padding: str, data_format: Any = "NDHWC",  # noqa: A002
           dilations: Any = None, name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.conv3d``: NDHWC input, DHWIO filters."""
    _nhwc(data_format, "conv3d")
    attrs = _conv_attrs(strides, padding, dilations, 3)
    return _op(gc3.conv3d, _t(input), _t(filters), **attrs)


def _pool3d(kind: str, input: Any, ksize: Any, strides: Any, padding: str, data_format: Any) -> Any:  # noqa: A002
    _nhwc(data_format, f"{kind}_pool3d")
    fn = gp3.max_pool3d if kind == "max" else gp3.avg_pool3d
    attrs = {"pool_size": _hw(ksize, 3), "strides": _hw(strides, 3), "padding": str(padding)}
    return _op(fn, _t(input), **attrs)


max_pool3d = _pooling(_pool3d, "max", "max_pool3d", "NDHWC", "``tf.nn.max_pool3d``: NDHWC.")
avg_pool3d = _pooling(_pool3d, "avg", "avg_pool3d", "NDHWC", "``tf.nn.avg_pool3d``: NDHWC.")


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: str = "SAME", data_format: Any = "NWC", dilations: Any = None,
                     name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.conv1d_transpose``: through ``conv2d_transpose`` over a height-1 image."""
    _nhwc(data_format, "conv1d_transpose")
    n, w, c = (int(d) for d in np.asarray(output_shape).reshape(-1))
    out = ops_nn_extra.conv2d_transpose(
        ops.expand_dims(input, 1), ops.expand_dims(filters, 0), [n, 1, w, c],
        [1, _hw(strides, 1)[0]], padding, dilations=[1, _hw(dilations or 1, 1)[0]],
    )  # fmt: skip
    return ops.squeeze(out, 1)


def depthwise_conv2d_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any,  # noqa: A002
                                    strides: Any, padding: str, data_format: Any = "NHWC",
                                    dilations: Any = None, name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.depthwise_conv2d_backprop_input``."""
    shape = tuple(int(d) for d in np.asarray(input_sizes).reshape(-1))
    attrs = _conv_attrs(strides, padding, dilations)
    return _op(lambda dy, w: ggc.depthwise_conv2d_backprop_input(dy, w, shape, **attrs),
               _t(out_backprop), _t(filter))  # fmt: skip


def depthwise_conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                                     strides: Any, padding: str, data_format: Any = "NHWC",
                                     dilations: Any = None, name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.depthwise_conv2d_backprop_filter``."""
    shape = tuple(int(d) for d in np.asarray(filter_sizes).reshape(-1))
    attrs = _conv_attrs(strides, padding, dilations)
    return _op(lambda x, dy: ggc.depthwise_conv2d_backprop_filter(x, dy, shape, **attrs),
               _t(input), _t(out_backprop))  # fmt: skip


def depth_to_space(input: Any, block_size: int, data_format: str = "NHWC", name: Any = None) -> Any:  # noqa: A002
    """``tf.nn.depth_to_space``: channel blocks moved into ``block_size`` x ``block_size``
    spatial blocks (a reshape and a transpose)."""
    _nhwc(data_format, "depth_to_space")
    b = int(block_size)

    def compose(x: Any) -> Any:
        n, h, w, c = x.shape
        blocks = gs.reshape(x, (n, h, w, b, b, c // (b * b)))
        moved = gs.transpose(blocks, (0, 1, 3, 2, 4, 5))
        return gs.reshape(moved, (n, h * b, w * b, c // (b * b)))

    return _op(compose, _t(input))


def space_to_depth(input: Any, block_size: int, data_format: str = "NHWC", name: Any = None) -> Any:  # noqa: A002
    """``tf.nn.space_to_depth``: the inverse of ``depth_to_space``."""
    _nhwc(data_format, "space_to_depth")
    b = int(block_size)

    def compose(x: Any) -> Any:
        n, h, w, c = x.shape
        blocks = gs.reshape(x, (n, h // b, b, w // b, b, c))
        moved = gs.transpose(blocks, (0, 1, 3, 2, 4, 5))
        return gs.reshape(moved, (n, h // b, w // b, b * b * c))

    return _op(compose, _t(input))


def local_response_normalization(input: Any, depth_radius: int = 5, bias: float = 1.0,  # noqa: A002
                                 alpha: float = 1.0, beta: float = 0.5, name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.local_response_normalization``: ``x / (bias + alpha * sum of x² over the
    2r+1 neighbouring channels) ** beta`` (the window sum from a channel cumulative sum)."""
    r = int(depth_radius)

    def compose(x: Any) -> Any:
        c = x.shape[-1]
        padded = gs.pad(gm.square(x), [(0, 0)] * (x.ndim - 1) + [(r + 1, r)])
        running = gsc.cumsum(padded, axis=-1)
        upper = gs.slice_axis(running, 2 * r + 1, c, -1)
        lower = gs.slice_axis(running, 0, c, -1)
        window = gm.subtract(upper, lower)
        scale = gm.add(gm.multiply(window, float(alpha)), float(bias))
        return gm.multiply(x, me.apply_binary("pow", scale, gm.add(gm.multiply(scale, 0.0),
                                                                  -float(beta))))  # fmt: skip

    return _op(compose, _t(input))


lrn = local_response_normalization


def sufficient_statistics(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
                          name: Any = None) -> tuple[np.float32, Any, Any, None]:  # fmt: skip
    """``tf.nn.sufficient_statistics``: (count, sum, sum of squares, shift=None) over ``axes``."""
    axis = [int(a) for a in np.asarray(axes).reshape(-1)]
    shape = shape_of(x)
    # an unknown size (a Keras input's batch) has no static count: a TypeError
    count = float(np.prod([shape[a] for a in axis]))  # type: ignore[arg-type]
    total = ops.reduce_sum(x, axis, keepdims)
    squares = ops.reduce_sum(ops.square(x), axis, keepdims)
    return np.float32(count), total, squares, None


def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any, name: Any = None
                      ) -> tuple[Any, Any]:  # fmt: skip
    """``tf.nn.normalize_moments``: mean and variance from sufficient statistics."""
    divisor = ops.divide(1.0, _t(counts))
    mean = ops.multiply(mean_ss, divisor)
    variance = ops.subtract(ops.multiply(variance_ss, divisor), ops.square(mean))
    if shift is not None:
        mean = ops.add(mean, shift)
    return mean, variance


def scale_regularization_loss(regularization_loss: Any) -> Any:
    """``tf.nn.scale_regularization_loss``: divided by the number of replicas in sync (ipusim
    runs one replica's view of the computation, so by 1)."""
    return regularization_loss


# ---------------------------------------------------------------------- tf.math extras
def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, weights: Any = None,
                     dtype: Any = "int32", name: Any = None) -> Any:  # fmt: skip
    """``tf.math.confusion_matrix``: ``[labels, predictions]`` counts (``num_classes`` needed
    when traced)."""
    if num_classes is None:
        if is_symbolic(labels) or is_symbolic(predictions):
            raise UnsupportedError("tf.math.confusion_matrix: pass num_classes when traced")
        num_classes = int(max(np.max(labels), np.max(predictions))) + 1
    n = int(num_classes)
    extra = [] if weights is None else [_t(weights)]

    def compose(t: Any, p: Any, *w: Any) -> Any:
        rows = gnn.one_hot(gm.cast(t, "int32"), n, "float32")
        cols = gnn.one_hot(gm.cast(p, "int32"), n, "float32")
        if w:
            rows = gm.multiply(rows, gs.expand_dims(gm.cast(w[0], "float32"), -1))
        return gm.cast(gnn.matmul(rows, cols, transpose_a=True), dtype)

    return _op(compose, _t(labels), _t(predictions), *extra)


def _monotone(x: Any, strict: bool) -> Any:
    def compose(v: Any) -> Any:
        flat = gs.reshape(_float_of(v), (-1,))
        # an unknown size (a Keras input's batch) is not supported: a TypeError below
        n: int = flat.shape[0]  # type: ignore[assignment]
        if n < 2:
            return gm.equal(gr.reduce_sum(flat), gr.reduce_sum(flat))
        step = gm.subtract(gs.slice_axis(flat, 1, n - 1, 0), gs.slice_axis(flat, 0, n - 1, 0))
        # A violation: a decrease, or (strictly) anything but an increase.
        bad = (
            gm.subtract(1.0, me.positive_mask(step))
            if strict
            else me.positive_mask(gm.negative(step))
        )
        total = gr.reduce_sum(bad)
        return gm.equal(total, gm.multiply(total, 0.0))

    return _op(compose, _t(x))


def is_non_decreasing(x: Any, name: Any = None) -> Any:
    """``tf.math.is_non_decreasing``: every element >= the one before (flattened)."""
    return _monotone(x, False)


def is_strictly_increasing(x: Any, name: Any = None) -> Any:
    """``tf.math.is_strictly_increasing``: every element > the one before (flattened)."""
    return _monotone(x, True)


def invert_permutation(x: Any, name: Any = None) -> Any:
    """``tf.math.invert_permutation``: ``y[x[i]] = i`` (a scatter of 0..n-1)."""

    def compose(p: Any) -> Any:
        n = p.shape[0]
        ranks = np.arange(n, dtype=np.float32)
        placed = apply("embedding_lookup_grad", ranks, gm.cast(p, "int32"), shape=(n,))
        return gm.cast(placed, p.dtype)

    return _op(compose, _t(x))


def cumulative_logsumexp(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
                         name: Any = None) -> Any:  # fmt: skip
    """``tf.math.cumulative_logsumexp``: log of the cumulative sum of exp(x), computed after
    subtracting the overall maximum along ``axis`` (a finite shift)."""

    def compose(v: Any) -> Any:
        peak = gm.stop_gradient(gr.reduce_max(v, axis=int(axis), keepdims=True))
        sums = gsc.cumsum(gm.exp(gm.subtract(v, peak)), axis=int(axis), exclusive=exclusive,
                          reverse=reverse)  # fmt: skip
        return gm.add(gm.log(sums), peak)

    return _op(compose, _t(x))


def unsorted_segment_sqrt_n(
    data: Any, segment_ids: Any, num_segments: Any, name: Any = None
) -> Any:
    """``tf.math.unsorted_segment_sqrt_n``: segment sums divided by sqrt(segment size)."""
    sums = ops_math.unsorted_segment_sum(data, segment_ids, num_segments)
    ones = _op(lambda d: gm.add(gm.multiply(d, 0.0), 1.0), _t(data))
    counts = ops_math.unsorted_segment_sum(ones, segment_ids, num_segments)
    return ops_math.divide_no_nan(sums, ops.sqrt(counts))


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = "int32", name: Any = None, axis: Any = None,
             binary_output: bool = False) -> Any:  # fmt: skip
    """``tf.math.bincount`` of concrete values (the length depends on them), or of traced
    values with ``minlength == maxlength`` fixing it."""
    if is_symbolic(arr) and (minlength is None or minlength != maxlength):
        raise UnsupportedError("tf.math.bincount: traced values need minlength == maxlength")
    if is_symbolic(arr):
        length = int(minlength)
    else:
        top = int(np.max(arr)) + 1 if np.size(arr) else 0
        length = builtins.max(top, int(minlength or 0))
        length = length if maxlength is None else builtins.min(length, int(maxlength))
    ones = _t(weights) if weights is not None else _op(_ones_like_float, _t(arr))
    flat_ids = ops.reshape(arr, [-1])
    counts = ops_math.unsorted_segment_sum(ops.reshape(ones, [-1]), flat_ids, length)
    if binary_output:
        counts = ops.cast(ops.greater(counts, np.float32(0.0)), "float32")
    return ops.cast(counts, dtype)


def _ones_like_float(a: Any) -> Any:
    return gm.add(gm.multiply(gm.cast(a, "float32"), 0.0), 1.0)


# ---------------------------------------------------------------------- tf.linalg extras
def normalize(
    tensor: Any,
    ord: Any = "euclidean",  # noqa: A002
    axis: Any = None,
    name: Any = None,
) -> tuple[Any, Any]:
    """``tf.linalg.normalize``: (tensor / norm, norm)."""
    size = ops_linalg.norm(tensor, ord, axis, keepdims=True)
    return ops.divide(tensor, size), size


def tensor_diag(diagonal: Any, name: Any = None) -> Any:
    """``tf.linalg.tensor_diag`` of a vector: the square matrix with it on the diagonal."""
    if rank_of(diagonal) != 1:
        raise UnsupportedError("tf.linalg.tensor_diag: only 1-D diagonals are simulated")
    return ops_linalg.diag(diagonal)


def tensor_diag_part(input: Any, name: Any = None) -> Any:  # noqa: A002
    """``tf.linalg.tensor_diag_part`` of a square matrix."""
    if rank_of(input) != 2:
        raise UnsupportedError("tf.linalg.tensor_diag_part: only 2-D inputs are simulated")
    return ops_linalg.diag_part(input)


# ---------------------------------------------------------------------- TensorArray
class TensorArray:
    """``tf.TensorArray`` with concrete indices: writes kept in a list, ``stack`` joins them
    (a traced loop over ``range`` unrolls, so each write is a graph tensor)."""

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: Any = None,
                 clear_after_read: Any = None, tensor_array_name: Any = None, handle: Any = None,
                 flow: Any = None, infer_shape: bool = True, element_shape: Any = None,
                 colocate_with_first_write_call: bool = True, name: Any = None) -> None:  # fmt: skip
        self.dtype = dtype
        self._items: list[Any] = [None] * (0 if size is None else int(np.asarray(size)))
        self._dynamic = bool(dynamic_size) or size is None

    def _index(self, index: Any) -> int:
        if is_symbolic(index):
            raise UnsupportedError("TensorArray: a traced index is not simulated; use a Python int")
        return int(np.asarray(index))

    def write(self, index: Any, value: Any, name: Any = None) -> TensorArray:
        i = self._index(index)
        if i >= len(self._items):
            if not self._dynamic:
                raise IndexOutOfRangeError(
                    f"TensorArray.write: index {i} beyond size {len(self._items)}"
                )
            self._items.extend([None] * (i + 1 - len(self._items)))
        self._items[i] = value
        return self

    def read(self, index: Any, name: Any = None) -> Any:
        return self._items[self._index(index)]

    def stack(self, name: Any = None) -> Any:
        if any(v is None for v in self._items):
            raise ConfigurationError("TensorArray.stack: some elements were never written")
        return ops_array.stack(self._items)

    def gather(self, indices: Any, name: Any = None) -> Any:
        return ops_array.stack([self._items[int(i)] for i in np.asarray(indices).reshape(-1)])

    def concat(self, name: Any = None) -> Any:
        return ops.concat(self._items, 0)

    def unstack(self, value: Any, name: Any = None) -> TensorArray:
        self._items = list(ops_array.unstack(value))
        return self

    def scatter(self, indices: Any, value: Any, name: Any = None) -> TensorArray:
        for i, item in zip(np.asarray(indices).reshape(-1), ops_array.unstack(value), strict=True):
            self.write(int(i), item)
        return self

    def size(self, name: Any = None) -> Any:
        return np.int32(len(self._items))

    def close(self, name: Any = None) -> None:
        self._items = []

    def mark_used(self) -> None:
        return None


__all__ = [
    "TensorArray", "atrous_conv2d", "avg_pool1d", "avg_pool3d", "bincount", "confusion_matrix",
    "conv1d_transpose", "conv3d", "cumulative_logsumexp", "depth_to_space",
    "depthwise_conv2d_backprop_filter", "depthwise_conv2d_backprop_input", "invert_permutation",
    "is_non_decreasing", "is_strictly_increasing", "local_response_normalization", "lrn",
    "max_pool1d", "max_pool3d", "normalize", "normalize_moments", "scale_regularization_loss",
    "separable_conv2d", "space_to_depth", "sufficient_statistics", "tensor_diag",
    "tensor_diag_part", "unsorted_segment_sqrt_n",
]  # fmt: skip


# ---------------------------------------------------------------------- rank-generic wrappers
def convolution(input: Any, filters: Any, strides: Any = None, padding: str = "VALID",  # noqa: A002
                data_format: Any = None, dilations: Any = None, name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.convolution``: conv1d / conv2d / conv3d by the input's rank."""
    rank = rank_of(input)
    step, dil = strides or 1, dilations or 1
    if rank == 3:
        return ops_nn_extra.conv1d(input, filters, step, padding, dilations=dil)
    if rank == 4:
        return ops_nn_extra.conv2d(input, filters, step, padding, dilations=dil)
    if rank == 5:
        return conv3d(input, filters, step, padding, dilations=dil)
    raise ConfigurationError(f"tf.nn.convolution: input rank must be 3, 4 or 5, received {rank}")


def pool(input: Any, window_shape: Any, pooling_type: str, strides: Any = None,  # noqa: A002
         padding: str = "VALID", data_format: Any = None, dilations: Any = None,
         name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.pool``: MAX or AVG pooling of rank 3, 4 or 5 inputs (no dilation)."""
    if dilations is not None and any(int(d) != 1 for d in np.asarray(dilations).reshape(-1)):
        raise UnsupportedError("tf.nn.pool: dilated pooling is not simulated")
    kind = {"MAX": "max", "AVG": "avg"}.get(str(pooling_type).upper())
    if kind is None:
        raise ConfigurationError(
            f"tf.nn.pool: pooling_type must be 'MAX' or 'AVG', received {pooling_type!r}"
        )
    rank = rank_of(input)
    step = window_shape if strides is None else strides
    if rank == 3:
        return _pool1d(kind, input, window_shape, step, padding, data_format)
    if rank == 4:
        fn = ops_nn_extra.max_pool2d if kind == "max" else ops_nn_extra.avg_pool2d
        return fn(input, window_shape, step, padding)
    return _pool3d(kind, input, window_shape, step, padding, data_format)


def conv3d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: str = "SAME", data_format: Any = "NDHWC", dilations: Any = None,
                     name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.conv3d_transpose``: the gradient of ``conv3d`` with respect to its input."""
    _nhwc(data_format, "conv3d_transpose")
    shape = tuple(int(d) for d in np.asarray(output_shape).reshape(-1))
    attrs = _conv_attrs(strides, padding, dilations, 3)
    return _op(lambda x, w: gc3.conv3d_backprop_input(x, w, shape, **attrs), _t(input), _t(filters))


def conv_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                   padding: str = "SAME", data_format: Any = None, dilations: Any = None,
                   name: Any = None) -> Any:  # fmt: skip
    """``tf.nn.conv_transpose``: 1-D, 2-D or 3-D by the rank of ``output_shape``."""
    rank = len(np.asarray(output_shape).reshape(-1))
    fn = {3: conv1d_transpose, 4: ops_nn_extra.conv2d_transpose, 5: conv3d_transpose}.get(rank)
    if fn is None:
        raise ConfigurationError("tf.nn.conv_transpose: output_shape must have 3 to 5 entries")
    return fn(input, filters, output_shape, strides, padding, dilations=dilations)


# ---------------------------------------------------------------------- segment max / min / prod
def _segment_reduce(data: Any, segment_ids: Any, num_segments: Any, how: str) -> Any:
    """Rows of ``data`` reduced per segment through a one-hot mask (empty segments hold the
    dtype's lowest / highest value, or 1 for products, as TensorFlow)."""
    n = int(np.asarray(num_segments))

    def compose(d: Any, ids: Any) -> Any:
        hot = gnn.one_hot(gm.cast(ids, "int32"), n, "bool")  # [rows, n]
        extra = d.ndim - ids.ndim
        mask = gs.reshape(hot, tuple(hot.shape) + (1,) * extra)
        rows = gs.expand_dims(d, ids.ndim)  # [rows, 1, ...]
        info = np.finfo(np.dtype(d.dtype))
        fill = {"max": float(info.min), "min": float(info.max), "prod": 1.0}[how]
        chosen = me.select(mask, rows, gm.add(gm.multiply(rows, 0.0), fill))
        axes = tuple(range(ids.ndim))
        if how == "max":
            return gr.reduce_max(chosen, axis=axes)
        if how == "min":
            return gm.negative(gr.reduce_max(gm.negative(chosen), axis=axes))
        return ops_math._reduce_prod(chosen, axes, False)

    return _op(compose, _t(data), _t(segment_ids))


def _segment_ops(how: str) -> tuple[Any, Any]:
    """``tf.math.unsorted_segment_<how>`` and ``tf.math.segment_<how>`` (concrete ids)."""

    def unsorted(data: Any, segment_ids: Any, num_segments: Any, name: Any = None) -> Any:
        return _segment_reduce(data, segment_ids, num_segments, how)

    def sorted_ids(data: Any, segment_ids: Any, name: Any = None) -> Any:
        return unsorted(data, segment_ids, ops_math.segment_count(segment_ids, "segment ops"))

    unsorted.__name__ = unsorted.__qualname__ = f"unsorted_segment_{how}"
    sorted_ids.__name__ = sorted_ids.__qualname__ = f"segment_{how}"
    unsorted.__doc__ = f"``tf.math.unsorted_segment_{how}``."
    sorted_ids.__doc__ = f"``tf.math.segment_{how}`` (concrete ids)."
    return unsorted, sorted_ids


unsorted_segment_max, segment_max = _segment_ops("max")
unsorted_segment_min, segment_min = _segment_ops("min")
unsorted_segment_prod, segment_prod = _segment_ops("prod")


# ---------------------------------------------------------------------- tf.bitwise
def _bitwise(fn: str) -> Any:
    def op(x: Any, y: Any, name: Any = None) -> Any:
        return _op(lambda a, b: me.apply_binary(fn, a, b), _t(x), _t(y, x))

    op.__name__ = fn
    op.__doc__ = f"``tf.bitwise.{fn}`` of integer tensors."
    return op


def _invert(x: Any, name: Any = None) -> Any:
    """``tf.bitwise.invert``: every bit flipped (xor with all ones)."""
    dtype = np.dtype(str(getattr(x, "dtype", np.asarray(x).dtype)))
    ones = np.array(-1 if dtype.kind == "i" else np.iinfo(dtype).max, dtype=dtype)
    return _op(lambda a: me.apply_binary("bitwise_xor", a, ones), _t(x))


#: ``tf.bitwise``.
bitwise = SimpleNamespace(
    bitwise_and=_bitwise("bitwise_and"), bitwise_or=_bitwise("bitwise_or"),
    bitwise_xor=_bitwise("bitwise_xor"), left_shift=_bitwise("left_shift"),
    right_shift=_bitwise("right_shift"), invert=_invert,
)  # fmt: skip

__all__ += [
    "bitwise", "conv3d_transpose", "conv_transpose", "convolution", "pool", "segment_max",
    "segment_min", "segment_prod", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_prod",
]  # fmt: skip
