"""3-D convolution layers (``Conv3D``, ``Conv3DTranspose``) on NDHWC volumes, as TensorFlow.

Kernels are ``(Kd, Kh, Kw, Cin, filters)`` for ``Conv3D`` and ``(Kd, Kh, Kw, filters, Cin)``
for ``Conv3DTranspose``, whose output is the input gradient of the convolution it transposes
(``tf.nn.conv3d_transpose`` is ``Conv3DBackpropInputV2``), sized by Keras' rule
(:func:`ipusim.keras.layers.conv_transpose.transposed_size`).
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import UnsupportedError
from ipusim.graph.ops import conv3d as conv3d_ops
from ipusim.keras import activations, initializers
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import (
    channels_last_input,
    check_data_format,
    check_strides_dilation,
    normalize_padding,
    normalize_tuple,
)
from ipusim.keras.layers.conv_transpose import normalize_output_padding, transposed_conv
from ipusim.keras.layers.core import _positive_int, add_kernel, bias_and_activation, no_regularizers


class Conv3D(Layer):
    """3-D convolution.

    Args:
        filters: number of output channels.
        kernel_size, strides, dilation_rate: an int or (depth, height, width).
        padding: ``"valid"`` or ``"same"``.
        groups: 1 (TensorFlow runs grouped 3-D convolutions on GPUs only).
        activation: name or function; None = linear.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1, 1),
        groups: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name = type(self).__name__
        no_regularizers(name, locals())
        filters = _positive_int(name, "filters", filters)
        if groups != 1:
            raise UnsupportedError(
                f"{name}: groups={groups!r} is not simulated (TensorFlow runs grouped 3-D "
                "convolutions on GPUs only); use groups=1"
            )
        check_data_format(data_format, name)
        self.filters = filters
        self.kernel_size = normalize_tuple(kernel_size, "kernel_size", name, 3)
        self.strides = normalize_tuple(strides, "strides", name, 3)
        self.padding = normalize_padding(padding, name)
        self.dilation_rate = normalize_tuple(dilation_rate, "dilation_rate", name, 3)
        check_strides_dilation(self.strides, self.dilation_rate, name)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _kernel_shape(self, channels: int) -> tuple[int, ...]:
        return (*self.kernel_size, channels, self.filters)

    def build(self, input_shape: Any) -> None:
        channels = channels_last_input(self, input_shape, "(batch, depth, height, width, channels)")
        self.kernel = add_kernel(self, self._kernel_shape(channels), (self.filters,))

    def _convolve(self, inputs: Any) -> Any:
        return conv3d_ops.conv3d(
            inputs,
            self.kernel,
            strides=self.strides,
            padding=self.padding.upper(),
            dilation_rate=self.dilation_rate,
        )

    def call(self, inputs: Any) -> Any:
        y = self._convolve(inputs)
        return bias_and_activation(self, y)

    _config_names = (
        "filters kernel_size strides padding dilation_rate activation use_bias "
        "kernel_initializer bias_initializer"
    )


class Conv3DTranspose(Conv3D):
    """Transposed 3-D convolution (kernel ``(Kd, Kh, Kw, filters, Cin)``).

    Args:
        output_padding: None (Keras' rule) or extra planes / rows / columns per axis, each
            smaller than its stride.
        Others: as :class:`Conv3D`.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1, 1),
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1, 1),
        activation: Any = None,
        use_bias: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters,
            kernel_size,
            strides=strides,
            padding=padding,
            data_format=data_format,
            dilation_rate=dilation_rate,
            activation=activation,
            use_bias=use_bias,
            **kwargs,
        )
        self.output_padding = normalize_output_padding(
            output_padding, self.strides, type(self).__name__
        )

    def _kernel_shape(self, channels: int) -> tuple[int, ...]:
        return (*self.kernel_size, self.filters, channels)

    def _convolve(self, inputs: Any) -> Any:
        return transposed_conv(self, inputs, self.kernel, conv3d_ops.conv3d_backprop_input)

    _config_names = "output_padding"


Convolution3D = Conv3D
Convolution3DTranspose = Conv3DTranspose
