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
from ipusim.graph.op import register
from ipusim.graph.ops._conv_family import (
    ConvBackpropFilter,
    ConvBackpropInput,
    ConvFamilyOp,
    ConvForward,
    Placement,
)
from ipusim.graph.ops._window import (
    check_nhwc,
    check_same_dtype,
    known_dims,
    known_eq,
    spatial_geometry,
)
from ipusim.graph.ops.conv_depthwise import (  # the depthwise ops are importable from here
    check_out_hw,
    check_shape4,
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


def _check_positive_groups(op: str, groups: object) -> int:
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ConfigurationError(f"{op}: groups must be a positive int, received {groups!r}")
    return groups


# ==================================================================================== grouped
class _Grouped(ConvFamilyOp):
    stem = "grouped_conv2d"

    @classmethod
    def _extra(cls, op: str, groups: object) -> dict[str, Any]:
        return {"groups": _check_positive_groups(op, groups)}

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


def _check_grouped(op: str, cin: int | None, filt: Shape, groups: int, what: str) -> None:
    kh, kw, cin_g, cout = known_dims(filt)  # filters have known sizes
    if cout % groups:
        raise ConfigurationError(
            f"{op}: the filters' {cout} output channels do not split into groups={groups}; "
            "use a number of filters divisible by groups"
        )
    if cin is not None and cin != cin_g * groups:
        raise ConfigurationError(
            f"{op}: {what} has {cin} channels but filters of shape {filt} with groups={groups} "
            f"expect {cin_g} x {groups} = {cin_g * groups}; make them agree"
        )


@register
class GroupedConv2D(_Grouped, ConvForward):
    """Grouped convolution of NHWC ``x`` with ``(Kh, Kw, Cin/G, Cout)`` filters."""

    name = "grouped_conv2d"
    kernel = staticmethod(kg.grouped_conv2d)

    def infer(
        self, x: TensorSpec, filters: TensorSpec, *, groups: int, **window_attrs: object
    ) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        groups = _check_positive_groups(self.name, groups)
        check_nhwc(self.name, "x", x)
        check_nhwc(self.name, "filters", filters, "(height, width, in_channels/groups, filters)")
        check_same_dtype(self.name, x, filters)
        _check_grouped(self.name, x.shape[3], filters.shape, groups, "x")
        (ho, wo), _ = spatial_geometry(self.name, x.shape[1:3], filters.shape[:2], *window)
        return TensorSpec((x.shape[0], ho, wo, filters.shape[3]), x.dtype)


@register
class GroupedConv2DBackpropInput(_Grouped, ConvBackpropInput):
    """Gradient of grouped_conv2d w.r.t. its input."""

    name = "grouped_conv2d_backprop_input"
    kernel = staticmethod(kg.grouped_conv2d_backprop_input)

    def infer(
        self,
        dy: TensorSpec,
        filters: TensorSpec,
        *,
        input_shape: Shape,
        groups: int,
        **window_attrs: object,
    ) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        groups = _check_positive_groups(self.name, groups)
        check_nhwc(self.name, "dy", dy)
        check_nhwc(self.name, "filters", filters, "(height, width, in_channels/groups, filters)")
        check_same_dtype(self.name, dy, filters)
        check_shape4(self.name, "input_shape", tuple(input_shape), "(batch, height, width, C)")
        _check_grouped(self.name, input_shape[3], filters.shape, groups, "input_shape")
        if not known_eq(dy.shape[3], filters.shape[3]):
            raise ConfigurationError(
                f"{self.name}: dy has {dy.shape[3]} channels, the filters {filters.shape[3]}"
            )
        out_hw, _ = spatial_geometry(self.name, input_shape[1:3], filters.shape[:2], *window)
        check_out_hw(self.name, out_hw, dy, input_shape)
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)


@register
class GroupedConv2DBackpropFilter(_Grouped, ConvBackpropFilter):
    """Gradient of grouped_conv2d w.r.t. its filters."""

    name = "grouped_conv2d_backprop_filter"
    kernel = staticmethod(kg.grouped_conv2d_backprop_filter)

    def infer(
        self,
        x: TensorSpec,
        dy: TensorSpec,
        *,
        filter_shape: Shape,
        groups: int,
        **window_attrs: object,
    ) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        groups = _check_positive_groups(self.name, groups)
        check_nhwc(self.name, "x", x)
        check_nhwc(self.name, "dy", dy)
        check_same_dtype(self.name, x, dy)
        filter_shape = tuple(filter_shape)
        what = "(height, width, in_channels/groups, filters), all known"
        check_shape4(self.name, "filter_shape", filter_shape, what, 0)
        _check_grouped(self.name, x.shape[3], filter_shape, groups, "x")
        if not known_eq(dy.shape[3], filter_shape[3]):
            raise ConfigurationError(
                f"{self.name}: dy has {dy.shape[3]} channels, filter_shape {filter_shape[3]}"
            )
        out_hw, _ = spatial_geometry(self.name, x.shape[1:3], filter_shape[:2], *window)
        check_out_hw(self.name, out_hw, dy, x.shape)
        return TensorSpec(filter_shape, x.dtype)


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
