"""Depthwise convolution (``tf.nn.depthwise_conv2d``) and its two backward ops.

Filters ``(Kh, Kw, C, M)``; output channel ``c·M + m`` sees only input channel ``c``. Poplar
expresses it as a grouped convolution of C conv groups with one input channel each (poplin's
``numConvGroups``), so its cost is planned like one (kind ``conv``; see ``ipusim.cost.compute``).
The three ops are adjoints of one another (:mod:`ipusim.graph.ops._conv_family`), so every one is
differentiable again. The shape checks here are shared with :mod:`ipusim.graph.ops.conv_grouped`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Symbol, TensorLike
from ipusim.graph.ops._conv_family import (
    ConvBackpropFilter,
    ConvBackpropInput,
    ConvFamilyOp,
    ConvForward,
    Window,
    check_channels,
    check_dy,
    register_family,
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


def check_positive_groups(op: str, groups: object) -> int:
    """``groups`` checked: a positive int."""
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ConfigurationError(f"{op}: groups must be a positive int, received {groups!r}")
    return groups


def check_shape4(op: str, arg: str, shape: Shape, what: str, known_from: int = 1) -> None:
    """Raise unless ``shape`` has 4 sizes, all known from index ``known_from`` (after the batch
    of an input shape; all of a filter shape's)."""
    if len(shape) != 4 or any(d is None for d in shape[known_from:]):
        raise ConfigurationError(f"{op}: {arg} must be 4 sizes {what}, received {shape!r}")


class SplitChannelsOp(ConvFamilyOp):
    """What the depthwise and grouped ops share: NHWC activations and 4-D filters whose channels
    split into independent groups. A family sets its filters' ``_layout``, checks them against
    the input's channels (:meth:`_check_filters`) and counts the output channels they give."""

    _layout: ClassVar[str]

    #: Raise unless the filters fit an input of (channels, named what) with (groups).
    _check_filters: Callable[[int | None, Shape, str, int], None]
    #: The output channels the filters give.
    _out_channels: Callable[[Shape], int | None]

    def _window(self, groups: object, window_attrs: dict[str, object]) -> tuple[int, Window]:
        return check_positive_groups(self.name, groups), self._attrs(self.name, **window_attrs)

    def _check_pair(self, a: str, spec: TensorSpec, b: str, other: TensorSpec) -> None:
        """Raise unless the operands ``a`` and ``b`` (``"filters"`` or an activation) are float
        tensors of their layouts and one dtype."""
        check_nhwc(self.name, a, spec)
        if b == "filters":
            check_nhwc(self.name, b, other, self._layout)
        else:
            check_nhwc(self.name, b, other)
        check_same_dtype(self.name, spec, other)

    def _check_dy(
        self, dy: TensorSpec, filters: Shape, input_shape: Shape, window: Window, source: str
    ) -> None:
        """Raise unless ``dy`` has the channels ``filters`` give and the forward output's size."""
        channels = self._out_channels(filters)
        if not known_eq(dy.shape[3], channels):
            raise ConfigurationError(
                f"{self.name}: dy has {dy.shape[3]} channels, {source} {tuple(filters)} give "
                f"{channels}"
            )
        out_hw, _ = spatial_geometry(self.name, input_shape[1:3], filters[:2], *window)
        given = f"an input of shape {tuple(input_shape)} gives an output of "
        check_dy(self.name, dy, out_hw, given)


class SplitForward(SplitChannelsOp, ConvForward):
    def infer(
        self, x: TensorSpec, filters: TensorSpec, *, groups: int = 1, **window_attrs: object
    ) -> TensorSpec:
        groups, window = self._window(groups, window_attrs)
        self._check_pair("x", x, "filters", filters)
        self._check_filters(x.shape[3], filters.shape, "x", groups)
        (ho, wo), _ = spatial_geometry(self.name, x.shape[1:3], filters.shape[:2], *window)
        return TensorSpec((x.shape[0], ho, wo, self._out_channels(filters.shape)), x.dtype)


class SplitBackpropInput(SplitChannelsOp, ConvBackpropInput):
    def infer(
        self,
        dy: TensorSpec,
        filters: TensorSpec,
        *,
        input_shape: Shape,
        groups: int = 1,
        **window_attrs: object,
    ) -> TensorSpec:
        groups, window = self._window(groups, window_attrs)
        self._check_pair("dy", dy, "filters", filters)
        check_shape4(self.name, "input_shape", tuple(input_shape), "(batch, height, width, C)")
        self._check_filters(input_shape[3], filters.shape, "input_shape", groups)
        self._check_dy(dy, filters.shape, input_shape, window, "the filters")
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)


class SplitBackpropFilter(SplitChannelsOp, ConvBackpropFilter):
    def infer(
        self,
        x: TensorSpec,
        dy: TensorSpec,
        *,
        filter_shape: Shape,
        groups: int = 1,
        **window_attrs: object,
    ) -> TensorSpec:
        groups, window = self._window(groups, window_attrs)
        self._check_pair("x", x, "dy", dy)
        filter_shape = tuple(filter_shape)
        check_shape4(self.name, "filter_shape", filter_shape, f"{self._layout}, all known", 0)
        self._check_filters(x.shape[3], filter_shape, "x", groups)
        self._check_dy(dy, filter_shape, x.shape, window, "filter_shape")
        return TensorSpec(filter_shape, x.dtype)


# ================================================================================== depthwise
class _Depthwise(SplitChannelsOp):
    stem = "depthwise_conv2d"
    _layout = "(height, width, in_channels, depth_multiplier)"

    def _check_filters(self, channels: int | None, filters: Shape, what: str, groups: int) -> None:
        said = "the depthwise filters (Kh, Kw, C, M) = "
        check_channels(self.name, what, channels, said, filters, 2)

    def _out_channels(self, filters: Shape) -> int:
        c, m = known_dims(filters)[2:4]  # filters have known sizes
        return c * m

    def _flops(self, big: TensorSpec, filter_shape: Shape) -> int:
        # The forward output and dy have the N·Ho·Wo·C·M shape; each product touches every tap once.
        n, ho, wo, cm = known_dims(big.shape)
        kh, kw = known_dims(filter_shape)[:2]
        return 2 * n * ho * wo * cm * kh * kw

    def _filter_size(self, filter_shape: Shape) -> Shape:
        return tuple(filter_shape)  # the filter gradient's kernel takes the whole (Kh, Kw, C, M)


DepthwiseConv2D, DepthwiseConv2DBackpropInput, DepthwiseConv2DBackpropFilter = register_family(
    "DepthwiseConv2D",
    _Depthwise,
    (SplitForward, SplitBackpropInput, SplitBackpropFilter),
    (kd.depthwise_conv2d, kd.depthwise_conv2d_backprop_input, kd.depthwise_conv2d_backprop_filter),
    (
        "Depthwise convolution of NHWC ``x`` with ``(Kh, Kw, C, M)`` filters.",
        "Gradient of depthwise_conv2d w.r.t. its input.",
        "Gradient of depthwise_conv2d w.r.t. its filters.",
    ),
)


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
