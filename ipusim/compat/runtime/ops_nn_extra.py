"""``tf.nn`` beyond the core ops: activations (``relu6``, ``elu``, ``selu``, ``gelu``,
``swish`` / ``silu``, ``leaky_relu``, ``softplus``, ``softsign``, ``crelu``), ``l2_loss``,
``l2_normalize``, ``moments`` / ``batch_normalization``, ``dropout``, convolutions and pooling
(NHWC, over ipusim's conv and pool graph ops), ``embedding_lookup``, ``top_k`` / ``in_top_k``,
``weighted_cross_entropy_with_logits`` and ``compute_average_loss``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np

from ipusim.compat.runtime.dispatch import default_array, is_symbolic, rank_of
from ipusim.compat.runtime.ops_math import (
    _op,
    _t,
    in_top_k,
    l2_normalize,
    log_sigmoid,
    softplus,
    softsign,
    top_k,
    zero_fraction,
)
from ipusim.compat.runtime.tensor import EagerTensor
from ipusim.errors import UnsupportedError
from ipusim.graph.ops import conv as gconv
from ipusim.graph.ops import conv_grouped as ggc
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import math_extra as me
from ipusim.graph.ops import nn as gnn
from ipusim.graph.ops import pool as gpool
from ipusim.graph.ops import random as grand
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import shape as gs
from ipusim.keras.backend import next_seed


def relu6(features: Any, name: str | None = None) -> Any:
    """``tf.nn.relu6``: min(max(x, 0), 6)."""
    return _op(lambda v: me.unary("relu6", v), features)


def elu(features: Any, name: str | None = None) -> Any:
    """``tf.nn.elu``: x above 0, exp(x) - 1 below."""
    return _op(lambda v: me.unary("elu", v), features)


def selu(features: Any, name: str | None = None) -> Any:
    """``tf.nn.selu``: scale * elu with alpha (Klambauer et al.'s constants, as TensorFlow)."""
    return _op(lambda v: me.unary("selu", v), features)


def gelu(features: Any, approximate: bool = False, name: str | None = None) -> Any:
    """``tf.nn.gelu``: x * Phi(x) (the tanh approximation when ``approximate``)."""
    return _op(gm.gelu, features, approximate=bool(approximate))


def swish(features: Any, beta: float = 1.0) -> Any:
    """``tf.nn.swish`` / ``silu``: x * sigmoid(beta * x)."""
    return _op(lambda v: gm.multiply(v, gm.sigmoid(gm.multiply(v, float(beta)))), features)


silu = swish


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Any:
    """``tf.nn.leaky_relu``: x above 0, alpha * x below (gradient alpha at 0, as TensorFlow)."""

    def compose(v: Any) -> Any:
        mask = me.positive_mask(v)
        return gm.multiply(v, gm.add(mask, gm.multiply(gm.subtract(1.0, mask), float(alpha))))

    return _op(compose, features)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Any:
    """``tf.nn.crelu``: relu(x) and relu(-x) concatenated along ``axis``."""
    return _op(lambda v: gs.concat([gm.relu(v), gm.relu(gm.negative(v))], int(axis)), features)


def l2_loss(t: Any, name: str | None = None) -> Any:
    """``tf.nn.l2_loss``: sum(t ** 2) / 2."""
    return _op(lambda v: gm.multiply(gr.reduce_sum(gm.square(v)), 0.5), t)


def moments(
    x: Any, axes: Any, shift: Any = None, keepdims: bool = False, name: str | None = None
) -> tuple[Any, Any]:
    """``tf.nn.moments``: mean and (population) variance over ``axes``; the variance's gradient
    does not flow through the mean, as TensorFlow's ``stop_gradient`` there."""
    axis = gm.axis_attr(list(np.asarray(axes).reshape(-1)))

    def compose(v: Any) -> Any:
        mean = gr.reduce_mean(v, axis=axis, keepdims=True)
        variance = gr.reduce_mean(
            gm.square(gm.subtract(v, gm.stop_gradient(mean))), axis=axis, keepdims=keepdims
        )
        return (mean if keepdims else gs.squeeze(mean, axis=axis)), variance

    return tuple(_op(compose, x))


def weighted_moments(
    x: Any, axes: Any, frequency_weights: Any, keepdims: bool = False, name: str | None = None
) -> tuple[Any, Any]:
    """``tf.nn.weighted_moments``: mean and variance weighted by ``frequency_weights``."""
    axis = gm.axis_attr(list(np.asarray(axes).reshape(-1)))

    def compose(v: Any, w: Any) -> Any:
        weights = gm.add(gm.multiply(v, 0.0), w)
        total = gr.reduce_sum(weights, axis=axis, keepdims=True)
        mean = gm.divide(gr.reduce_sum(gm.multiply(v, weights), axis=axis, keepdims=True), total)
        spread = gm.multiply(gm.square(gm.subtract(v, gm.stop_gradient(mean))), weights)
        variance = gm.divide(gr.reduce_sum(spread, axis=axis, keepdims=True), total)
        if keepdims:
            return mean, variance
        return gs.squeeze(mean, axis=axis), gs.squeeze(variance, axis=axis)

    return tuple(_op(compose, x, _t(frequency_weights, x)))


def batch_normalization(
    x: Any,
    mean: Any,
    variance: Any,
    offset: Any,
    scale: Any,
    variance_epsilon: float,
    name: str | None = None,
) -> Any:
    """``tf.nn.batch_normalization``: (x - mean) * scale / sqrt(variance + eps) + offset
    (``offset`` and ``scale`` may be None)."""
    extras = [v for v in (offset, scale) if v is not None]

    def compose(v: Any, m: Any, var: Any, *rest: Any) -> Any:
        inv = me.unary("rsqrt", gm.add(var, float(variance_epsilon)))
        parts = iter(rest)
        off = next(parts) if offset is not None else None
        if scale is not None:
            inv = gm.multiply(inv, next(parts))
        out = gm.multiply(gm.subtract(v, m), inv)
        return out if off is None else gm.add(out, off)

    return _op(compose, x, _t(mean, x), _t(variance, x), *(_t(e, x) for e in extras))


def dropout(
    x: Any,
    rate: float,
    noise_shape: Any = None,
    seed: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.nn.dropout``: zero each element with probability ``rate`` and scale the rest by
    ``1 / (1 - rate)``. Always active (as TensorFlow's); a traced dropout draws a new mask at
    every execution."""
    shape = None if noise_shape is None else tuple(int(d) for d in noise_shape)
    op_seed = next_seed() if seed is None else int(seed)
    if is_symbolic(x):
        return grand.dropout(x, float(rate), op_seed, shape)
    from ipusim.kernels.random import dropout_mask

    array = default_array(x)
    mask = dropout_mask(shape or array.shape, op_seed, 0, float(rate), array.dtype)
    return (array * mask).astype(array.dtype).view(EagerTensor)


def embedding_lookup(params: Any, ids: Any, max_norm: Any = None, name: str | None = None) -> Any:
    """``tf.nn.embedding_lookup``: rows of ``params`` at integer ``ids`` (one table)."""
    if isinstance(params, list | tuple):
        if len(params) != 1:
            raise UnsupportedError("tf.nn.embedding_lookup: sharded params lists are not simulated")
        params = params[0]
    if max_norm is not None:
        raise UnsupportedError("tf.nn.embedding_lookup: max_norm is not simulated by ipusim")
    return _op(gnn.embedding_lookup, _t(params), _t(ids))


# ---------------------------------------------------------------------- convolution and pooling
class ConvAttrs(TypedDict):
    """Keyword attributes of the graph's convolution ops."""

    strides: tuple[int, ...]
    padding: str
    dilation_rate: tuple[int, ...]


def _hw(value: Any, rank: int = 2) -> tuple[int, ...]:
    """NHWC strides / sizes given as an int, 2 ints or 4 ints (N and C must be 1)."""
    items = [int(v) for v in np.asarray(value).reshape(-1)]
    if len(items) == 1:
        return tuple(items * rank)
    if len(items) == rank + 2:
        return tuple(items[1:-1])
    return tuple(items)


def _conv_attrs(strides: Any, padding: Any, dilations: Any, rank: int = 2) -> ConvAttrs:
    """A tf.nn convolution's ``strides``, ``padding`` and ``dilations`` (None: 1) as the graph
    op's attributes, for ``rank`` spatial axes."""
    return {
        "strides": _hw(strides, rank),
        "padding": str(padding),
        "dilation_rate": _hw(dilations or 1, rank),
    }


def _nhwc(data_format: Any, op: str) -> None:
    if data_format not in (None, "NHWC", "NWC", "NDHWC", "channels_last"):
        raise UnsupportedError(
            f"tf.nn.{op}: data_format={data_format!r} is not simulated; IPU programs use "
            "channels-last (NHWC), the default"
        )


def conv2d(
    input: Any,  # noqa: A002
    filters: Any,
    strides: Any,
    padding: Any,
    data_format: Any = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.nn.conv2d``: NHWC input, HWIO filters, ``"SAME"`` or ``"VALID"`` padding."""
    _nhwc(data_format, "conv2d")
    attrs = _conv_attrs(strides, padding, dilations)
    return _op(gconv.conv2d, _t(input), _t(filters), **attrs)


def conv1d(
    input: Any,  # noqa: A002
    filters: Any,
    stride: Any,
    padding: Any,
    data_format: Any = "NWC",
    dilations: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.nn.conv1d``: a 2-D convolution over a height-1 image (as TensorFlow computes it)."""
    _nhwc(data_format, "conv1d")
    step, dil = _hw(stride, 1)[0], _hw(dilations or 1, 1)[0]

    def compose(x: Any, w: Any) -> Any:
        out = gconv.conv2d(gs.expand_dims(x, 1), gs.expand_dims(w, 0), (1, step), str(padding),
                           (1, dil))  # fmt: skip
        return gs.squeeze(out, axis=1)

    return _op(compose, _t(input), _t(filters))


def conv2d_transpose(
    input: Any,  # noqa: A002
    filters: Any,
    output_shape: Any,
    strides: Any,
    padding: Any = "SAME",
    data_format: Any = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.nn.conv2d_transpose``: the gradient of ``conv2d`` with respect to its input, of
    ``output_shape``; filters are ``[h, w, out_channels, in_channels]``."""
    _nhwc(data_format, "conv2d_transpose")
    shape = tuple(int(d) for d in np.asarray(output_shape).reshape(-1))
    attrs = _conv_attrs(strides, padding, dilations)
    return _op(
        lambda x, w: gconv.conv2d_backprop_input(x, w, shape, **attrs), _t(input), _t(filters)
    )


def depthwise_conv2d(
    input: Any,  # noqa: A002
    filter: Any,  # noqa: A002
    strides: Any,
    padding: Any,
    data_format: Any = None,
    dilations: Any = None,
    name: str | None = None,
) -> Any:
    """``tf.nn.depthwise_conv2d``: filters ``[h, w, channels, multiplier]``."""
    _nhwc(data_format, "depthwise_conv2d")
    attrs = _conv_attrs(strides, padding, dilations)
    return _op(ggc.depthwise_conv2d, _t(input), _t(filter), **attrs)


def _pool(kind: str, input: Any, ksize: Any, strides: Any, padding: Any, data_format: Any) -> Any:  # noqa: A002
    _nhwc(data_format, f"{kind}_pool")
    fn = gpool.max_pool2d if kind == "max" else gpool.avg_pool2d
    attrs = {"pool_size": _hw(ksize), "strides": _hw(strides), "padding": str(padding)}
    return _op(fn, _t(input), **attrs)


def _pooling(
    pool: Callable[..., Any],
    kind: str,
    tf_name: str,
    default_format: Any,
    doc: str,
    rank4: bool = False,
) -> Callable[..., Any]:
    """``tf.nn.<tf_name>(input, ksize, strides, padding, data_format, name)``: ``kind`` ("max"
    or "avg") pooling through ``pool`` (the 1-D, 2-D or 3-D helper); ``rank4`` refuses inputs
    that are not rank 4."""

    def op(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
           data_format: Any = default_format, name: Any = None) -> Any:  # fmt: skip
        if rank4:
            _rank4(tf_name, input)
        return pool(kind, input, ksize, strides, padding, data_format)

    op.__name__ = op.__qualname__ = tf_name
    op.__doc__ = doc
    return op


max_pool2d = _pooling(_pool, "max", "max_pool2d", "NHWC", "``tf.nn.max_pool2d``: NHWC max pooling.")
avg_pool2d = _pooling(
    _pool, "avg", "avg_pool2d", "NHWC",
    "``tf.nn.avg_pool2d``: NHWC average pooling (padding excluded from the mean).",
)  # fmt: skip
max_pool = _pooling(_pool, "max", "max_pool", None, "``tf.nn.max_pool``: rank-4 (NHWC) inputs.",
                    rank4=True)  # fmt: skip
avg_pool = _pooling(_pool, "avg", "avg_pool", "NHWC", "``tf.nn.avg_pool``: rank-4 (NHWC) inputs.",
                    rank4=True)  # fmt: skip


def _rank4(op: str, x: Any) -> None:
    rank = rank_of(x)
    if rank != 4:
        raise UnsupportedError(
            f"tf.nn.{op}: only rank-4 NHWC inputs are simulated, got rank {rank}"
        )


def weighted_cross_entropy_with_logits(
    labels: Any, logits: Any, pos_weight: Any, name: str | None = None
) -> Any:
    """``tf.nn.weighted_cross_entropy_with_logits``: sigmoid cross-entropy with the positive
    term weighted by ``pos_weight`` (TensorFlow's stable form)."""

    def compose(z: Any, x: Any) -> Any:
        weight = gm.add(gm.multiply(z, float(pos_weight) - 1.0), 1.0)  # 1 + (q - 1) z
        stable = gm.add(gm.softplus(gm.negative(gm.abs(x))), gm.relu(gm.negative(x)))
        return gm.add(gm.multiply(gm.subtract(1.0, z), x), gm.multiply(weight, stable))

    return _op(compose, _t(labels), _t(logits))


def compute_average_loss(
    per_example_loss: Any, sample_weight: Any = None, global_batch_size: Any = None
) -> Any:
    """``tf.nn.compute_average_loss``: sum of the (weighted) losses / ``global_batch_size``
    (default: the batch size of ``per_example_loss``; ipusim runs one replica's view)."""

    def compose(loss: Any, *weights: Any) -> Any:
        total = gm.multiply(loss, weights[0]) if weights else loss
        batch = float(global_batch_size) if global_batch_size else float(loss.shape[0])
        return gm.divide(gr.reduce_sum(total), batch)

    extra = [] if sample_weight is None else [_t(sample_weight)]
    return _op(compose, _t(per_example_loss), *extra)


def log_poisson_loss(
    targets: Any, log_input: Any, compute_full_loss: bool = False, name: str | None = None
) -> Any:
    """``tf.nn.log_poisson_loss``: exp(c) - z * c (plus Stirling's term when asked)."""

    def compose(z: Any, c: Any) -> Any:
        loss = gm.subtract(gm.exp(c), gm.multiply(z, c))
        if not compute_full_loss:
            return loss
        safe = gm.maximum(z, 1.0)
        stirling = gm.add(
            gm.subtract(gm.multiply(safe, gm.log(safe)), safe),
            gm.multiply(gm.log(gm.multiply(safe, 2.0 * np.pi)), 0.5),
        )
        above_one = me.positive_mask(gm.subtract(z, 1.0))
        return gm.add(loss, gm.multiply(stirling, above_one))

    return _op(compose, _t(targets), _t(log_input))


__all__ = [
    "avg_pool", "avg_pool2d", "batch_normalization", "compute_average_loss", "conv1d", "conv2d",
    "conv2d_transpose", "crelu", "depthwise_conv2d", "dropout", "elu", "embedding_lookup",
    "gelu", "in_top_k", "l2_loss", "l2_normalize", "leaky_relu", "log_poisson_loss",
    "log_sigmoid", "max_pool", "max_pool2d", "moments", "relu6", "selu", "silu", "softplus",
    "softsign", "swish", "top_k", "weighted_cross_entropy_with_logits", "weighted_moments",
    "zero_fraction",
]  # fmt: skip
