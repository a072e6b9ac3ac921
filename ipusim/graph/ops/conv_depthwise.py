"""Depthwise convolution (``tf.nn.depthwise_conv2d``) and its two backward ops.

Filters ``(Kh, Kw, C, M)``; output channel ``c·M + m`` sees only input channel ``c``. Poplar
expresses it as a grouped convolution of C conv groups with one input channel each (poplin's
``numConvGroups``), so its cost is planned like one (kind ``conv``; see ``ipusim.cost.compute``).
The three ops are adjoints of one another, so every one is differentiable again. The attribute
and shape checks here are shared with :mod:`ipusim.graph.ops.conv_grouped`.
"""

from __future__ import annotations

from typing import cast

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_bytes, register
from ipusim.graph.ops._window import (
    Pair,
    check_nhwc,
    check_same_dtype,
    known_dims,
    known_eq,
    known_hw,
    normalize_padding,
    normalize_pair,
    spatial_geometry,
)
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import depthwise as kd

__all__ = [
    "depthwise_conv2d",
    "depthwise_conv2d_backprop_filter",
    "depthwise_conv2d_backprop_input",
]


def conv_attrs(
    op: str, strides: object, padding: object, dilation_rate: object
) -> tuple[Pair, str, Pair]:
    """``(strides, padding, dilation)`` checked and normalised (pairs, upper-case padding)."""
    return (
        normalize_pair(op, "strides", strides),
        normalize_padding(op, padding),
        normalize_pair(op, "dilation_rate", dilation_rate),
    )


def check_out_hw(op: str, out_hw: Shape, dy: TensorSpec, input_shape: Shape) -> None:
    """Raise unless ``dy``'s spatial size agrees with the forward output size ``out_hw``."""
    if not (known_eq(out_hw[0], dy.shape[1]) and known_eq(out_hw[1], dy.shape[2])):
        raise ConfigurationError(
            f"{op}: dy has spatial size {dy.shape[1:3]} but an input of shape "
            f"{tuple(input_shape)} gives an output of {out_hw}"
        )


def check_shape4(op: str, arg: str, shape: Shape, what: str) -> None:
    """Raise unless ``shape`` has 4 sizes, all known after the batch."""
    if len(shape) != 4 or any(d is None for d in shape[1:]):
        raise ConfigurationError(f"{op}: {arg} must be 4 sizes {what}, received {shape!r}")


# ================================================================================== depthwise
class _Depthwise(Op):
    kind = "conv"

    @staticmethod
    def _flops(out_nhwc: TensorSpec, filter_shape: Shape) -> int:
        n, ho, wo, cm = known_dims(out_nhwc.shape)
        kh, kw = known_dims(filter_shape)[:2]
        return 2 * n * ho * wo * cm * kh * kw

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        read, written = io_bytes(in_specs, out_specs)
        # The forward output and dy (input 0 of the input gradient, input 1 of the filter
        # gradient) have the N·Ho·Wo·C·M shape; each product touches every tap once.
        big = {
            "depthwise_conv2d": out_specs[0],
            "depthwise_conv2d_backprop_input": in_specs[0],
            "depthwise_conv2d_backprop_filter": in_specs[1],
        }[self.name]
        filt = out_specs[0].shape if self.name.endswith("filter") else in_specs[1].shape
        return OpCost(self._flops(big, filt), read, written, "conv")


def _check_depthwise_filters(op: str, channels: int | None, filters: TensorSpec, what: str) -> None:
    check_nhwc(op, "filters", filters, "(height, width, in_channels, depth_multiplier)")
    if not known_eq(channels, filters.shape[2]):
        raise ConfigurationError(
            f"{op}: {what} has {channels} channels but the depthwise filters (Kh, Kw, C, M) = "
            f"{filters.shape} expect {filters.shape[2]}; make them agree"
        )


@register
class DepthwiseConv2D(_Depthwise):
    """Depthwise convolution of NHWC ``x`` with ``(Kh, Kw, C, M)`` filters."""

    name = "depthwise_conv2d"

    def infer(
        self,
        x: TensorSpec,
        filters: TensorSpec,
        *,
        strides: object = (1, 1),
        padding: str = "VALID",
        dilation_rate: object = (1, 1),
    ) -> TensorSpec:
        strides, padding, dilation = conv_attrs(self.name, strides, padding, dilation_rate)
        check_nhwc(self.name, "x", x)
        check_same_dtype(self.name, x, filters)
        _check_depthwise_filters(self.name, x.shape[3], filters, "x")
        (ho, wo), _ = spatial_geometry(
            self.name, x.shape[1:3], filters.shape[:2], strides, padding, dilation
        )
        c, m = known_dims(filters.shape)[2:4]  # filters have known sizes
        return TensorSpec((x.shape[0], ho, wo, c * m), x.dtype)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        filters: Array,
        *,
        strides: object = (1, 1),
        padding: str = "VALID",
        dilation_rate: object = (1, 1),
    ) -> Array:
        strides, padding, dilation = conv_attrs(self.name, strides, padding, dilation_rate)
        out_hw, pads = spatial_geometry(
            self.name, x.shape[1:3], filters.shape[:2], strides, padding, dilation
        )
        return kd.depthwise_conv2d(x, filters, known_hw(out_hw), strides, dilation, pads)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x, filters = node.inputs
        return [
            depthwise_conv2d_backprop_input(dy, filters, x.shape, **node.attrs),
            depthwise_conv2d_backprop_filter(x, dy, filters.shape, **node.attrs),
        ]


@register
class DepthwiseConv2DBackpropInput(_Depthwise):
    """Gradient of depthwise_conv2d w.r.t. its input."""

    name = "depthwise_conv2d_backprop_input"

    def infer(
        self,
        dy: TensorSpec,
        filters: TensorSpec,
        *,
        input_shape: Shape,
        strides: object = (1, 1),
        padding: str = "VALID",
        dilation_rate: object = (1, 1),
    ) -> TensorSpec:
        strides, padding, dilation = conv_attrs(self.name, strides, padding, dilation_rate)
        check_nhwc(self.name, "dy", dy)
        check_same_dtype(self.name, dy, filters)
        check_shape4(self.name, "input_shape", tuple(input_shape), "(batch, height, width, C)")
        _check_depthwise_filters(self.name, input_shape[3], filters, "input_shape")
        c, m = known_dims(filters.shape)[2:4]  # filters have known sizes
        if not known_eq(dy.shape[3], c * m):
            raise ConfigurationError(
                f"{self.name}: dy has {dy.shape[3]} channels, the filters give {c}·{m} = {c * m}"
            )
        out_hw, _ = spatial_geometry(
            self.name, input_shape[1:3], filters.shape[:2], strides, padding, dilation
        )
        check_out_hw(self.name, out_hw, dy, input_shape)
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)

    def forward(
        self,
        ctx: ExecContext,
        dy: Array,
        filters: Array,
        *,
        input_shape: Shape,
        strides: object = (1, 1),
        padding: str = "VALID",
        dilation_rate: object = (1, 1),
    ) -> Array:
        strides, padding, dilation = conv_attrs(self.name, strides, padding, dilation_rate)
        _, pads = spatial_geometry(
            self.name, input_shape[1:3], filters.shape[:2], strides, padding, dilation
        )
        return kd.depthwise_conv2d_backprop_input(
            dy, filters, cast(tuple[int, int, int], tuple(input_shape[1:])), strides, dilation, pads
        )

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        dy, filters = node.inputs
        attrs = {k: v for k, v in node.attrs.items() if k != "input_shape"}
        return [
            depthwise_conv2d(g, filters, **attrs),
            depthwise_conv2d_backprop_filter(g, dy, filters.shape, **attrs),
        ]


@register
class DepthwiseConv2DBackpropFilter(_Depthwise):
    """Gradient of depthwise_conv2d w.r.t. its filters."""

    name = "depthwise_conv2d_backprop_filter"

    def infer(
        self,
        x: TensorSpec,
        dy: TensorSpec,
        *,
        filter_shape: Shape,
        strides: object = (1, 1),
        padding: str = "VALID",
        dilation_rate: object = (1, 1),
    ) -> TensorSpec:
        strides, padding, dilation = conv_attrs(self.name, strides, padding, dilation_rate)
        check_nhwc(self.name, "x", x)
        check_nhwc(self.name, "dy", dy)
        check_same_dtype(self.name, x, dy)
        filter_shape = tuple(filter_shape)
        if len(filter_shape) != 4 or any(d is None for d in filter_shape):
            raise ConfigurationError(
                f"{self.name}: filter_shape must be 4 known sizes (height, width, channels, "
                f"depth_multiplier), received {filter_shape!r}"
            )
        fspec = TensorSpec(filter_shape, x.dtype)
        channels = known_dims(filter_shape)[2] * known_dims(filter_shape)[3]
        _check_depthwise_filters(self.name, x.shape[3], fspec, "x")
        if not known_eq(dy.shape[3], channels):
            raise ConfigurationError(
                f"{self.name}: dy has {dy.shape[3]} channels, filter_shape {filter_shape} "
                f"gives {channels}"
            )
        out_hw, _ = spatial_geometry(
            self.name, x.shape[1:3], filter_shape[:2], strides, padding, dilation
        )
        check_out_hw(self.name, out_hw, dy, x.shape)
        return fspec

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        dy: Array,
        *,
        filter_shape: Shape,
        strides: object = (1, 1),
        padding: str = "VALID",
        dilation_rate: object = (1, 1),
    ) -> Array:
        strides, padding, dilation = conv_attrs(self.name, strides, padding, dilation_rate)
        _, pads = spatial_geometry(
            self.name, x.shape[1:3], filter_shape[:2], strides, padding, dilation
        )
        return kd.depthwise_conv2d_backprop_filter(
            x, dy, cast(tuple[int, int, int, int], tuple(filter_shape)), strides, dilation, pads
        )

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        x, dy = node.inputs
        attrs = {k: v for k, v in node.attrs.items() if k != "filter_shape"}
        return [
            depthwise_conv2d_backprop_input(dy, g, x.shape, **attrs),
            depthwise_conv2d(x, g, **attrs),
        ]


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
    strides, padding, dilation = conv_attrs("depthwise_conv2d", strides, padding, dilation_rate)
    return apply1(
        "depthwise_conv2d", x, filters, strides=strides, padding=padding, dilation_rate=dilation
    )


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
    strides, padding, dilation = conv_attrs(op, strides, padding, dilation_rate)
    return apply1(
        op,
        dy,
        filters,
        input_shape=tuple(input_shape),
        strides=strides,
        padding=padding,
        dilation_rate=dilation,
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
    strides, padding, dilation = conv_attrs(op, strides, padding, dilation_rate)
    return apply1(
        op,
        x,
        dy,
        filter_shape=tuple(filter_shape),
        strides=strides,
        padding=padding,
        dilation_rate=dilation,
    )
