"""1-D convolution layers (``(batch, steps, channels)`` activations, as TensorFlow).

A 1-D convolution is the 2-D one with a unit height: ``tf.nn.conv1d`` inserts the axis (input
``(N, 1, L, C)``, filters ``(1, K, Cin, Cout)``), and poplin's planner itself gives any
convolution with fewer than two field dimensions leading size-1 ones before planning (S:
graphcore/poplibs lib/poplin/ConvPlan.cpp, ``addExtraDims`` when ``numFieldDims < 2``). ipusim
composes the same way: ``expand_dims`` + the 2-D op + ``squeeze``, so the numerics and the conv
planner's plan are exactly those of the 2-D pass.
``padding="causal"`` pads ``(K − 1)·dilation`` steps before the sequence and runs ``"valid"``,
as Keras does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import conv as conv_ops
from ipusim.graph.ops import shape as shape_ops
from ipusim.keras.layers.conv import Conv2D
from ipusim.keras.layers.conv_depthwise import DepthwiseConv2D, SeparableConv2D
from ipusim.keras.layers.core import bias_and_activation


def normalize_single(value: Any, name: str, layer: str) -> int:
    """An int or a 1-tuple of ints as a positive int (Keras' 1-D spellings)."""
    items = (value,) if isinstance(value, int) else tuple(value)
    if len(items) != 1 or isinstance(items[0], bool) or not isinstance(items[0], int):
        raise ConfigurationError(
            f"{layer}: `{name}` must be a positive int or a 1-tuple of one, received {value!r}"
        )
    if items[0] < 1:
        raise ConfigurationError(f"{layer}: `{name}` must be positive, received {value!r}")
    return items[0]


def padding_1d(padding: Any, layer: str, causal: bool = True) -> str:
    """``padding`` lower-cased; ``"causal"`` is accepted when the layer has it."""
    allowed = ("valid", "same", "causal") if causal else ("valid", "same")
    if not isinstance(padding, str) or padding.lower() not in allowed:
        raise ConfigurationError(
            f"{layer}: `padding` must be one of {', '.join(map(repr, allowed))}, "
            f"received {padding!r}"
        )
    return padding.lower()


def unit_height(
    layer: str,
    kernel_size: Any,
    strides: Any,
    padding: Any,
    dilation_rate: Any,
    causal: bool = True,
) -> dict[str, Any]:
    """Keras' 1-D ``kernel_size``, ``strides`` and ``dilation_rate`` (ints or 1-tuples) as the
    2-D layer's arguments, with a unit height, and ``padding`` (``"causal"``, where the layer
    has it, runs as ``"valid"`` after its own padding)."""
    given = {"kernel_size": kernel_size, "strides": strides, "dilation_rate": dilation_rate}
    geometry = {arg: (1, normalize_single(value, arg, layer)) for arg, value in given.items()}
    pad = padding_1d(padding, layer, causal)
    return {**geometry, "padding": "valid" if pad == "causal" else pad}


def to_2d(inputs: Any, causal_pad: int = 0) -> Any:
    """``(N, L, C)`` as ``(N, 1, L + causal_pad, C)``, the padding before the first step."""
    x = shape_ops.expand_dims(inputs, 1)
    if causal_pad:
        x = shape_ops.pad(x, ((0, 0), (0, 0), (causal_pad, 0), (0, 0)))
    return x


class _UnitHeight:
    """What the 1-D convolutions share: a ``(batch, steps, channels)`` input, the 2-D layer's
    convolution on a unit height (``causal`` padded before the sequence), the 1-D config."""

    _layout = "(batch, steps, channels)"
    kernel_size: tuple[int, ...]
    dilation_rate: tuple[int, ...]
    padding: str

    def _taps(self) -> tuple[int, ...]:
        return self.kernel_size[1:]  # the unit height has no axis in the 1-D kernels

    def _unit_height(self, conv: Callable[..., Any], inputs: Any, kernel: Any) -> Any:
        """``conv(x, kernel, padding)`` of the inputs and the kernel given a unit height."""
        causal = (
            (self.kernel_size[1] - 1) * self.dilation_rate[1] if self.padding == "causal" else 0
        )
        padding = "VALID" if causal or self.padding == "valid" else "SAME"
        y = conv(to_2d(inputs, causal), shape_ops.reshape(kernel, (1, *kernel.shape)), padding)
        return shape_ops.squeeze(y, 1)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = super().get_config()  # type: ignore[misc]  # the 2-D layer's
        for key in ("kernel_size", "strides", "dilation_rate"):
            config[key] = [config[key][1]]  # the (1, k) pair as Keras' 1-D [k]
        return config


class Conv1D(_UnitHeight, Conv2D):
    """1-D convolution (kernel ``(K, Cin / groups, filters)``).

    Args:
        filters: number of output channels.
        kernel_size: an int or a 1-tuple, in steps.
        strides: an int or a 1-tuple; default 1.
        padding: ``"valid"``, ``"same"`` or ``"causal"`` (output step t sees inputs ≤ t).
        dilation_rate: an int or a 1-tuple; default 1.
        groups, activation, use_bias, initializers: as :class:`Conv2D`.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = "channels_last",
        dilation_rate: Any = 1,
        groups: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        super().__init__(
            filters,
            **unit_height(name, kernel_size, strides, padding, dilation_rate),
            data_format=data_format,
            groups=groups,
            activation=activation,
            use_bias=use_bias,
            **kwargs,
        )
        self.padding = padding.lower()  # "causal" too

    def call(self, inputs: Any) -> Any:
        return bias_and_activation(self, self._unit_height(self._convolve, inputs, self.kernel))


class _Depthwise1D(_UnitHeight):
    """The depthwise 1-D layers: the depthwise step on a unit height."""

    depthwise_kernel: Any
    _convolve: Callable[..., Any]

    def _depthwise(self, inputs: Any) -> Any:
        return self._unit_height(self._convolve, inputs, self.depthwise_kernel)


class DepthwiseConv1D(_Depthwise1D, DepthwiseConv2D):
    """Depthwise 1-D convolution (``depthwise_kernel`` of shape ``(K, C, depth_multiplier)``)."""

    def __init__(
        self,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: Any = 1,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        super().__init__(
            **unit_height(name, kernel_size, strides, padding, dilation_rate, causal=False),
            depth_multiplier=depth_multiplier,
            data_format=data_format,
            **kwargs,
        )


class SeparableConv1D(_Depthwise1D, SeparableConv2D):
    """Depthwise-separable 1-D convolution: a depthwise 1-D convolution, then a pointwise one
    (``pointwise_kernel`` of shape ``(1, C·depth_multiplier, filters)``)."""

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        depth_multiplier: int = 1,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        super().__init__(
            filters,
            **unit_height(name, kernel_size, strides, padding, dilation_rate),
            data_format=data_format,
            depth_multiplier=depth_multiplier,
            **kwargs,
        )
        self.padding = padding.lower()  # "causal" too

    def call(self, inputs: Any) -> Any:
        pointwise = shape_ops.reshape(self.pointwise_kernel, (1, *self.pointwise_kernel.shape))
        y = conv_ops.conv2d(shape_ops.expand_dims(self._depthwise(inputs), 1), pointwise)
        return bias_and_activation(self, shape_ops.squeeze(y, 1))


Convolution1D = Conv1D
SeparableConvolution1D = SeparableConv1D
