"""3-D convolution ops on NDHWC activations with DHWIO filters, as TensorFlow lays them out.

``conv3d`` and its two backward ops ``conv3d_backprop_input`` (also ``Conv3DTranspose``'s
forward) and ``conv3d_backprop_filter``, adjoints of one another as the 2-D ops in
:mod:`ipusim.graph.ops.conv`. Padding follows TensorFlow along each of the three axes
(:func:`ipusim.graph.ops._window.window_geometry`). poplin plans them as one convolution with
three field dimensions (``poplin::ConvParams`` takes any number); see
:func:`ipusim.cost.compute.conv3d_problem` for how ipusim's planner sees them.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, cast

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.graph import Symbol, TensorLike
from ipusim.graph.op import register
from ipusim.graph.ops._window import check_same_dtype, known_eq, window_geometry
from ipusim.graph.ops.conv import (
    _ConvBackpropFilter,
    _ConvBackpropInput,
    _ConvBase,
    _ConvForward,
)
from ipusim.graph.spec import Shape, TensorSpec
from ipusim.kernels import conv3d as k3

Triple = tuple[int, int, int]
_AXES = ("depth", "height", "width")


def normalize_triple(op: str, arg: str, value: Any) -> Triple:
    """``value`` (an int or 3 ints, each ≥ 1) as a ``(depth, height, width)`` tuple."""
    items = (value,) * 3 if isinstance(value, Integral) else value
    try:
        triple = tuple(items)
    except TypeError:
        triple = ()
    if (
        len(triple) != 3
        or any(isinstance(v, bool) or not isinstance(v, Integral) for v in triple)
        or min(triple) < 1
    ):
        raise ConfigurationError(
            f"{op}: {arg} must be a positive int or 3 of them (depth, height, width), "
            f"received {value!r}"
        )
    return (int(triple[0]), int(triple[1]), int(triple[2]))


def volume_geometry(
    op: str, dhw: Shape, kernel: Shape, strides: Triple, padding: str, dilation: Triple
) -> tuple[Shape, Triple]:
    """``((Do, Ho, Wo), (pad_front, pad_top, pad_left))`` for an input volume ``dhw``."""
    outs, pads = [], []
    sizes = cast(Triple, kernel)  # window sizes are always known
    for size, k, s, d, axis in zip(dhw, sizes, strides, dilation, _AXES, strict=True):
        out, pad = window_geometry(op, size, (k - 1) * d + 1, s, padding, axis)
        outs.append(out)
        pads.append(pad)
    return tuple(outs), (pads[0], pads[1], pads[2])


def _check_5d(op: str, arg: str, spec: TensorSpec, layout: str) -> None:
    if spec.rank != 5:
        raise ConfigurationError(
            f"{op}: {arg} must be a 5-D tensor {layout}, received shape {spec.shape}"
        )
    if spec.dtype not in ("float16", "float32", "float64"):
        raise InvalidTypeError(
            f"{op}: {arg} must be float16, float32 or float64, received {spec.dtype}"
        )


_ACTS = "(batch, depth, height, width, channels)"
_FILTERS = "(depth, height, width, in_channels, out_channels)"


def _check_channels(op: str, what: str, got: int | None, filter_shape: Shape, axis: int) -> None:
    if not known_eq(got, filter_shape[axis]):
        raise ConfigurationError(
            f"{op}: {what} has {got} channels but the filters {tuple(filter_shape)} expect "
            f"{filter_shape[axis]}; make them agree"
        )


def _check_dy(op: str, dy: TensorSpec, out_dhw: Shape) -> None:
    if not all(known_eq(a, b) for a, b in zip(out_dhw, dy.shape[1:4], strict=True)):
        raise ConfigurationError(
            f"{op}: dy has spatial size {dy.shape[1:4]} but the forward convolution gives {out_dhw}"
        )


class _Conv3DBase(_ConvBase):
    """The 3-D rank of the shared convolution ops: NDHWC activations, DHWIO filters."""

    nd = 3
    _normalize = staticmethod(normalize_triple)
    _geometry = staticmethod(volume_geometry)


@register
class Conv3D(_Conv3DBase, _ConvForward):
    """3-D convolution (cross-correlation) of NDHWC ``x`` with DHWIO filters."""

    name = "conv3d"
    kernel = staticmethod(k3.conv3d)

    def infer(
        self,
        x: TensorSpec,
        filters: TensorSpec,
        *,
        strides: Any = 1,
        padding: object = "VALID",
        dilation_rate: object = 1,
    ) -> TensorSpec:
        strides, padding, dilation = self._attrs(self.name, strides, padding, dilation_rate)
        _check_5d(self.name, "x", x, _ACTS)
        _check_5d(self.name, "filters", filters, _FILTERS)
        check_same_dtype(self.name, x, filters)
        _check_channels(self.name, "x", x.shape[4], filters.shape, 3)
        out, _ = volume_geometry(
            self.name, x.shape[1:4], filters.shape[:3], strides, padding, dilation
        )
        return TensorSpec((x.shape[0], *out, filters.shape[4]), x.dtype)


def conv3d(
    x: TensorLike,
    filters: TensorLike,
    strides: object = 1,
    padding: str = "VALID",
    dilation_rate: object = 1,
) -> Symbol:
    """3-D convolution, ``tf.nn.conv3d`` semantics.

    Args:
        x: input ``(batch, depth, height, width, in_channels)``.
        filters: ``(kernel_depth, kernel_height, kernel_width, in_channels, out_channels)``.
        strides, dilation_rate: int or ``(d, h, w)``, in voxels.
        padding: ``"VALID"`` or ``"SAME"`` (case-insensitive).
    """
    return _Conv3DBase._apply("conv3d", x, filters, strides, padding, dilation_rate)


@register
class Conv3DBackpropInput(_Conv3DBase, _ConvBackpropInput):
    """Gradient of conv3d w.r.t. its input (a transposed 3-D convolution)."""

    name = "conv3d_backprop_input"
    kernel = staticmethod(k3.conv3d_backprop_input)

    def infer(
        self,
        dy: TensorSpec,
        filters: TensorSpec,
        *,
        input_shape: Shape,
        strides: Any = 1,
        padding: object = "VALID",
        dilation_rate: object = 1,
    ) -> TensorSpec:
        strides, padding, dilation = self._attrs(self.name, strides, padding, dilation_rate)
        _check_5d(self.name, "dy", dy, _ACTS)
        _check_5d(self.name, "filters", filters, _FILTERS)
        check_same_dtype(self.name, dy, filters)
        if len(input_shape) != 5:
            raise ConfigurationError(
                f"{self.name}: input_shape must have 5 entries {_ACTS}, received {input_shape!r}"
            )
        _check_channels(self.name, "input_shape", input_shape[4], filters.shape, 3)
        _check_channels(self.name, "dy", dy.shape[4], filters.shape, 4)
        out, _ = volume_geometry(
            self.name, input_shape[1:4], filters.shape[:3], strides, padding, dilation
        )
        _check_dy(self.name, dy, out)
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)


def conv3d_backprop_input(
    dy: TensorLike,
    filters: TensorLike,
    input_shape: Shape,
    strides: object = 1,
    padding: str = "VALID",
    dilation_rate: object = 1,
) -> Symbol:
    """Gradient of :func:`conv3d` w.r.t. ``x`` (of shape ``input_shape``; batch may be None)."""
    return _Conv3DBase._apply(
        "conv3d_backprop_input",
        dy,
        filters,
        strides,
        padding,
        dilation_rate,
        input_shape=input_shape,
    )


@register
class Conv3DBackpropFilter(_Conv3DBase, _ConvBackpropFilter):
    """Gradient of conv3d w.r.t. its filters."""

    name = "conv3d_backprop_filter"
    kernel = staticmethod(k3.conv3d_backprop_filter)

    def infer(
        self,
        x: TensorSpec,
        dy: TensorSpec,
        *,
        filter_shape: Shape,
        strides: Any = 1,
        padding: object = "VALID",
        dilation_rate: object = 1,
    ) -> TensorSpec:
        strides, padding, dilation = self._attrs(self.name, strides, padding, dilation_rate)
        _check_5d(self.name, "x", x, _ACTS)
        _check_5d(self.name, "dy", dy, _ACTS)
        check_same_dtype(self.name, x, dy)
        if len(filter_shape) != 5 or any(d is None for d in filter_shape):
            raise ConfigurationError(
                f"{self.name}: filter_shape must be 5 known sizes {_FILTERS}, "
                f"received {filter_shape!r}"
            )
        _check_channels(self.name, "x", x.shape[4], filter_shape, 3)
        _check_channels(self.name, "dy", dy.shape[4], filter_shape, 4)
        out, _ = volume_geometry(
            self.name, x.shape[1:4], filter_shape[:3], strides, padding, dilation
        )
        _check_dy(self.name, dy, out)
        return TensorSpec(tuple(filter_shape), x.dtype)


def conv3d_backprop_filter(
    x: TensorLike,
    dy: TensorLike,
    filter_shape: Shape,
    strides: object = 1,
    padding: str = "VALID",
    dilation_rate: object = 1,
) -> Symbol:
    """Gradient of :func:`conv3d` w.r.t. its filters (of shape ``filter_shape``)."""
    return _Conv3DBase._apply(
        "conv3d_backprop_filter", x, dy, strides, padding, dilation_rate, filter_shape=filter_shape
    )


_FAMILY = (conv3d, conv3d_backprop_input, conv3d_backprop_filter)
for _op in (Conv3D, Conv3DBackpropInput, Conv3DBackpropFilter):
    _op.family = _FAMILY
