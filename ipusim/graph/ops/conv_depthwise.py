"""Depthwise convolution (``tf.nn.depthwise_conv2d``) and its two backward ops.

Filters ``(Kh, Kw, C, M)``; output channel ``c·M + m`` sees only input channel ``c``. Poplar
expresses it as a grouped convolution of C conv groups with one input channel each (poplin's
``numConvGroups``), so its cost is planned like one (kind ``conv``; see ``ipusim.cost.compute``).
The three ops are adjoints of one another (:mod:`ipusim.graph.ops._conv_family`), so every one is
differentiable again. The shape checks here are shared with :mod:`ipusim.graph.ops.conv_grouped`.
"""

from __future__ import annotations

from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Symbol, TensorLike
from ipusim.graph.op import register
from ipusim.graph.ops._conv_family import (
    ConvBackpropFilter,
    ConvBackpropInput,
    ConvFamilyOp,
    ConvForward,
    check_channels,
    check_dy,
)
from ipusim.graph.ops._window import (
    check_nhwc,
    check_same_dtype,
    known_dims,
    known_eq,
    spatial_geometry,
)
from ipusim.graph.spec import Shape, TensorSpec
from ipusim.kernels import depthwise as kd

__all__ = [
    "depthwise_conv2d",
    "depthwise_conv2d_backprop_filter",
    "depthwise_conv2d_backprop_input",
]


def check_out_hw(op: str, out_hw: Shape, dy: TensorSpec, input_shape: Shape) -> None:
    """Raise unless ``dy``'s spatial size agrees with the forward output size ``out_hw``."""
    check_dy(op, dy, out_hw, f"an input of shape {tuple(input_shape)} gives an output of ")


def check_shape4(op: str, arg: str, shape: Shape, what: str, known_from: int = 1) -> None:
    """Raise unless ``shape`` has 4 sizes, all known from index ``known_from`` (after the batch
    of an input shape; all of a filter shape's)."""
    if len(shape) != 4 or any(d is None for d in shape[known_from:]):
        raise ConfigurationError(f"{op}: {arg} must be 4 sizes {what}, received {shape!r}")


# ================================================================================== depthwise
class _Depthwise(ConvFamilyOp):
    stem = "depthwise_conv2d"

    def _flops(self, big: TensorSpec, filter_shape: Shape) -> int:
        # The forward output and dy have the N·Ho·Wo·C·M shape; each product touches every tap once.
        n, ho, wo, cm = known_dims(big.shape)
        kh, kw = known_dims(filter_shape)[:2]
        return 2 * n * ho * wo * cm * kh * kw


def _check_depthwise_filters(op: str, channels: int | None, filters: TensorSpec, what: str) -> None:
    check_nhwc(op, "filters", filters, "(height, width, in_channels, depth_multiplier)")
    said = "the depthwise filters (Kh, Kw, C, M) = "
    check_channels(op, what, channels, said, filters.shape, 2)


@register
class DepthwiseConv2D(_Depthwise, ConvForward):
    """Depthwise convolution of NHWC ``x`` with ``(Kh, Kw, C, M)`` filters."""

    name = "depthwise_conv2d"
    kernel = staticmethod(kd.depthwise_conv2d)

    def infer(self, x: TensorSpec, filters: TensorSpec, **window_attrs: object) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        check_nhwc(self.name, "x", x)
        check_same_dtype(self.name, x, filters)
        _check_depthwise_filters(self.name, x.shape[3], filters, "x")
        (ho, wo), _ = spatial_geometry(self.name, x.shape[1:3], filters.shape[:2], *window)
        c, m = known_dims(filters.shape)[2:4]  # filters have known sizes
        return TensorSpec((x.shape[0], ho, wo, c * m), x.dtype)


@register
class DepthwiseConv2DBackpropInput(_Depthwise, ConvBackpropInput):
    """Gradient of depthwise_conv2d w.r.t. its input."""

    name = "depthwise_conv2d_backprop_input"
    kernel = staticmethod(kd.depthwise_conv2d_backprop_input)

    def infer(
        self, dy: TensorSpec, filters: TensorSpec, *, input_shape: Shape, **window_attrs: object
    ) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        check_nhwc(self.name, "dy", dy)
        check_same_dtype(self.name, dy, filters)
        check_shape4(self.name, "input_shape", tuple(input_shape), "(batch, height, width, C)")
        _check_depthwise_filters(self.name, input_shape[3], filters, "input_shape")
        c, m = known_dims(filters.shape)[2:4]  # filters have known sizes
        if not known_eq(dy.shape[3], c * m):
            raise ConfigurationError(
                f"{self.name}: dy has {dy.shape[3]} channels, the filters give {c}·{m} = {c * m}"
            )
        out_hw, _ = spatial_geometry(self.name, input_shape[1:3], filters.shape[:2], *window)
        check_out_hw(self.name, out_hw, dy, input_shape)
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)


@register
class DepthwiseConv2DBackpropFilter(_Depthwise, ConvBackpropFilter):
    """Gradient of depthwise_conv2d w.r.t. its filters."""

    name = "depthwise_conv2d_backprop_filter"
    kernel = staticmethod(kd.depthwise_conv2d_backprop_filter)

    def _filter_size(self, filter_shape: Shape) -> Shape:
        return tuple(filter_shape)  # the kernel takes the whole (Kh, Kw, C, M)

    def infer(
        self, x: TensorSpec, dy: TensorSpec, *, filter_shape: Shape, **window_attrs: object
    ) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        check_nhwc(self.name, "x", x)
        check_nhwc(self.name, "dy", dy)
        check_same_dtype(self.name, x, dy)
        filter_shape = tuple(filter_shape)
        what = "(height, width, channels, depth_multiplier), all known"
        check_shape4(self.name, "filter_shape", filter_shape, what, 0)
        fspec = TensorSpec(filter_shape, x.dtype)
        channels = known_dims(filter_shape)[2] * known_dims(filter_shape)[3]
        _check_depthwise_filters(self.name, x.shape[3], fspec, "x")
        if not known_eq(dy.shape[3], channels):
            raise ConfigurationError(
                f"{self.name}: dy has {dy.shape[3]} channels, filter_shape {filter_shape} "
                f"gives {channels}"
            )
        out_hw, _ = spatial_geometry(self.name, x.shape[1:3], filter_shape[:2], *window)
        check_out_hw(self.name, out_hw, dy, x.shape)
        return fspec


def depthwise_conv2d(
    x: TensorLike,
    filters: TensorLike,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Depthwise 2-D convolution, ``tf.nn.depthwise_conv2d`` semantics.

    Args:
        x: input ``(batch, height, width, channels)``.
        filters: ``(kernel_height, kernel_width, channels, depth_multiplier)``.
        strides: int or ``(sh, sw)``, in pixels.
        padding: ``"VALID"`` or ``"SAME"`` (case-insensitive).
        dilation_rate: int or ``(dh, dw)``.

    Returns:
        ``(batch, out_height, out_width, channels * depth_multiplier)``.
    """
    return _Depthwise._apply("depthwise_conv2d", x, filters, strides, padding, dilation_rate)


def depthwise_conv2d_backprop_input(
    dy: TensorLike,
    filters: TensorLike,
    input_shape: Shape,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`depthwise_conv2d` w.r.t. ``x`` (of shape ``input_shape``)."""
    op = "depthwise_conv2d_backprop_input"
    return _Depthwise._apply(
        op, dy, filters, strides, padding, dilation_rate, input_shape=input_shape
    )


def depthwise_conv2d_backprop_filter(
    x: TensorLike,
    dy: TensorLike,
    filter_shape: Shape,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`depthwise_conv2d` w.r.t. its filters (of shape ``filter_shape``)."""
    op = "depthwise_conv2d_backprop_filter"
    return _Depthwise._apply(op, x, dy, strides, padding, dilation_rate, filter_shape=filter_shape)
