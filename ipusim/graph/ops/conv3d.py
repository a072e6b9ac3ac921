"""3-D convolution ops on NDHWC activations with DHWIO filters, as TensorFlow lays them out.

``conv3d`` and its two backward ops ``conv3d_backprop_input`` (also ``Conv3DTranspose``'s
forward) and ``conv3d_backprop_filter``, adjoints of one another as the 2-D ops in
:mod:`ipusim.graph.ops.conv`. Padding follows TensorFlow along each of the three axes
(:func:`ipusim.graph.ops._window.window_geometry`). poplin plans them as one convolution with
three field dimensions (``poplin::ConvParams`` takes any number); see
:func:`ipusim.cost.compute.conv3d_problem` for how ipusim's planner sees them.
"""

from __future__ import annotations

from functools import partial

from ipusim.graph.graph import Symbol, TensorLike
from ipusim.graph.ops._conv_family import register_family
from ipusim.graph.ops._window import check_nhwc
from ipusim.graph.ops.conv import (
    _ConvBase,
    _DenseBackpropFilter,
    _DenseBackpropInput,
    _DenseForward,
)
from ipusim.graph.spec import Shape, TensorSpec
from ipusim.kernels import conv3d as k3

_check_5d = partial(check_nhwc, rank=5)  # NDHWC: (op, arg, spec, layout)


class _Conv3DBase(_ConvBase):
    """The 3-D rank of the dense convolution ops: NDHWC activations, DHWIO filters."""

    stem = "conv3d"
    nd = 3
    _acts = "(batch, depth, height, width, channels)"
    _filters = "(depth, height, width, in_channels, out_channels)"
    _filters_said = "the filters "
    _gives = "the forward convolution gives "

    def _check(self, arg: str, spec: TensorSpec, layout: str = "") -> None:
        _check_5d(self.name, arg, spec, layout or self._acts)


# The forward's input gradient is also ``Conv3DTranspose``'s forward.
Conv3D, Conv3DBackpropInput, Conv3DBackpropFilter = register_family(
    "Conv3D",
    _Conv3DBase,
    (_DenseForward, _DenseBackpropInput, _DenseBackpropFilter),
    (k3.conv3d, k3.conv3d_backprop_input, k3.conv3d_backprop_filter),
    (
        "3-D convolution (cross-correlation) of NDHWC ``x`` with DHWIO filters.",
        "Gradient of conv3d w.r.t. its input (a transposed 3-D convolution).",
        "Gradient of conv3d w.r.t. its filters.",
    ),
)


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


def conv3d_backprop_input(
    dy: TensorLike,
    filters: TensorLike,
    input_shape: Shape,
    strides: object = 1,
    padding: str = "VALID",
    dilation_rate: object = 1,
) -> Symbol:
    """Gradient of :func:`conv3d` w.r.t. ``x`` (of shape ``input_shape``; batch may be None)."""
    op = "conv3d_backprop_input"
    return _Conv3DBase._apply(
        op, dy, filters, strides, padding, dilation_rate, input_shape=input_shape
    )


def conv3d_backprop_filter(
    x: TensorLike,
    dy: TensorLike,
    filter_shape: Shape,
    strides: object = 1,
    padding: str = "VALID",
    dilation_rate: object = 1,
) -> Symbol:
    """Gradient of :func:`conv3d` w.r.t. its filters (of shape ``filter_shape``)."""
    op = "conv3d_backprop_filter"
    return _Conv3DBase._apply(op, x, dy, strides, padding, dilation_rate, filter_shape=filter_shape)
