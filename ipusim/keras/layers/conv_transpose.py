"""Transposed convolution layers (``Conv1DTranspose``, ``Conv2DTranspose``), as TensorFlow.

``tf.nn.conv2d_transpose`` is the input gradient of a convolution: TensorFlow's op is
``Conv2DBackpropInput`` and XLA gives poplin the same input-dilated convolution it plans for a
backward pass, so the layer calls :func:`ipusim.graph.ops.conv.conv2d_backprop_input` with the
output size Keras computes (:func:`deconv_length`). The kernel is ``(Kh, Kw, filters, Cin)``
(Keras' layout: the forward convolution's output channels are this layer's inputs).
A 1-D layer is the 2-D one with a unit height, as for :mod:`ipusim.keras.layers.conv1d`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import conv as conv_ops
from ipusim.keras.engine.layer import config_of
from ipusim.keras.layers.conv import Conv2D
from ipusim.keras.layers.conv1d import _UnitHeight, unit_height
from ipusim.keras.layers.core import bias_and_activation


def deconv_length(
    size: int | None,
    kernel: int,
    padding: str,
    output_padding: int | None,
    stride: int,
    dilation: int,
) -> int | None:
    """Output length of a transposed convolution along one axis (Keras' ``deconv_output_length``).

    Args:
        size: input length in pixels (None when unknown).
        kernel: kernel taps; ``dilation`` spreads them to ``(kernel − 1)·dilation + 1``.
        padding: ``"valid"`` or ``"same"``.
        output_padding: extra pixels after the last one (None: Keras' default rule).
        stride: step of the forward convolution.
    """
    if size is None:
        return None
    span = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return size * stride + max(span - stride, 0)
        return size * stride
    pad = span // 2 if padding == "same" else 0
    return (size - 1) * stride + span - 2 * pad + output_padding


def normalize_output_padding(
    value: Any, strides: tuple[int, ...], layer: str
) -> tuple[int, ...] | None:
    """``output_padding`` as a tuple (one per spatial axis), each smaller than its stride."""
    if value is None:
        return None
    items = (value,) * len(strides) if isinstance(value, int) else tuple(value)
    if len(items) != len(strides) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in items
    ):
        raise ConfigurationError(
            f"{layer}: `output_padding` must be a non-negative int or {len(strides)} of them, "
            f"received {value!r}"
        )
    for pad, stride in zip(items, strides, strict=True):
        if pad >= stride:
            raise ConfigurationError(
                f"{layer}: strides {strides} must be greater than output padding {items}"
            )
    return items


def transposed_size(layer: Any, spatial: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """Keras' output size of ``layer``'s transposed convolution for inputs of size ``spatial``.

    Args:
        layer: a transposed convolution layer (its kernel_size, padding, output_padding,
            strides and dilation_rate, one entry per spatial axis).
        spatial: the input's spatial sizes, in pixels (None where unknown).
    """
    pads = layer.output_padding or (None,) * len(spatial)
    return tuple(
        deconv_length(size, k, layer.padding, p, s, d)
        for size, k, p, s, d in zip(
            spatial, layer.kernel_size, pads, layer.strides, layer.dilation_rate, strict=True
        )
    )


def transposed_conv(layer: Any, x: Any, kernel: Any, op: Callable[..., Any]) -> Any:
    """``layer``'s transposed convolution of ``x``: ``op``, the input gradient of the convolution
    of the layer's rank, to the output size Keras computes (:func:`transposed_size`)."""
    out = transposed_size(layer, tuple(x.shape[1 : 1 + len(layer.kernel_size)]))
    return op(
        x,
        kernel,
        (x.shape[0], *out, layer.filters),
        strides=layer.strides,
        padding=layer.padding.upper(),
        dilation_rate=layer.dilation_rate,
    )


class _Transposed:
    """What the transposed convolutions share: the ``(*taps, filters, Cin)`` kernel, ``_op``
    (the input gradient of the forward convolution) as the convolution, no ``groups``."""

    _op: Callable[..., Any]
    filters: int
    _taps: Callable[[], tuple[int, ...]]

    def _kernel_shape(self, channels: int) -> tuple[int, ...]:
        return (*self._taps(), self.filters, channels)

    def _convolve(self, x: Any, kernel: Any, padding: str) -> Any:
        return transposed_conv(self, x, kernel, type(self)._op)

    def get_config(self) -> dict[str, Any]:
        base: dict[str, Any] = super().get_config()  # type: ignore[misc]
        config = base | config_of(self, "output_padding")
        config.pop("groups", None)
        return config


class Conv2DTranspose(_Transposed, Conv2D):
    """Transposed 2-D convolution (kernel ``(Kh, Kw, filters, Cin)``).

    Args:
        filters: output channels.
        kernel_size, strides, padding, dilation_rate: of the convolution this one transposes.
        output_padding: None (Keras' rule) or extra rows / columns per axis, each < its stride.
        activation, use_bias, initializers: as :class:`Conv2D`.
    """

    _op = staticmethod(conv_ops.conv2d_backprop_input)

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
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


class Conv1DTranspose(_UnitHeight, Conv2DTranspose):
    """Transposed 1-D convolution (kernel ``(K, filters, Cin)``)."""

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        dilation_rate: Any = 1,
        activation: Any = None,
        use_bias: bool = True,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        if output_padding is not None:  # a 1-tuple or an int; the unit height has none
            items = (output_padding,) if isinstance(output_padding, int) else tuple(output_padding)
            output_padding = (0, *items)
        super().__init__(
            filters,
            **unit_height(name, kernel_size, strides, padding, dilation_rate, causal=False),
            output_padding=output_padding,
            data_format=data_format,
            activation=activation,
            use_bias=use_bias,
            **kwargs,
        )

    def call(self, inputs: Any) -> Any:
        return bias_and_activation(self, self._unit_height(self._convolve, inputs, self.kernel))

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        if self.output_padding is not None:
            config["output_padding"] = [self.output_padding[1]]
        return config


Convolution2DTranspose = Conv2DTranspose
Convolution1DTranspose = Conv1DTranspose
