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
from ipusim.keras.layers.conv import _Conv
from ipusim.keras.layers.conv_transpose import _Transposed, normalize_output_padding


class Conv3D(_Conv):
    """3-D convolution.

    Args:
        filters: number of output channels.
        kernel_size, strides, dilation_rate: an int or (depth, height, width).
        padding: ``"valid"`` or ``"same"``.
        groups: 1 (TensorFlow runs grouped 3-D convolutions on GPUs only).
        activation: name or function; None = linear.
        Others: as :class:`~ipusim.keras.layers.conv.Conv2D`.
    """

    _rank = 3
    _layout = "(batch, depth, height, width, channels)"

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
        super().__init__(
            filters,
            kernel_size,
            strides=strides,
            padding=padding,
            data_format=data_format,
            dilation_rate=dilation_rate,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            **kwargs,
        )
        if groups != 1:
            raise UnsupportedError(
                f"{type(self).__name__}: groups={groups!r} is not simulated (TensorFlow runs "
                "grouped 3-D convolutions on GPUs only); use groups=1"
            )

    def _convolve(self, x: Any, kernel: Any, padding: str) -> Any:
        geometry = {"strides": self.strides, "dilation_rate": self.dilation_rate}
        return conv3d_ops.conv3d(x, kernel, padding=padding, **geometry)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["groups"]  # always 1
        return config


class Conv3DTranspose(_Transposed, Conv3D):
    """Transposed 3-D convolution (kernel ``(Kd, Kh, Kw, filters, Cin)``): the transposed
    convolution of :class:`~ipusim.keras.layers.conv_transpose.Conv2DTranspose` on the volumes
    of :class:`Conv3D`.

    Args:
        output_padding: None (Keras' rule) or extra planes / rows / columns per axis, each
            smaller than its stride.
        Others: as :class:`Conv3D`.
    """

    _op = staticmethod(conv3d_ops.conv3d_backprop_input)

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
        name = type(self).__name__
        self.output_padding = normalize_output_padding(output_padding, self.strides, name)


Convolution3D = Conv3D
Convolution3DTranspose = Conv3DTranspose
