"""MobileNetV2 (Sandler et al. 2018, "Inverted Residuals and Linear Bottlenecks"), as
``keras.applications.MobileNetV2``: same layers, names and parameter count (3,538,984 with the
top at alpha 1.0)."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras import layers
from ipusim.keras.applications import _common
from ipusim.keras.engine.functional import Functional

__all__ = ["MobileNetV2", "preprocess_input"]

_BN: dict[str, Any] = {"epsilon": 1e-3, "momentum": 0.999}

#: The paper's table: (expansion t, filters c, repeats n, stride s of the first) of each stage.
_STAGES = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
]
#: (filters, stride, expansion) of the 17 inverted residual blocks, in order.
_BLOCKS = [(c, s if i == 0 else 1, t) for t, c, n, s in _STAGES for i in range(n)]


def _inverted_res_block(
    inputs: Any, expansion: int, stride: int, alpha: float, filters: int, block_id: int
) -> Any:
    in_channels = inputs.shape[-1]
    pointwise_filters = _common.make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(
            expansion * in_channels, 1, padding="same", use_bias=False, name=prefix + "expand"
        )(x)
        x = layers.BatchNormalization(name=prefix + "expand_BN", **_BN)(x)
        x = layers.ReLU(6.0, name=prefix + "expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=_common.correct_pad(x, 3), name=prefix + "pad")(x)
    x = layers.DepthwiseConv2D(
        3,
        strides=stride,
        use_bias=False,
        padding="same" if stride == 1 else "valid",
        name=prefix + "depthwise",
    )(x)
    x = layers.BatchNormalization(name=prefix + "depthwise_BN", **_BN)(x)
    x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(x)
    x = layers.Conv2D(
        pointwise_filters, 1, padding="same", use_bias=False, name=prefix + "project"
    )(x)
    x = layers.BatchNormalization(name=prefix + "project_BN", **_BN)(x)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=prefix + "add")([inputs, x])
    return x


def MobileNetV2(  # noqa: N802 - Keras' name
    input_shape: Any = None,
    alpha: float = 1.0,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    **kwargs: Any,
) -> Functional:
    """MobileNetV2 (156 layers with the top).

    Args:
        input_shape: ``(height, width, channels)``; default (224, 224, 3) with the top.
        alpha: width multiplier of every layer's channels.
        include_top, weights, input_tensor, pooling, classes, classifier_activation: as
            :func:`ipusim.keras.applications.ResNet50`.
    """
    name = "MobileNetV2"
    _common.no_kwargs(name, kwargs)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or alpha <= 0:
        raise ConfigurationError(f"{name}: `alpha` must be a positive number, received {alpha!r}")
    a = _common.AppArgs(include_top, weights, input_tensor, input_shape, pooling, classes,
                        classifier_activation)  # fmt: skip
    shape, inputs = _common.checked_input(name, a)
    x = layers.Conv2D(
        _common.make_divisible(32 * alpha, 8),
        3,
        strides=(2, 2),
        padding="same",
        use_bias=False,
        name="Conv1",
    )(inputs)
    x = layers.BatchNormalization(name="bn_Conv1", **_BN)(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, expansion, stride, alpha, filters, block_id)
    last = _common.make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, 1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(name="Conv_1_bn", **_BN)(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    x = _common.top(x, a)
    return _common.finish(inputs, x, f"mobilenetv2_{float(alpha):.2f}_{shape[0]}", weights, 3)


def preprocess_input(x: Any, data_format: Any = None) -> Any:
    """Keras' 'tf' preprocessing: pixels in [0, 255] to [-1, 1]."""
    import numpy as np

    return np.asarray(x, dtype=np.float32) / 127.5 - 1.0
