"""Convolution ops on NHWC activations with HWIO filters, as TensorFlow lays them out.

Padding follows TensorFlow (see :mod:`ipusim.graph.ops._window`).

Ops: ``conv2d`` with its two dedicated backward ops ``conv2d_backprop_input`` and
``conv2d_backprop_filter`` (each differentiable again: the three are adjoints of one another).
The pooling ops live in :mod:`ipusim.graph.ops.pool` and are re-exported here, so importing this
module registers them too and ``conv.max_pool2d`` etc. work.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, TypeAlias

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.numerics import amp_products, computes_half
from ipusim.graph.op import Op, OpCost, Specs, io_bytes, register
from ipusim.graph.ops._window import (
    PADDINGS,
    check_nhwc,
    check_same_dtype,
    known_dims,
    known_eq,
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

#: The AMP unit's product of one GEMM, ``product(a, b, out, accumulate)`` (see
#: :class:`ipusim.kernels.amp.AmpProducts`).
ProductFn: TypeAlias = Callable[[Array, Array, Array, bool], None]

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


def _check_channels(op: str, what: str, got: int | None, filters: TensorSpec, axis: int) -> None:
    if not known_eq(got, filters.shape[axis]):
        raise ConfigurationError(
            f"{op}: {what} has {got} channels but the filters (Kh, Kw, Cin, Cout) = "
            f"{filters.shape} expect {filters.shape[axis]}; make them agree"
        )


# ---------------------------------------------------------------------------------- conv2d
class _ConvBase(Op):
    """What the convolution ops of every rank share (2-D here, 3-D in :mod:`.conv3d`).

    A subclass of a given rank sets ``nd`` and the matching ``_normalize`` / ``_geometry``; each op
    names the kernel it runs; ``family`` holds that rank's public (forward, backprop_input,
    backprop_filter) graph functions, which the gradients build (set once they are defined).
    """

    kind = "conv"
    #: In half precision the GEMMs round their partial sums as the AMP unit does
    #: (:mod:`ipusim.kernels.amp`); the op rounds its own output.
    rounds_half_outputs = True
    #: Spatial dimensions of the activations (NHWC: 2).
    nd = 2
    # Pair-valued here, Triple-valued in the 3-D subclass (``nd`` decides): typed loosely.
    _normalize: ClassVar[Callable[..., tuple[int, ...]]] = staticmethod(normalize_pair)
    _geometry: ClassVar[Callable[..., tuple[Any, tuple[int, ...]]]] = staticmethod(spatial_geometry)
    kernel: ClassVar[Callable[..., Array]]
    #: The op functions of the family: (forward, backprop input, backprop filter).
    family: ClassVar[tuple[Callable[..., Symbol], ...]] = ()

    @staticmethod
    def _half_run(
        ctx: ExecContext, compute: Callable[[ProductFn | None], Array], round_output: bool = False
    ) -> Array:
        """Run ``compute(product)`` with AMP products when the op computes in half precision."""
        if not computes_half(ctx):
            return compute(None)
        products = amp_products(ctx, "conv")
        out = products.finish(compute(products.product))
        if round_output and products.partials == "half":
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

    @classmethod
    def _attrs(
        cls, op: str, strides: object, padding: object, dilation_rate: object
    ) -> tuple[Any, str, Any]:
        """``(strides, padding, dilation)`` normalised: ``nd``-tuples and an upper-case padding."""
        return (
            cls._normalize(op, "strides", strides),
            normalize_padding(op, padding),
            cls._normalize(op, "dilation_rate", dilation_rate),
        )

    @classmethod
    def _apply(
        cls,
        op: str,
        a: TensorLike,
        b: TensorLike,
        strides: object,
        padding: object,
        dilation_rate: object,
        **shape: Shape,
    ) -> Symbol:
        """``op(a, b)`` in the graph with normalised attributes; ``shape`` is the backward ops'
        ``input_shape`` / ``filter_shape`` (stored as a tuple)."""
        strides, padding, dilation = cls._attrs(op, strides, padding, dilation_rate)
        sizes: dict[str, Any] = {name: tuple(size) for name, size in shape.items()}
        return apply1(op, a, b, **sizes, strides=strides, padding=padding, dilation_rate=dilation)

    @staticmethod
    def _flops(y: TensorSpec, filter_shape: Shape) -> int:
        """Forward multiply-adds ×2: output positions (batch and spatial) × filter taps × Cin × Cout."""
        # Costed shapes are known (no None), as the 2-D and 3-D products before assumed.
        return 2 * math.prod(known_dims(y.shape[:-1])) * math.prod(known_dims(filter_shape))

    @classmethod
    def _cost(cls, in_specs: Specs, out_specs: Specs, y: TensorSpec, filter_shape: Shape) -> OpCost:
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(cls._flops(y, filter_shape), read, written, "conv")

    def _run(
        self,
        ctx: ExecContext,
        a: Array,
        b: Array,
        shapes: tuple[Shape, Shape],
        size: Shape | None,
        attrs: tuple[object, object, object],
        round_output: bool = False,
    ) -> Array:
        """Run ``kernel(a, b, size, strides, dilation, pads, product)``.

        ``shapes`` is (the forward input's shape, the filter shape), which give the padding;
        ``size`` is the kernel's size argument, None for the forward output's spatial size.
        """
        strides, padding, dilation = self._attrs(self.name, *attrs)
        nd = self.nd
        out, pads = self._geometry(
            self.name, shapes[0][1 : 1 + nd], shapes[1][:nd], strides, padding, dilation
        )
        size = out if size is None else size
        return self._half_run(
            ctx,
            lambda product: self.kernel(a, b, size, strides, dilation, pads, product),
            round_output=round_output,
        )


class _ConvForward(_ConvBase):
    """The convolution itself: ``(x, filters) -> y``."""

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        filters: Array,
        *,
        strides: object = 1,
        padding: object = "VALID",
        dilation_rate: int = 1,
    ) -> Array:
        attrs = (strides, padding, dilation_rate)
        return self._run(ctx, x, filters, (x.shape, filters.shape), None, attrs)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x, filters = node.inputs
        _, backprop_input, backprop_filter = self.family
        return [
            backprop_input(dy, filters, x.shape, **node.attrs),
            backprop_filter(x, dy, filters.shape, **node.attrs),
        ]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return self._cost(in_specs, out_specs, out_specs[0], in_specs[1].shape)


class _ConvBackpropInput(_ConvBase):
    """Gradient w.r.t. the input: ``(dy, filters) -> dx`` (a transposed convolution)."""

    def forward(
        self,
        ctx: ExecContext,
        dy: Array,
        filters: Array,
        *,
        input_shape: Shape,
        strides: object = 1,
        padding: object = "VALID",
        dilation_rate: object = 1,
    ) -> Array:
        attrs = (strides, padding, dilation_rate)
        shapes = (input_shape, filters.shape)
        size = tuple(input_shape[1:])
        return self._run(ctx, dy, filters, shapes, size, attrs, round_output=True)

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        dy, filters = node.inputs
        attrs = {k: v for k, v in node.attrs.items() if k != "input_shape"}
        conv, _, backprop_filter = self.family
        return [conv(g, filters, **attrs), backprop_filter(g, dy, filters.shape, **attrs)]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return self._cost(in_specs, out_specs, in_specs[0], in_specs[1].shape)


class _ConvBackpropFilter(_ConvBase):
    """Gradient w.r.t. the filters: ``(x, dy) -> dfilters``."""

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        dy: Array,
        *,
        filter_shape: Shape,
        strides: object = 1,
        padding: object = "VALID",
        dilation_rate: object = 1,
    ) -> Array:
        attrs = (strides, padding, dilation_rate)
        size = tuple(filter_shape[: self.nd])
        return self._run(ctx, x, dy, (x.shape, filter_shape), size, attrs)

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        x, dy = node.inputs
        attrs = {k: v for k, v in node.attrs.items() if k != "filter_shape"}
        conv, backprop_input, _ = self.family
        return [backprop_input(dy, g, x.shape, **attrs), conv(x, g, **attrs)]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return self._cost(in_specs, out_specs, in_specs[1], out_specs[0].shape)


@register
class Conv2D(_ConvForward):
    """2-D convolution (cross-correlation, as in TensorFlow) of NHWC ``x`` with HWIO filters."""

    name = "conv2d"
    kernel = staticmethod(kc.conv2d)

    def infer(
        self,
        x: TensorSpec,
        filters: TensorSpec,
        *,
        strides: Any = (1, 1),
        padding: object = "VALID",
        dilation_rate: object = (1, 1),
    ) -> TensorSpec:
        strides, padding, dilation = self._attrs("conv2d", strides, padding, dilation_rate)
        check_nhwc("conv2d", "x", x)
        check_nhwc("conv2d", "filters", filters, "(height, width, in_channels, out_channels)")
        check_same_dtype("conv2d", x, filters)
        _check_channels("conv2d", "x", x.shape[3], filters, 2)
        (ho, wo), _ = spatial_geometry(
            "conv2d", x.shape[1:3], filters.shape[:2], strides, padding, dilation
        )
        return TensorSpec((x.shape[0], ho, wo, filters.shape[3]), x.dtype)


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


@register
class Conv2DBackpropInput(_ConvBackpropInput):
    """Gradient of conv2d w.r.t. its input: ``col2im(dy · W2ᵀ)`` (a transposed convolution)."""

    name = "conv2d_backprop_input"
    kernel = staticmethod(kc.conv2d_backprop_input)

    def infer(
        self,
        dy: TensorSpec,
        filters: TensorSpec,
        *,
        input_shape: Shape,
        strides: Any = (1, 1),
        padding: object = "VALID",
        dilation_rate: object = (1, 1),
    ) -> TensorSpec:
        op = "conv2d_backprop_input"
        strides, padding, dilation = self._attrs(op, strides, padding, dilation_rate)
        check_nhwc(op, "dy", dy)
        check_nhwc(op, "filters", filters, "(height, width, in_channels, out_channels)")
        check_same_dtype(op, dy, filters)
        if len(input_shape) != 4:
            raise ConfigurationError(
                f"{op}: input_shape must have 4 entries (batch, height, width, "
                f"channels), received {input_shape!r}"
            )
        _check_channels(op, "input_shape", input_shape[3], filters, 2)
        _check_channels(op, "dy", dy.shape[3], filters, 3)
        out_hw, _ = spatial_geometry(
            op, input_shape[1:3], filters.shape[:2], strides, padding, dilation
        )
        if not (known_eq(out_hw[0], dy.shape[1]) and known_eq(out_hw[1], dy.shape[2])):
            raise ConfigurationError(
                f"{op}: dy has spatial size {dy.shape[1:3]} but an input of shape "
                f"{tuple(input_shape)} gives a conv2d output of {out_hw}"
            )
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)


def conv2d_backprop_input(
    dy: TensorLike,
    filters: TensorLike,
    input_shape: Shape,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`conv2d` w.r.t. ``x`` (of shape ``input_shape``; batch may be None)."""
    return _ConvBase._apply(
        "conv2d_backprop_input",
        dy,
        filters,
        strides,
        padding,
        dilation_rate,
        input_shape=input_shape,
    )


@register
class Conv2DBackpropFilter(_ConvBackpropFilter):
    """Gradient of conv2d w.r.t. its filters: ``im2col(x)ᵀ · dy``."""

    name = "conv2d_backprop_filter"
    kernel = staticmethod(kc.conv2d_backprop_filter)

    def infer(
        self,
        x: TensorSpec,
        dy: TensorSpec,
        *,
        filter_shape: Shape,
        strides: Any = (1, 1),
        padding: object = "VALID",
        dilation_rate: object = (1, 1),
    ) -> TensorSpec:
        op = "conv2d_backprop_filter"
        strides, padding, dilation = self._attrs(op, strides, padding, dilation_rate)
        check_nhwc(op, "x", x)
        check_nhwc(op, "dy", dy)
        check_same_dtype(op, x, dy)
        if len(filter_shape) != 4 or any(d is None for d in filter_shape):
            raise ConfigurationError(
                f"{op}: filter_shape must be 4 known sizes (height, width, "
                f"in_channels, out_channels), received {filter_shape!r}"
            )
        fspec = TensorSpec(tuple(filter_shape), x.dtype)
        _check_channels(op, "x", x.shape[3], fspec, 2)
        _check_channels(op, "dy", dy.shape[3], fspec, 3)
        out_hw, _ = spatial_geometry(op, x.shape[1:3], filter_shape[:2], strides, padding, dilation)
        if not (known_eq(out_hw[0], dy.shape[1]) and known_eq(out_hw[1], dy.shape[2])):
            raise ConfigurationError(
                f"{op}: dy has spatial size {dy.shape[1:3]} but x of shape "
                f"{x.shape} gives a conv2d output of {out_hw}"
            )
        return fspec


def conv2d_backprop_filter(
    x: TensorLike,
    dy: TensorLike,
    filter_shape: Shape,
    strides: object = (1, 1),
    padding: str = "VALID",
    dilation_rate: object = (1, 1),
) -> Symbol:
    """Gradient of :func:`conv2d` w.r.t. its filters (of shape ``filter_shape``)."""
    return _ConvBase._apply(
        "conv2d_backprop_filter", x, dy, strides, padding, dilation_rate, filter_shape=filter_shape
    )


_FAMILY = (conv2d, conv2d_backprop_input, conv2d_backprop_filter)
for _op in (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter):
    _op.family = _FAMILY
