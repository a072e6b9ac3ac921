"""``keras.backend`` convolution, pooling, padding, normalisation, random, loss and functional
helpers (``K.conv2d``, ``K.pool2d``, ``K.random_normal``, ``K.binary_crossentropy``,
``K.map_fn``...) over the runtime's TensorFlow ops; the rest of ``K.*`` is in
:mod:`ipusim.compat.runtime.ops_backend`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.compat.runtime import ops, ops_array, ops_misc, ops_nn_extra, ops_nn_more, ops_random
from ipusim.compat.runtime.dispatch import is_symbolic
from ipusim.compat.runtime.ops_backend import _keras_fn, get_value, update, variable
from ipusim.compat.runtime.ops_math import _op
from ipusim.compat.runtime.ops_nn import nn as _nn
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import reduce as gr
from ipusim.graph.ops import resize as gresize
from ipusim.keras import backend as _settings


def batch_normalization(x: Any, mean: Any, var: Any, beta: Any, gamma: Any, axis: int = -1,
                        epsilon: float = 1e-3) -> Any:  # fmt: skip
    """``K.batch_normalization``: ``(x - mean) / sqrt(var + epsilon) * gamma + beta``."""
    return ops_nn_extra.batch_normalization(x, mean, var, beta, gamma, epsilon)


def normalize_batch_in_training(x: Any, gamma: Any, beta: Any, reduction_axes: Any,
                                epsilon: float = 1e-3) -> tuple[Any, Any, Any]:  # fmt: skip
    """``K.normalize_batch_in_training``: normalised ``x``, batch mean and variance."""
    mean, variance = ops_nn_extra.moments(x, reduction_axes)
    return batch_normalization(x, mean, variance, beta, gamma, epsilon=epsilon), mean, variance


def moving_average_update(x: Any, value: Any, momentum: float) -> Any:
    """``K.moving_average_update``: ``x = x * momentum + value * (1 - momentum)`` (eager)."""
    moved = get_value(x) * momentum + np.asarray(get_value(value)) * (1.0 - momentum)
    return update(x, moved.astype(get_value(x).dtype))


def conv2d_transpose(x: Any, kernel: Any, output_shape: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: Any = None,
                     dilation_rate: Any = (1, 1)) -> Any:  # fmt: skip
    """``K.conv2d_transpose``: NHWC."""
    return ops_nn_extra.conv2d_transpose(
        x, kernel, output_shape, strides, padding.upper(), dilations=dilation_rate
    )


def spatial_3d_padding(x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)), data_format: Any = None
                       ) -> Any:  # fmt: skip
    """``K.spatial_3d_padding``: zeros around the three spatial axes of an NDHWC tensor."""
    return ops_array.pad(x, [[0, 0], *[list(p) for p in padding], [0, 0]])


def conv3d(x: Any, kernel: Any, strides: Any = (1, 1, 1), padding: str = "valid",
           data_format: Any = None, dilation_rate: Any = (1, 1, 1)) -> Any:  # fmt: skip
    """``K.conv3d``: NDHWC."""
    return ops_nn_more.conv3d(x, kernel, strides, padding.upper(), dilations=dilation_rate)


def pool3d(x: Any, pool_size: Any, strides: Any = (1, 1, 1), padding: str = "valid",
           data_format: Any = None, pool_mode: str = "max") -> Any:  # fmt: skip
    """``K.pool3d``: NDHWC max or average pooling."""
    fn = ops_nn_more.max_pool3d if pool_mode == "max" else ops_nn_more.avg_pool3d
    return fn(x, pool_size, strides, padding.upper())


def separable_conv2d(x: Any, depthwise_kernel: Any, pointwise_kernel: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: Any = None,
                     dilation_rate: Any = (1, 1)) -> Any:  # fmt: skip
    """``K.separable_conv2d``: NHWC."""
    return ops_nn_more.separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides,
                                        padding.upper(), dilations=dilation_rate)  # fmt: skip


def resize_images(x: Any, height_factor: int, width_factor: int, data_format: Any = None,
                  interpolation: str = "nearest") -> Any:  # fmt: skip
    """``K.resize_images``: up-sample NHWC by integer factors."""
    factors = (int(height_factor), int(width_factor))
    return _op(lambda v: gresize.resize(v, factors, interpolation), x)


def resize_volumes(x: Any, depth_factor: int, height_factor: int, width_factor: int,
                   data_format: Any = None) -> Any:  # fmt: skip
    """``K.resize_volumes``: nearest up-sampling of NDHWC by integer factors (repeats)."""
    for axis, factor in zip((1, 2, 3), (depth_factor, height_factor, width_factor), strict=True):
        x = ops_array.repeat(x, int(factor), axis=axis)
    return x


def bias_add(x: Any, bias: Any, data_format: Any = None) -> Any:
    """``K.bias_add``."""
    return ops.bias_add(x, bias)


dropout = _keras_fn("dropout", ops_nn_extra.dropout, "x", "level", noise_shape=None, seed=None)


def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None,
                   seed: Any = None) -> Any:  # fmt: skip
    """``K.random_uniform``."""
    return ops_random.uniform(shape, minval, maxval, dtype or _settings.floatx(), seed)


def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                  seed: Any = None) -> Any:  # fmt: skip
    """``K.random_normal``."""
    return ops_random.normal(shape, mean, stddev, dtype or _settings.floatx(), seed)


def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                     seed: Any = None) -> Any:  # fmt: skip
    """``K.truncated_normal``."""
    return ops_random.truncated_normal(shape, mean, stddev, dtype or _settings.floatx(), seed)


def random_bernoulli(shape: Any, p: float = 0.0, dtype: Any = None, seed: Any = None) -> Any:
    """``K.random_bernoulli``: 1 with probability ``p``."""
    draws = ops_random.uniform(shape, 0.0, 1.0, "float32", seed)
    return ops.cast(ops.less(draws, np.float32(p)), dtype or _settings.floatx())


random_binomial = random_bernoulli


def random_uniform_variable(shape: Any, low: float, high: float, dtype: Any = None,
                            name: Any = None, seed: Any = None) -> Any:  # fmt: skip
    """``K.random_uniform_variable``."""
    return variable(random_uniform(shape, low, high, dtype, seed), dtype, name)


def random_normal_variable(shape: Any, mean: float, scale: float, dtype: Any = None,
                           name: Any = None, seed: Any = None) -> Any:  # fmt: skip
    """``K.random_normal_variable``."""
    return variable(random_normal(shape, mean, scale, dtype, seed), dtype, name)


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Any:
    """``K.binary_crossentropy``: elementwise (no mean), probabilities clipped to
    ``[epsilon, 1 - epsilon]`` and epsilon added inside the logs, as Keras 2's backend."""
    if from_logits:
        return _nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = _settings.epsilon()

    def compose(t: Any, o: Any) -> Any:
        o = gm.minimum(gm.maximum(o, eps), 1.0 - eps)
        pos = gm.multiply(t, gm.log(gm.add(o, eps)))
        neg = gm.multiply(gm.subtract(1.0, t), gm.log(gm.add(gm.subtract(1.0, o), eps)))
        return gm.negative(gm.add(pos, neg))

    return _op(compose, target, output)


def categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1
) -> Any:
    """``K.categorical_crossentropy``: probabilities renormalised along ``axis`` and clipped to
    ``[epsilon, 1 - epsilon]``, as Keras 2's backend."""
    if from_logits:
        return _nn.softmax_cross_entropy_with_logits(labels=target, logits=output, axis=axis)
    eps = _settings.epsilon()

    def compose(t: Any, o: Any) -> Any:
        o = gm.divide(o, gr.reduce_sum(o, axis=axis, keepdims=True))
        o = gm.minimum(gm.maximum(o, eps), 1.0 - eps)
        return gm.negative(gr.reduce_sum(gm.multiply(t, gm.log(o)), axis=axis))

    return _op(compose, target, output)


def sparse_categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1
) -> Any:
    """``K.sparse_categorical_crossentropy``: integer targets; probabilities clipped to
    ``[epsilon, 1 - epsilon]`` and their logs used as logits, as Keras 2's backend."""
    labels = ops.cast(target, "int32")
    if from_logits:
        return _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=output)
    eps = _settings.epsilon()
    logits = _op(lambda o: gm.log(gm.minimum(gm.maximum(o, eps), 1.0 - eps)), output)
    return _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def temporal_padding(x: Any, padding: tuple[int, int] = (1, 1)) -> Any:
    """``K.temporal_padding``: zeros before and after the middle axis of a 3-D tensor."""
    return ops_array.pad(x, [[0, 0], list(padding), [0, 0]])


def spatial_2d_padding(x: Any, padding: Any = ((1, 1), (1, 1)), data_format: Any = None) -> Any:
    """``K.spatial_2d_padding``: zeros around the rows and columns of an NHWC tensor."""
    return ops_array.pad(x, [[0, 0], list(padding[0]), list(padding[1]), [0, 0]])


def conv2d(x: Any, kernel: Any, strides: Any = (1, 1), padding: str = "valid",
           data_format: Any = None, dilation_rate: Any = (1, 1)) -> Any:  # fmt: skip
    """``K.conv2d``: NHWC."""
    return ops_nn_extra.conv2d(x, kernel, strides, padding.upper(), dilations=dilation_rate)


def conv1d(x: Any, kernel: Any, strides: int = 1, padding: str = "valid",
           data_format: Any = None, dilation_rate: int = 1) -> Any:  # fmt: skip
    """``K.conv1d``: NWC."""
    return ops_nn_extra.conv1d(x, kernel, strides, padding.upper(), dilations=dilation_rate)


def depthwise_conv2d(x: Any, depthwise_kernel: Any, strides: Any = (1, 1), padding: str = "valid",
                     data_format: Any = None, dilation_rate: Any = (1, 1)) -> Any:  # fmt: skip
    """``K.depthwise_conv2d``: NHWC."""
    return ops_nn_extra.depthwise_conv2d(
        x, depthwise_kernel, strides, padding.upper(), dilations=dilation_rate
    )


def pool2d(x: Any, pool_size: Any, strides: Any = (1, 1), padding: str = "valid",
           data_format: Any = None, pool_mode: str = "max") -> Any:  # fmt: skip
    """``K.pool2d``: NHWC max or average pooling."""
    fn = ops_nn_extra.max_pool2d if pool_mode == "max" else ops_nn_extra.avg_pool2d
    return fn(x, pool_size, strides, padding.upper())


def map_fn(fn: Callable[..., Any], elems: Any, name: Any = None, dtype: Any = None) -> Any:
    """``K.map_fn``: ``fn`` on each slice of the first axis, stacked (unrolled when traced)."""
    return ops_array.stack([fn(e) for e in ops_array.unstack(elems)])


def foldl(fn: Callable[..., Any], elems: Any, initializer: Any = None, name: Any = None) -> Any:
    """``K.foldl``: ``tf.foldl``, a left fold over the first axis (unrolled when traced)."""
    return ops_misc.foldl(fn, elems, initializer)


def foldr(fn: Callable[..., Any], elems: Any, initializer: Any = None, name: Any = None) -> Any:
    """``K.foldr``: ``tf.foldr``, a right fold over the first axis (unrolled when traced)."""
    return ops_misc.foldr(fn, elems, initializer)


def print_tensor(x: Any, message: str = "", summarize: int = 3) -> Any:
    """``K.print_tensor``: prints a concrete value (a traced one prints its description)."""
    builtins.print(message, x if not is_symbolic(x) else f"<traced {getattr(x, 'shape', '')}>")
    return x


__all__ = [
    "batch_normalization", "bias_add", "binary_crossentropy", "categorical_crossentropy",
    "conv1d", "conv2d", "conv2d_transpose", "conv3d", "depthwise_conv2d", "dropout", "foldl",
    "foldr", "map_fn", "moving_average_update", "normalize_batch_in_training", "pool2d",
    "pool3d", "print_tensor", "random_bernoulli", "random_binomial", "random_normal",
    "random_normal_variable", "random_uniform", "random_uniform_variable", "resize_images",
    "resize_volumes", "separable_conv2d", "sparse_categorical_crossentropy",
    "spatial_2d_padding", "spatial_3d_padding", "temporal_padding", "truncated_normal",
]  # fmt: skip
