"""Convolutions whose channels split into independent groups: depthwise and grouped.

- ``depthwise_conv2d(x, filters)``: ``tf.nn.depthwise_conv2d``. Filters ``(Kh, Kw, C, M)``; output
  channel ``c·M + m`` sees only input channel ``c``. Poplar expresses it as a grouped convolution
  of C conv groups with one input channel each (poplin's ``numConvGroups``), so its cost is
  planned like one (kind ``conv``; see ``ipusim.cost.compute``).
- ``grouped_conv2d(x, filters, groups=G)``: ``Conv2D(groups=G)``. Filters ``(Kh, Kw, Cin/G, Cout)``;
  G ordinary convolutions side by side (kind ``conv``, planned with G conv groups).

The depthwise ops live in :mod:`ipusim.graph.ops.conv_depthwise` and are importable from here.
Each has two backward ops (input and filter gradients); the three ops of a family are adjoints of
one another (:mod:`ipusim.graph.ops._conv_family`), so every one is differentiable again, as for
``conv2d``.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Symbol, TensorLike
from ipusim.graph.ops._conv_family import Placement, register_family
from ipusim.graph.ops._window import known_dims
from ipusim.graph.ops.conv_depthwise import (  # the depthwise ops are importable from here
    SplitBackpropFilter,
    SplitBackpropInput,
    SplitChannelsOp,
    SplitForward,
    check_positive_groups,
    depthwise_conv2d,
    depthwise_conv2d_backprop_filter,
    depthwise_conv2d_backprop_input,
)
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import grouped_conv as kg

__all__ = [
    "depthwise_conv2d",
    "depthwise_conv2d_backprop_filter",
    "depthwise_conv2d_backprop_input",
    "grouped_conv2d",
    "grouped_conv2d_backprop_filter",
    "grouped_conv2d_backprop_input",
]


# ==================================================================================== grouped
class _Grouped(SplitChannelsOp):
    stem = "grouped_conv2d"
    _layout = "(height, width, in_channels/groups, filters)"

    @classmethod
    def _extra(cls, op: str, groups: object) -> dict[str, Any]:
        return {"groups": check_positive_groups(op, groups)}

    def _check_filters(self, channels: int | None, filters: Shape, what: str, groups: int) -> None:
        kh, kw, cin_g, cout = known_dims(filters)  # filters have known sizes
        if cout % groups:
            raise ConfigurationError(
                f"{self.name}: the filters' {cout} output channels do not split into "
                f"groups={groups}; use a number of filters divisible by groups"
            )
        if channels is not None and channels != cin_g * groups:
            raise ConfigurationError(
                f"{self.name}: {what} has {channels} channels but filters of shape {filters} "
                f"with groups={groups} expect {cin_g} x {groups} = {cin_g * groups}; make them "
                "agree"
            )

    def _out_channels(self, filters: Shape) -> int | None:
        return filters[3]

    def _kernel(
        self,
        ctx: ExecContext,
        a: Array,
        b: Array,
        groups: int,
        size: Shape,
        placement: Placement,
    ) -> Array:
        return self.kernel(a, b, groups, size, *placement)

    def _flops(self, big: TensorSpec, filter_shape: Shape) -> int:
        # Every output element of the forward (= every dy element) takes Kh·Kw·Cin/G taps.
        kh, kw, cin_per_group, _ = known_dims(filter_shape)
        return 2 * big.size * kh * kw * cin_per_group


GroupedConv2D, GroupedConv2DBackpropInput, GroupedConv2DBackpropFilter = register_family(
    "GroupedConv2D",
    _Grouped,
    (SplitForward, SplitBackpropInput, SplitBackpropFilter),
    (kg.grouped_conv2d, kg.grouped_conv2d_backprop_input, kg.grouped_conv2d_backprop_filter),
    (
        "Grouped convolution of NHWC ``x`` with ``(Kh, Kw, Cin/G, Cout)`` filters.",
        "Gradient of grouped_conv2d w.r.t. its input.",
        "Gradient of grouped_conv2d w.r.t. its filters.",
    ),
)


def grouped_conv2d(
    x: TensorLike,
    filters: TensorLike,
    groups: int,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Grouped 2-D convolution (``Conv2D(groups=...)``).

    Args:
        x: input ``(batch, height, width, in_channels)``.
        filters: ``(kernel_height, kernel_width, in_channels / groups, out_channels)``.
        groups: number of channel groups; divides both channel counts.
        strides, padding, dilation_rate: as :func:`ipusim.graph.ops.conv.conv2d`.
    """
    return _Grouped._apply("grouped_conv2d", x, filters, strides, padding, dilation_rate, groups)


def grouped_conv2d_backprop_input(
    dy: TensorLike,
    filters: TensorLike,
    input_shape: Shape,
    groups: int,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`grouped_conv2d` w.r.t. ``x`` (of shape ``input_shape``)."""
    op = "grouped_conv2d_backprop_input"
    window = (strides, padding, dilation_rate)
    return _Grouped._apply(op, dy, filters, *window, groups, input_shape=input_shape)


def grouped_conv2d_backprop_filter(
    x: TensorLike,
    dy: TensorLike,
    filter_shape: Shape,
    groups: int,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`grouped_conv2d` w.r.t. its filters (of shape ``filter_shape``)."""
    op = "grouped_conv2d_backprop_filter"
    window = (strides, padding, dilation_rate)
    return _Grouped._apply(op, x, dy, *window, groups, filter_shape=filter_shape)
