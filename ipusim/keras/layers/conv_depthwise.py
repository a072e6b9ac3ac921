"""Depthwise and depthwise-separable 2-D convolution layers (NHWC, as TensorFlow).

``DepthwiseConv2D`` keeps channels apart: each input channel is correlated with its own
``depth_multiplier`` filters (weight ``depthwise_kernel`` of shape ``(Kh, Kw, C, M)``), giving
``C·M`` output channels. ``SeparableConv2D`` follows it with a 1x1 convolution mixing the
channels (weight ``pointwise_kernel`` of shape ``(1, 1, C·M, filters)``), as ``tf.nn.separable_conv2d``.
"""

from __future__ import annotations

from typing import Any

from ipusim.graph.ops import conv as conv_ops
from ipusim.graph.ops import conv_grouped
from ipusim.keras import activations, initializers
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import (
    channels_last_input,
    check_data_format,
    check_strides_dilation,
    normalize_padding,
    normalize_tuple,
)
from ipusim.keras.layers.core import _positive_int, add_bias, bias_and_activation, no_regularizers


class DepthwiseConv2D(Layer):
    """Depthwise 2-D convolution.

    Args:
        kernel_size: an int or (height, width).
        strides: an int or (height, width); default 1.
        padding: ``"valid"`` or ``"same"``.
        depth_multiplier: output channels per input channel.
        dilation_rate: an int or (height, width); default 1.
        activation: name or function; None = linear.
        use_bias: add a bias of ``C·depth_multiplier`` entries.
    """

    _layout = "(batch, height, width, channels)"

    def __init__(
        self,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name = type(self).__name__
        no_regularizers(name, locals())
        check_data_format(data_format, name)
        self.kernel_size = normalize_tuple(kernel_size, "kernel_size", name)
        self.strides = normalize_tuple(strides, "strides", name)
        self.padding = normalize_padding(padding, name)
        self.depth_multiplier = _positive_int(name, "depth_multiplier", depth_multiplier)
        self.dilation_rate = normalize_tuple(dilation_rate, "dilation_rate", name)
        check_strides_dilation(self.strides, self.dilation_rate, name)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _taps(self) -> tuple[int, ...]:
        """The depthwise kernel's taps along each spatial axis."""
        return self.kernel_size

    def _add_depthwise_kernel(self, input_shape: Any) -> int:
        """Add the ``(*taps, C, depth_multiplier)`` depthwise kernel; return the input channels C."""
        channels = int(channels_last_input(self, input_shape, self._layout))
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel",
            (*self._taps(), channels, self.depth_multiplier),
            initializer=self.depthwise_initializer,
        )
        return channels

    def build(self, input_shape: Any) -> None:
        channels = self._add_depthwise_kernel(input_shape)
        add_bias(self, (channels * self.depth_multiplier,))

    def _convolve(self, x: Any, kernel: Any, padding: str) -> Any:
        geometry = {"strides": self.strides, "dilation_rate": self.dilation_rate}
        return conv_grouped.depthwise_conv2d(x, kernel, padding=padding, **geometry)

    def _depthwise(self, inputs: Any) -> Any:
        return self._convolve(inputs, self.depthwise_kernel, self.padding.upper())

    def call(self, inputs: Any) -> Any:
        return bias_and_activation(self, self._depthwise(inputs))

    _config_names = (
        "kernel_size strides padding depth_multiplier dilation_rate activation use_bias "
        "depthwise_initializer bias_initializer"
    )


class SeparableConv2D(DepthwiseConv2D):
    """Depthwise-separable 2-D convolution: a depthwise convolution, then a 1x1 convolution.

    Args:
        filters: output channels of the pointwise convolution.
        kernel_size, strides, padding, dilation_rate, depth_multiplier: of the depthwise step.
        activation: name or function applied at the end; None = linear.
        use_bias: add a bias of ``filters`` entries after the pointwise step.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        depth_multiplier: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        pointwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        pointwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        pointwise_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        no_regularizers("SeparableConv2D", locals())
        super().__init__(
            kernel_size,
            strides=strides,
            padding=padding,
            depth_multiplier=depth_multiplier,
            data_format=data_format,
            dilation_rate=dilation_rate,
            activation=activation,
            use_bias=use_bias,
            depthwise_initializer=depthwise_initializer,
            bias_initializer=bias_initializer,
            activity_regularizer=activity_regularizer,  # the others are None (checked above)
            **kwargs,
        )
        self.filters = _positive_int("SeparableConv2D", "filters", filters)
        self.pointwise_initializer = initializers.get(pointwise_initializer)

    def build(self, input_shape: Any) -> None:
        channels = self._add_depthwise_kernel(input_shape)
        ones = (1,) * len(self._taps())  # a 1x1 (1-D: 1-tap) kernel
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            (*ones, channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer,
        )
        add_bias(self, (self.filters,))

    def call(self, inputs: Any) -> Any:
        y = conv_ops.conv2d(self._depthwise(inputs), self.pointwise_kernel)
        return bias_and_activation(self, y)

    _config_names = "filters pointwise_initializer"


SeparableConvolution2D = SeparableConv2D
