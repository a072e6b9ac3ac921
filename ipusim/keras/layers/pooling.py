"""Pooling layers (NHWC)."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import conv as conv_ops
from ipusim.graph.ops import math as m
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import check_data_format, normalize_padding, normalize_tuple
from ipusim.keras.layers.core import check_rank


class _Pooling2D(Layer):
    """A windowed pool: ``_op`` over ``pool_size`` windows; ``_normalize`` reads each window
    argument (the 1-D and 3-D pools of :mod:`ipusim.keras.layers.pooling_nd` change it)."""

    _op: Any = None
    _normalize: Any = staticmethod(normalize_tuple)

    def __init__(
        self,
        pool_size: Any = (2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        cls = type(self).__name__
        check_data_format(data_format, cls)
        self.pool_size = self._normalize(pool_size, "pool_size", cls)
        self.strides = (
            self.pool_size if strides is None else self._normalize(strides, "strides", cls)
        )
        self.padding = normalize_padding(padding, cls)

    def build(self, input_shape: Any) -> None:
        if not isinstance(input_shape, tuple) or len(input_shape) != 4:
            raise ConfigurationError(
                f"{type(self).__name__} {self.name!r} expects inputs of shape "
                f"(batch, height, width, channels), received {input_shape}"
            )
        self.built = True

    def call(self, inputs: Any) -> Any:
        return type(self)._op(
            inputs, pool_size=self.pool_size, strides=self.strides, padding=self.padding.upper()
        )

    _config_names = "pool_size strides padding"


class MaxPooling2D(_Pooling2D):
    """Maximum over windows of ``pool_size`` (default stride = pool size)."""

    _op = staticmethod(conv_ops.max_pool2d)


class AveragePooling2D(_Pooling2D):
    """Mean over windows of ``pool_size`` (default stride = pool size)."""

    _op = staticmethod(conv_ops.avg_pool2d)


class _GlobalPooling2D(Layer):
    def __init__(
        self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        check_data_format(data_format, type(self).__name__)
        self.keepdims = keepdims

    _config_names = "keepdims"


class GlobalAveragePooling2D(_GlobalPooling2D):
    """Mean over height and width: (N, H, W, C) -> (N, C)."""

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, 4, "(batch, height, width, channels)")
        if self.keepdims:
            return m.reduce_mean(inputs, axis=(1, 2), keepdims=True)
        return conv_ops.global_avg_pool2d(inputs)


class GlobalMaxPooling2D(_GlobalPooling2D):
    """Maximum over height and width: (N, H, W, C) -> (N, C)."""

    def call(self, inputs: Any) -> Any:
        return m.reduce_max(inputs, axis=(1, 2), keepdims=self.keepdims)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
