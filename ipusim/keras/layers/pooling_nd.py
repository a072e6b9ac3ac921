"""1-D and 3-D pooling layers, and the global poolings over steps and volumes (channels last).

A 1-D pool is the 2-D pool with a unit height (``expand_dims`` + the 2-D op + ``squeeze``), as
``tf.nn.pool`` and XLA give it to popnn. 3-D pools are their own ops
(:mod:`ipusim.graph.ops.pool3d`): popnn pools any number of field dimensions in one pass.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ipusim.graph.ops import conv as conv_ops
from ipusim.graph.ops import math as m
from ipusim.graph.ops import pool3d
from ipusim.graph.ops import shape as shape_ops
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import check_data_format, normalize_tuple
from ipusim.keras.layers.conv1d import normalize_single
from ipusim.keras.layers.core import check_rank
from ipusim.keras.layers.pooling import _Pooling2D


class _Pooling1D(_Pooling2D):
    _normalize = staticmethod(normalize_single)
    build = Layer.build

    def __init__(
        self,
        pool_size: Any = 2,
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = "channels_last",
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, 3, "(batch, steps, channels)")
        y = type(self)._op(
            shape_ops.expand_dims(inputs, 1),
            pool_size=(1, self.pool_size),
            strides=(1, self.strides),
            padding=self.padding.upper(),
        )
        return shape_ops.squeeze(y, 1)

    def get_config(self) -> dict[str, Any]:
        return super().get_config() | {"pool_size": [self.pool_size], "strides": [self.strides]}


class MaxPooling1D(_Pooling1D):
    """Maximum over windows of ``pool_size`` steps (default stride = pool size)."""

    _op = staticmethod(conv_ops.max_pool2d)


class AveragePooling1D(_Pooling1D):
    """Mean over windows of ``pool_size`` steps (``"same"``: over the steps inside the input)."""

    _op = staticmethod(conv_ops.avg_pool2d)


class _Pooling3D(_Pooling2D):
    _normalize = staticmethod(partial(normalize_tuple, rank=3))
    build = Layer.build

    def __init__(
        self,
        pool_size: Any = (2, 2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, 5, "(batch, depth, height, width, channels)")
        return super().call(inputs)


class MaxPooling3D(_Pooling3D):
    """Maximum over ``pool_size`` boxes (depth, height, width)."""

    _op = staticmethod(pool3d.max_pool3d)


class AveragePooling3D(_Pooling3D):
    """Mean over ``pool_size`` boxes (``"same"``: over the elements inside the input)."""

    _op = staticmethod(pool3d.avg_pool3d)


class _GlobalPooling(Layer):
    _rank: int = 3
    _reduce: Any = None

    def __init__(
        self, data_format: str | None = "channels_last", keepdims: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        check_data_format(data_format, type(self).__name__)
        self.keepdims = bool(keepdims)

    def call(self, inputs: Any) -> Any:
        check_rank(self, inputs, self._rank, "(batch, ..., channels)")
        axes = tuple(range(1, self._rank - 1))
        return type(self)._reduce(inputs, axis=axes, keepdims=self.keepdims)

    _config_names = "keepdims"


class GlobalAveragePooling1D(_GlobalPooling):
    """Mean over steps: (N, L, C) -> (N, C)."""

    _reduce = staticmethod(m.reduce_mean)


class GlobalMaxPooling1D(_GlobalPooling):
    """Maximum over steps: (N, L, C) -> (N, C)."""

    _reduce = staticmethod(m.reduce_max)


class _GlobalPooling3D(_GlobalPooling):
    _rank = 5

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(data_format, keepdims, **kwargs)


class GlobalAveragePooling3D(_GlobalPooling3D):
    """Mean over depth, height and width: (N, D, H, W, C) -> (N, C)."""

    _reduce = staticmethod(m.reduce_mean)


class GlobalMaxPooling3D(_GlobalPooling3D):
    """Maximum over depth, height and width: (N, D, H, W, C) -> (N, C)."""

    _reduce = staticmethod(m.reduce_max)


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
MaxPool3D = MaxPooling3D
AvgPool3D = AveragePooling3D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalAvgPool3D = GlobalAveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D
