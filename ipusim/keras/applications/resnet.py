"""ResNet50 and ResNet101 (He et al. 2015, "Deep Residual Learning"), as ``keras.applications``.

Same layers, names and order as Keras' ``resnet.py`` (v1: the stride of a stage's first block is
on its first 1x1 convolution; explicit ``conv1_pad`` / ``pool1_pad`` ZeroPadding2D layers), so
layer names such as ``conv4_block2_add`` select the same point of the network and the parameter
count is Keras' (ResNet50 with the top: 25,636,712).
"""

from __future__ import annotations

import functools
from typing import Any

from ipusim.errors import UnsupportedError
from ipusim.keras import layers
from ipusim.keras.applications import _common
from ipusim.keras.engine.functional import Functional

__all__ = ["ResNet50", "ResNet101", "decode_predictions", "preprocess_input"]

_BN_EPSILON = 1.001e-5


def _conv_bn(x: Any, filters: int, kernel: int, name: str, relu: bool = True, **conv: Any) -> Any:
    """Layers ``{name}_conv``, ``{name}_bn`` and (with ``relu``) ``{name}_relu``."""
    x = layers.Conv2D(filters, kernel, name=f"{name}_conv", **conv)(x)
    x = layers.BatchNormalization(epsilon=_BN_EPSILON, name=f"{name}_bn")(x)
    return layers.Activation("relu", name=f"{name}_relu")(x) if relu else x


def _block(
    x: Any, filters: int, stride: int = 1, conv_shortcut: bool = True, name: str = ""
) -> Any:
    """The bottleneck residual block (Keras' ``block1``)."""
    shortcut = (
        _conv_bn(x, 4 * filters, 1, f"{name}_0", False, strides=stride) if conv_shortcut else x
    )
    x = _conv_bn(x, filters, 1, f"{name}_1", strides=stride)
    x = _conv_bn(x, filters, 3, f"{name}_2", padding="same")
    x = _conv_bn(x, 4 * filters, 1, f"{name}_3", relu=False)
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def _stack(x: Any, filters: int, blocks: int, stride1: int = 2, name: str = "") -> Any:
    x = _block(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = _block(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def _resnet(conv4_blocks: int, model_name: str, a: _common.AppArgs) -> Functional:
    _, inputs = _common.checked_input(model_name, a)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(inputs)
    x = _conv_bn(x, 64, 7, "conv1", strides=2)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = _stack(x, 64, 3, stride1=1, name="conv2")
    x = _stack(x, 128, 4, name="conv3")
    x = _stack(x, 256, conv4_blocks, name="conv4")
    x = _stack(x, 512, 3, name="conv5")
    x = _common.top(x, a, "avg_pool")
    return _common.finish(inputs, x, model_name, a.weights)


ResNet50 = _common.constructor(
    __name__,
    "ResNet50",
    functools.partial(_resnet, 6, "resnet50"),
    """ResNet-50: stages of 3, 4, 6 and 3 bottleneck blocks (177 layers with the top).

    Args:
        include_top: end with global average pooling and a ``classes``-way Dense layer.
        weights: None (random), ``"imagenet"`` (not available offline: warns and keeps the
            random initialisation) or the path of a weights file saved by ipusim.
        input_tensor: a ``keras.Input`` tensor to build on.
        input_shape: ``(height, width, channels)``; default (224, 224, 3) with the top.
        pooling: without the top, ``None``, ``"avg"`` or ``"max"`` over the last feature map.
        classes: output classes of the top.
        classifier_activation: activation of the top layer.
    """,
)
ResNet101 = _common.constructor(
    __name__,
    "ResNet101",
    functools.partial(_resnet, 23, "resnet101"),
    "ResNet-101: stages of 3, 4, 23 and 3 bottleneck blocks (arguments as :func:`ResNet50`).",
)


def preprocess_input(x: Any, data_format: Any = None) -> Any:
    """Keras' 'caffe' preprocessing for ResNet: RGB -> BGR, minus the ImageNet channel means."""
    import numpy as np

    array = np.asarray(x, dtype=np.float32)[..., ::-1]
    return array - np.array([103.939, 116.779, 123.68], np.float32)


def decode_predictions(preds: Any, top: int = 5) -> Any:
    """Not available: it needs the ImageNet class index, which ipusim does not download."""
    raise UnsupportedError(
        "decode_predictions needs the ImageNet class index file, which ipusim does not download"
    )
