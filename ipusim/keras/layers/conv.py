"""Convolution layers (NHWC activations, HWIO kernels, as TensorFlow)."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import conv as conv_ops
from ipusim.graph.ops import conv_grouped
from ipusim.keras import activations, initializers
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.core import _positive_int, add_kernel, bias_and_activation, no_regularizers


def normalize_tuple(value: Any, name: str, layer: str, rank: int = 2) -> tuple[int, ...]:
    """An int or ``rank`` ints as a tuple of ``rank`` positive ints (Keras' ``normalize_tuple``)."""
    items = (value,) * rank if isinstance(value, int) else tuple(value)
    if len(items) != rank or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in items
    ):
        raise ConfigurationError(
            f"{layer}: `{name}` must be a positive int or {rank} of them, received {value!r}"
        )
    return items


def normalize_padding(value: Any, layer: str) -> str:
    if not isinstance(value, str) or value.lower() not in ("valid", "same"):
        raise ConfigurationError(
            f"{layer}: `padding` must be 'valid' or 'same', received {value!r}"
        )
    return value.lower()


def check_strides_dilation(strides: tuple[int, ...], dilation: tuple[int, ...], layer: str) -> None:
    """Keras' rule for every convolution: a stride above 1 excludes a dilation above 1."""
    if max(strides) > 1 and max(dilation) > 1:
        raise ConfigurationError(
            f"{layer}: `strides > 1` not supported in conjunction with `dilation_rate > 1`. "
            f"Received: strides={strides} and dilation_rate={dilation}"
        )


def channels_last_input(layer: Layer, input_shape: Any, layout: str) -> Any:
    """The known channels of ``input_shape``, a tuple laid out as ``layout`` (one name an axis,
    e.g. ``"(batch, steps, channels)"``); raise a ConfigurationError naming the layer otherwise."""
    rank = layout.count(",") + 1
    if not isinstance(input_shape, tuple) or len(input_shape) != rank or input_shape[-1] is None:
        raise ConfigurationError(
            f"{type(layer).__name__} {layer.name!r} expects inputs of shape {layout}, "
            f"received input shape {input_shape}"
        )
    return input_shape[-1]


def check_data_format(value: Any, layer: str) -> None:
    if value not in (None, "channels_last"):
        raise ConfigurationError(
            f"{layer}: only data_format='channels_last' (NHWC) is supported, received {value!r}"
        )


class _Conv(Layer):
    """What the convolution layers of every rank share (Keras' ``Conv`` base): their
    arguments and checks, the ``(*taps, Cin / groups, filters)`` kernel and the call.

    Args:
        filters: number of output channels.
        kernel_size: an int or one per spatial axis.
        strides: an int or one per spatial axis; default 1.
        padding: ``"valid"`` or ``"same"``.
        dilation_rate: an int or one per spatial axis; default 1.
        groups: channel groups; input channels and ``filters`` must both divide by it.
        activation: name or function; None = linear.
    """

    #: Spatial axes of the kernel, and the input layout the errors name.
    _rank = 2
    _layout = "(batch, height, width, channels)"

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
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
        name, rank = type(self).__name__, self._rank
        no_regularizers(name, locals())
        filters = _positive_int(name, "filters", filters)
        check_data_format(data_format, name)
        self.groups = groups = _positive_int(name, "groups", groups)
        if filters % groups:
            raise ConfigurationError(
                f"{name}: `filters` ({filters}) must be divisible by `groups` ({groups})"
            )
        self.dilation_rate = normalize_tuple(dilation_rate, "dilation_rate", name, rank)
        self.filters = filters
        self.kernel_size = normalize_tuple(kernel_size, "kernel_size", name, rank)
        self.strides = normalize_tuple(strides, "strides", name, rank)
        self.padding = normalize_padding(padding, name)
        check_strides_dilation(self.strides, self.dilation_rate, name)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _taps(self) -> tuple[int, ...]:
        """The kernel's taps along each spatial axis."""
        return self.kernel_size

    def _kernel_shape(self, channels: int) -> tuple[int, ...]:
        """``(*taps, channels / groups, filters)``, for inputs of ``channels`` channels."""
        if channels % self.groups:
            raise ConfigurationError(
                f"{type(self).__name__} {self.name!r}: the input's {channels} channels must be "
                f"divisible by `groups` ({self.groups})"
            )
        return (*self._taps(), channels // self.groups, self.filters)

    def build(self, input_shape: Any) -> None:
        channels = channels_last_input(self, input_shape, self._layout)
        self.kernel = add_kernel(self, self._kernel_shape(channels), (self.filters,))

    def _convolve(self, x: Any, kernel: Any, padding: str) -> Any:
        """The convolution of ``x`` by ``kernel`` with the layer's geometry and ``padding``."""
        strides, dilation = self.strides, self.dilation_rate
        if self.groups > 1:
            return conv_grouped.grouped_conv2d(
                x, kernel, self.groups, strides=strides, padding=padding, dilation_rate=dilation
            )
        return conv_ops.conv2d(x, kernel, strides=strides, padding=padding, dilation_rate=dilation)

    def call(self, inputs: Any) -> Any:
        y = self._convolve(inputs, self.kernel, self.padding.upper())
        return bias_and_activation(self, y)

    _config_names = (
        "filters kernel_size strides padding dilation_rate groups activation use_bias "
        "kernel_initializer bias_initializer"
    )


class Conv2D(_Conv):
    """2-D convolution, ``kernel_size``, ``strides`` and ``dilation_rate`` an int or (height,
    width) (the 1-D and transposed 2-D layers are its subclasses). Args: as :class:`_Conv`."""


Convolution2D = Conv2D
