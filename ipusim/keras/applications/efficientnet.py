"""EfficientNet B0-B4 (Tan & Le 2019), as ``keras.applications``: same layers (stem, MBConv
blocks with squeeze-and-excitation and swish, stochastic-depth Dropout), names and parameter
counts (B0 with the top: 5,330,571)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from ipusim.keras import initializers, layers
from ipusim.keras.applications import _common
from ipusim.keras.engine.functional import Functional

__all__ = [
    "EfficientNetB0",
    "EfficientNetB1",
    "EfficientNetB2",
    "EfficientNetB3",
    "EfficientNetB4",
    "preprocess_input",
]

#: MBConv stages of the B0 baseline: (kernel, repeats, filters in, filters out, expansion,
#: strides); every block has squeeze-and-excitation with ratio 0.25 and an identity skip.
_STAGES = [
    (3, 1, 32, 16, 1, 1),
    (3, 2, 16, 24, 6, 2),
    (5, 2, 24, 40, 6, 2),
    (3, 3, 40, 80, 6, 2),
    (5, 3, 80, 112, 6, 1),
    (5, 4, 112, 192, 6, 2),
    (3, 1, 192, 320, 6, 1),
]
_SE_RATIO = 0.25


def _conv_init() -> initializers.Initializer:
    return initializers.VarianceScaling(2.0, "fan_out", "truncated_normal")


def _dense_init() -> initializers.Initializer:
    return initializers.VarianceScaling(1.0 / 3.0, "fan_out", "uniform")


def _conv(filters: int, name: str, kernel_size: int = 1, **options: Any) -> layers.Conv2D:
    """A 'same' convolution without bias (unless ``options`` say otherwise), He-style init."""
    options = {"padding": "same", "use_bias": False, **options}
    return layers.Conv2D(
        filters, kernel_size, kernel_initializer=_conv_init(), name=name, **options
    )


def _bn_swish(x: Any, bn_name: str, activation_name: str) -> Any:
    x = layers.BatchNormalization(name=bn_name)(x)
    return layers.Activation("swish", name=activation_name)(x)


def _block(
    inputs: Any,
    drop_rate: float,
    name: str,
    filters_in: int,
    filters_out: int,
    kernel_size: int,
    strides: int,
    expand_ratio: int,
) -> Any:
    """An inverted residual (MBConv) block with squeeze-and-excitation."""
    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = _conv(filters, name + "expand_conv")(x)
        x = _bn_swish(x, name + "expand_bn", name + "expand_activation")
    if strides == 2:
        pad = _common.correct_pad(x, kernel_size)
        x = layers.ZeroPadding2D(padding=pad, name=name + "dwconv_pad")(x)
    x = layers.DepthwiseConv2D(
        kernel_size,
        strides=strides,
        padding="valid" if strides == 2 else "same",
        use_bias=False,
        depthwise_initializer=_conv_init(),
        name=name + "dwconv",
    )(x)
    x = _bn_swish(x, name + "bn", name + "activation")
    filters_se = max(1, int(filters_in * _SE_RATIO))
    se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=name + "se_reshape")(se)
    se = _conv(filters_se, name + "se_reduce", activation="swish", use_bias=True)(se)
    se = _conv(filters, name + "se_expand", activation="sigmoid", use_bias=True)(se)
    x = layers.Multiply(name=name + "se_excite")([x, se])
    x = _conv(filters_out, name + "project_conv")(x)
    x = layers.BatchNormalization(name=name + "project_bn")(x)
    if strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = layers.Add(name=name + "add")([x, inputs])
    return x


def _blocks(x: Any, width: float, depth: float, drop_connect_rate: float = 0.2) -> Any:
    """The MBConv stages, scaled by ``width`` (channels) and ``depth`` (repeats)."""
    repeats_of = [int(math.ceil(depth * stage[1])) for stage in _STAGES]
    total_blocks = float(sum(repeats_of))
    b = 0
    for i, (kernel, _, f_in, f_out, expand, strides) in enumerate(_STAGES):
        f_in, f_out = _common.make_divisible(f_in * width), _common.make_divisible(f_out * width)
        for j in range(repeats_of[i]):
            if j > 0:
                strides, f_in = 1, f_out
            drop = drop_connect_rate * b / total_blocks
            x = _block(x, drop, f"block{i + 1}{chr(j + 97)}_", f_in, f_out, kernel, strides, expand)
            b += 1
    return x


def _efficientnet(
    width: float,
    depth: float,
    default_size: int,
    dropout_rate: float,
    model_name: str,
    a: _common.AppArgs,
) -> Functional:
    _, inputs = _common.checked_input(model_name, a, default_size)
    x = layers.Rescaling(1.0 / 255.0)(inputs)
    x = layers.Normalization(axis=-1)(x)
    x = layers.ZeroPadding2D(padding=_common.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = _conv(_common.make_divisible(32 * width), "stem_conv", 3, strides=2, padding="valid")(x)
    x = _bn_swish(x, "stem_bn", "stem_activation")
    x = _blocks(x, width, depth)
    x = _conv(_common.make_divisible(1280 * width), "top_conv")(x)
    x = _bn_swish(x, "top_bn", "top_activation")
    x = _common.top(x, a, "avg_pool", dropout_rate, kernel_initializer=_dense_init())
    return _common.finish(inputs, x, model_name, a.weights)


def _variant(
    model_name: str, width: float, depth: float, size: int, dropout: float
) -> Callable[..., Functional]:
    variant = model_name[-2:].upper()
    return _common.constructor(
        __name__,
        "EfficientNet" + variant,
        functools.partial(_efficientnet, width, depth, size, dropout, model_name),
        f"EfficientNet-{variant}: width x{width}, depth x{depth}, default input "
        f"{size}x{size}, top dropout {dropout}. Arguments as "
        ":func:`ipusim.keras.applications.ResNet50`.",
        error_name=model_name,
    )


EfficientNetB0 = _variant("efficientnetb0", 1.0, 1.0, 224, 0.2)
EfficientNetB1 = _variant("efficientnetb1", 1.0, 1.1, 240, 0.2)
EfficientNetB2 = _variant("efficientnetb2", 1.1, 1.2, 260, 0.3)
EfficientNetB3 = _variant("efficientnetb3", 1.2, 1.4, 300, 0.3)
EfficientNetB4 = _variant("efficientnetb4", 1.4, 1.8, 380, 0.4)


def preprocess_input(x: Any, data_format: Any = None) -> Any:
    """The identity: EfficientNet rescales and normalises inside the model (as Keras)."""
    return x
