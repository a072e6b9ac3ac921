"""Convolution ops on NHWC activations with HWIO filters, as TensorFlow lays them out.

Padding follows TensorFlow (see :mod:`ipusim.graph.ops._window`).

Ops: ``conv2d`` with its two dedicated backward ops ``conv2d_backprop_input`` and
``conv2d_backprop_filter`` (each differentiable again: the three are adjoints of one another, see
:mod:`ipusim.graph.ops._conv_family`). The pooling ops live in :mod:`ipusim.graph.ops.pool` and
are re-exported here, so importing this module registers them too and ``conv.max_pool2d`` etc. work.
"""

from __future__ import annotations

import math
from typing import ClassVar

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Symbol, TensorLike
from ipusim.graph.numerics import amp_products, computes_half
from ipusim.graph.ops._conv_family import (
    ConvBackpropFilter,
    ConvBackpropInput,
    ConvFamilyOp,
    ConvForward,
    Placement,
    Window,
    check_channels,
    check_dy,
    register_family,
)
from ipusim.graph.ops._window import (
    PADDINGS,
    check_nhwc,
    check_same_dtype,
    known_dims,
    normalize_padding,
    normalize_pair,
    spatial_geometry,
    window_geometry,
)
from ipusim.graph.ops.pool import (
    avg_pool2d,
    avg_pool2d_grad,
    global_avg_pool2d,
    global_avg_pool2d_grad,
    max_pool2d,
    max_pool2d_grad,
)
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import conv as kc
from ipusim.kernels.half import round_to_half

__all__ = [
    "PADDINGS",
    "avg_pool2d",
    "avg_pool2d_grad",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "global_avg_pool2d",
    "global_avg_pool2d_grad",
    "max_pool2d",
    "max_pool2d_grad",
    "normalize_pair",
    "normalize_padding",
    "window_geometry",
]


# ---------------------------------------------------------------------------------- conv2d
class _ConvBase(ConvFamilyOp):
    """What the dense convolution ops of every rank share (2-D here, 3-D in :mod:`.conv3d`).

    A subclass of another rank sets ``nd`` and the layouts and
    wording of its checks below.
    """

    stem = "conv2d"
    #: In half precision the GEMMs round their partial sums as the AMP unit does
    #: (:mod:`ipusim.kernels.amp`); the op rounds its own output.
    rounds_half_outputs = True
    _acts: ClassVar[str] = "(batch, height, width, channels)"
    _filters: ClassVar[str] = "(height, width, in_channels, out_channels)"
    #: The filters in the channel-mismatch message, before their shape.
    _filters_said: ClassVar[str] = "the filters (Kh, Kw, Cin, Cout) = "
    #: The dy-size-mismatch message before the forward output size (``src`` names the input).
    _gives: ClassVar[str] = "{src} of shape {shape} gives a conv2d output of "

    def _kernel(
        self,
        ctx: ExecContext,
        a: Array,
        b: Array,
        groups: int,
        size: Shape,
        placement: Placement,
    ) -> Array:
        """Run ``kernel(a, b, size, strides, dilation, pads, product)``, with the AMP unit's
        products (:class:`ipusim.kernels.amp.AmpProducts`) when the op computes in half
        precision; the input gradient's col2im sum rounds its output."""
        if not computes_half(ctx):
            return self.kernel(a, b, size, *placement, None)
        products = amp_products(ctx, "conv")
        out = products.finish(self.kernel(a, b, size, *placement, products.product))
        if isinstance(self, ConvBackpropInput) and products.partials == "half":
            # The col2im sum over kernel taps (float32) follows the half-partials GEMMs.
            out, count = round_to_half(
                out,
                stochastic=products.stochastic,
                key=products.key ^ 0x5851F42D4C957F2D,
                nan_on_overflow=products.nan_on_overflow,
                out=out,
            )
            products.overflows += count
        ctx.overflows = products.overflows
        return out

    def _flops(self, big: TensorSpec, filter_shape: Shape) -> int:
        """Forward multiply-adds ×2: output positions (batch and spatial) × filter taps × Cin × Cout."""
        # Costed shapes are known (no None), as the 2-D and 3-D products before assumed.
        return 2 * math.prod(known_dims(big.shape[:-1])) * math.prod(known_dims(filter_shape))

    def _check(self, arg: str, spec: TensorSpec, layout: str = "") -> None:
        """Raise unless ``spec`` is a float tensor of rank ``nd + 2`` (``layout``: activations)."""
        check_nhwc(self.name, arg, spec, layout or self._acts)

    def _channels(self, what: str, got: int | None, filter_shape: Shape, axis: int) -> None:
        check_channels(self.name, what, got, self._filters_said, filter_shape, axis)

    def _out(self, x_shape: Shape, filter_shape: Shape, window: Window) -> Shape:
        """The forward output's spatial size for an input of ``x_shape``."""
        nd = self.nd
        out, _ = spatial_geometry(self.name, x_shape[1 : 1 + nd], filter_shape[:nd], *window)
        return tuple(out)


class _DenseForward(_ConvBase, ConvForward):
    def infer(self, x: TensorSpec, filters: TensorSpec, **window_attrs: object) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        nd = self.nd
        self._check("x", x)
        self._check("filters", filters, self._filters)
        check_same_dtype(self.name, x, filters)
        self._channels("x", x.shape[nd + 1], filters.shape, nd)
        out = self._out(x.shape, filters.shape, window)
        return TensorSpec((x.shape[0], *out, filters.shape[nd + 1]), x.dtype)


class _DenseBackpropInput(_ConvBase, ConvBackpropInput):
    def infer(
        self, dy: TensorSpec, filters: TensorSpec, *, input_shape: Shape, **window_attrs: object
    ) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        nd = self.nd
        self._check("dy", dy)
        self._check("filters", filters, self._filters)
        check_same_dtype(self.name, dy, filters)
        if len(input_shape) != nd + 2:
            raise ConfigurationError(
                f"{self.name}: input_shape must have {nd + 2} entries {self._acts}, "
                f"received {input_shape!r}"
            )
        self._channels("input_shape", input_shape[nd + 1], filters.shape, nd)
        self._channels("dy", dy.shape[nd + 1], filters.shape, nd + 1)
        out = self._out(input_shape, filters.shape, window)
        check_dy(self.name, dy, out, self._gives.format(src="an input", shape=tuple(input_shape)))
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)


class _DenseBackpropFilter(_ConvBase, ConvBackpropFilter):
    def infer(
        self, x: TensorSpec, dy: TensorSpec, *, filter_shape: Shape, **window_attrs: object
    ) -> TensorSpec:
        window = self._attrs(self.name, **window_attrs)
        nd = self.nd
        self._check("x", x)
        self._check("dy", dy)
        check_same_dtype(self.name, x, dy)
        if len(filter_shape) != nd + 2 or any(d is None for d in filter_shape):
            raise ConfigurationError(
                f"{self.name}: filter_shape must be {nd + 2} known sizes {self._filters}, "
                f"received {filter_shape!r}"
            )
        fspec = TensorSpec(tuple(filter_shape), x.dtype)
        self._channels("x", x.shape[nd + 1], fspec.shape, nd)
        self._channels("dy", dy.shape[nd + 1], fspec.shape, nd + 1)
        out = self._out(x.shape, filter_shape, window)
        check_dy(self.name, dy, out, self._gives.format(src="x", shape=x.shape))
        return fspec


Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter = register_family(
    "Conv2D",
    None,
    (_DenseForward, _DenseBackpropInput, _DenseBackpropFilter),
    (kc.conv2d, kc.conv2d_backprop_input, kc.conv2d_backprop_filter),
    (
        "2-D convolution (cross-correlation, as in TensorFlow) of NHWC ``x`` with HWIO filters.",
        "Gradient of conv2d w.r.t. its input: ``col2im(dy · W2ᵀ)`` (a transposed convolution).",
        "Gradient of conv2d w.r.t. its filters: ``im2col(x)ᵀ · dy``.",
    ),
)


def conv2d(
    x: TensorLike,
    filters: TensorLike,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """2-D convolution, ``tf.nn.conv2d`` semantics.

    Args:
        x: input ``(batch, height, width, in_channels)``.
        filters: ``(kernel_height, kernel_width, in_channels, out_channels)``.
        strides: int or ``(sh, sw)``, in pixels.
        padding: ``"VALID"`` or ``"SAME"`` (case-insensitive).
        dilation_rate: int or ``(dh, dw)``; 1 is an ordinary convolution.

    Returns:
        ``(batch, out_height, out_width, out_channels)``.
    """
    return _ConvBase._apply("conv2d", x, filters, strides, padding, dilation_rate)


def conv2d_backprop_input(
    dy: TensorLike,
    filters: TensorLike,
    input_shape: Shape,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`conv2d` w.r.t. ``x`` (of shape ``input_shape``; batch may be None)."""
    op = "conv2d_backprop_input"
    return _ConvBase._apply(
        op, dy, filters, strides, padding, dilation_rate, input_shape=input_shape
    )


def conv2d_backprop_filter(
    x: TensorLike,
    dy: TensorLike,
    filter_shape: Shape,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`conv2d` w.r.t. its filters (of shape ``filter_shape``)."""
    op = "conv2d_backprop_filter"
    return _ConvBase._apply(op, x, dy, strides, padding, dilation_rate, filter_shape=filter_shape)
