"""Pooling ops on NHWC tensors: max, average and global average pooling, each with a gradient op.

Windows follow TensorFlow's padding rules (see :mod:`ipusim.graph.ops._window`). Padding never
contributes: max pooling ignores it and average pooling divides by the number of real pixels in each
window, as TensorFlow does. ``max_pool2d_grad`` routes each gradient to the first maximum of its
window in row-major order, TensorFlow's tie rule. ``strides`` default to ``pool_size`` as in Keras.
:class:`PoolOp` and its forward and average-gradient forms also serve the 3-D ops
(:mod:`ipusim.graph.ops.pool3d`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.ops._window import (
    check_nhwc,
    check_same_dtype,
    known_eq,
    known_hw,
    normalize_padding,
    normalize_window,
    spatial_geometry,
)
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import pool as kp

#: The activations' layout for each number of pooled (spatial) axes, for error messages.
LAYOUTS = {2: "(batch, height, width, channels)", 3: "(batch, depth, height, width, channels)"}

Window = tuple[int, ...]


def pool_attrs(
    op: str,
    pool_size: object,
    strides: object,
    padding: object,
    rank: int = 2,
) -> dict[str, Any]:
    """A pooling op's attributes: ``pool_size``, ``strides`` (default: the pool size) and
    ``padding``, checked; the windows have ``rank`` sizes (a pair, or a triple in 3-D)."""
    pool = normalize_window(op, "pool_size", pool_size, rank)
    return {
        "pool_size": pool,
        "strides": pool if strides is None else normalize_window(op, "strides", strides, rank),
        "padding": normalize_padding(op, padding),
    }


class PoolOp(Op):
    """What every pooling op shares: attributes, window geometry, the check of ``dy`` and the
    cost (one step per window tap per pooled element), for the 2-D (NHWC) ops and, with ``rank``
    3, the 3-D ops (:mod:`ipusim.graph.ops.pool3d`)."""

    kind = "reduction"
    #: Number of pooled (spatial) axes.
    rank: ClassVar[int] = 2
    #: How errors name the shape ``dy`` must have.
    pooled: ClassVar[str] = "the pooled shape"

    def _check_x(self, x: TensorSpec) -> None:
        check_nhwc(self.name, "x", x, LAYOUTS[self.rank], self.rank + 2)

    def _geometry(
        self, size: Shape, pool_size: object, strides: object = None, padding: object = "VALID"
    ) -> tuple[tuple[int | None, ...], Window, Window, Window]:
        """Output size, window, strides and padding for an input of spatial size ``size`` (the
        window attributes, with their defaults: ``**window`` in the ops' methods)."""
        a = pool_attrs(self.name, pool_size, strides, padding, self.rank)
        out, pads = spatial_geometry(self.name, size, a["pool_size"], a["strides"], a["padding"])
        return out, a["pool_size"], a["strides"], pads

    def _out_spec(self, x: TensorSpec, **window: object) -> TensorSpec:
        self._check_x(x)
        out, _, _, _ = self._geometry(x.shape[1:-1], **window)
        return TensorSpec((x.shape[0], *out, x.shape[-1]), x.dtype)

    def _check_dy(self, dy: TensorSpec, expected: TensorSpec) -> None:
        if not dy.is_compatible_with(expected):
            raise ConfigurationError(
                f"{self.name}: dy must have {self.pooled} {expected.shape}, received {dy.shape}"
            )

    def cost(
        self, in_specs: Specs, out_specs: Specs, *, pool_size: object, **attrs: object
    ) -> OpCost:
        # The pooled element count: the output of a forward op, dy (the last input) of a gradient.
        per = out_specs[0] if isinstance(self, PoolForward) else in_specs[-1]
        pool = normalize_window(self.name, "pool_size", pool_size, self.rank)
        return io_cost(per.size * math.prod(pool), in_specs, out_specs, self.kind)


class PoolForward(PoolOp):
    """A pooling forward op: the window geometry feeds ``kernel_fn(x, out, pool, strides, pads)``;
    an average pool's gradient is the op named ``<name>_grad``."""

    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, x: TensorSpec, **window: object) -> TensorSpec:
        return self._out_spec(x, **window)

    def forward(self, ctx: ExecContext, x: Array, **window: object) -> Array:
        return self.kernel_fn(x, *self._geometry(x.shape[1:-1], **window))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        grad = f"{self.name}_grad"
        return [apply1(grad, dy, input_shape=node.inputs[0].shape, **node.attrs)]


class AvgPoolGrad(PoolOp):
    """Gradient of an average pool: each ``dy / count`` spread over the real elements of its
    window, by ``kernel_fn(dy, input_size, pool, strides, pads)``."""

    kind = "data_movement"
    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, dy: TensorSpec, *, input_shape: Shape, **window: object) -> TensorSpec:
        if len(input_shape) != self.rank + 2:
            raise ConfigurationError(
                f"{self.name}: input_shape must have {self.rank + 2} entries "
                f"{LAYOUTS[self.rank]}, received {input_shape!r}"
            )
        x = TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)
        self._check_dy(dy, self._out_spec(x, **window))
        return x

    def forward(
        self, ctx: ExecContext, dy: Array, *, input_shape: Shape, **window: object
    ) -> Array:
        size = tuple(input_shape[1:-1])  # the input's size is known at run time
        return self.kernel_fn(dy, size, *self._geometry(size, **window)[1:])

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        attrs = {k: v for k, v in node.attrs.items() if k != "input_shape"}
        return [apply1(self.name.removesuffix("_grad"), g, **attrs)]


@register
class MaxPool2D(PoolForward):
    """Max over each window of an NHWC tensor; padding never wins the max."""

    name = "max_pool2d"
    kernel_fn = staticmethod(kp.max_pool2d)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("max_pool2d_grad", node.inputs[0], dy, **node.attrs)]


class MaxPoolGrad(PoolOp):
    """Gradient of a max pool, by ``kernel_fn(x, *fwd, dy, pool, strides, pads)``: the inputs are
    ``x`` and ``dy`` (2-D), or ``x``, the forward output ``y`` and ``dy`` (3-D)."""

    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(self, x: TensorSpec, *pooled: TensorSpec, **window: object) -> TensorSpec:
        expected = self._out_spec(x, **window)
        for spec in (pooled[-1], *pooled[:-1]):  # dy first, as the checks have always run
            check_same_dtype(self.name, x, spec)
        for spec in pooled:
            self._check_dy(spec, expected)
        return x.with_shape(x.shape)

    def forward(self, ctx: ExecContext, x: Array, *pooled: Array, **window: object) -> Array:
        return self.kernel_fn(x, *pooled, *self._geometry(x.shape[1:-1], **window)[1:])


@register
class MaxPool2DGrad(MaxPoolGrad):
    """Gradient of max_pool2d: each ``dy`` goes to the first maximum (row-major) of its window."""

    name = "max_pool2d_grad"
    pooled = "the max_pool2d output shape"
    kernel_fn = staticmethod(kp.max_pool2d_grad)


def max_pool2d(
    x: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Max pooling of ``(batch, height, width, channels)`` ``x``.

    Args:
        x: NHWC input.
        pool_size: int or ``(ph, pw)`` window, in pixels.
        strides: int or ``(sh, sw)``; default: ``pool_size`` (as Keras' MaxPooling2D).
        padding: ``"VALID"`` or ``"SAME"`` (case-insensitive).
    """
    return apply1("max_pool2d", x, **pool_attrs("max_pool2d", pool_size, strides, padding))


def max_pool2d_grad(
    x: TensorLike, dy: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Gradient of :func:`max_pool2d` w.r.t. ``x`` given ``dy`` (the pooled output's gradient)."""
    op = "max_pool2d_grad"
    return apply1(op, x, dy, **pool_attrs(op, pool_size, strides, padding))


@register
class AvgPool2D(PoolForward):
    """Mean over each window of an NHWC tensor, counting only real (unpadded) pixels."""

    name = "avg_pool2d"
    kernel_fn = staticmethod(kp.avg_pool2d)


@register
class AvgPool2DGrad(AvgPoolGrad):
    """Gradient of avg_pool2d: each ``dy / count`` spread over the real pixels of its window."""

    name = "avg_pool2d_grad"
    pooled = "the avg_pool2d output shape"
    kernel_fn = staticmethod(kp.avg_pool2d_grad)


def avg_pool2d(
    x: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Average pooling of NHWC ``x``; with ``"SAME"`` padding only real pixels are averaged.

    Args: as :func:`max_pool2d`.
    """
    return apply1("avg_pool2d", x, **pool_attrs("avg_pool2d", pool_size, strides, padding))


def avg_pool2d_grad(
    dy: TensorLike,
    input_shape: Shape,
    pool_size: object,
    strides: object = None,
    padding: str = "VALID",
) -> Symbol:
    """Gradient of :func:`avg_pool2d` w.r.t. its input of shape ``input_shape`` (NHWC)."""
    op = "avg_pool2d_grad"
    attrs = pool_attrs(op, pool_size, strides, padding)
    return apply1(op, dy, input_shape=tuple(input_shape), **attrs)


@register
class GlobalAvgPool2D(Op):
    """Mean over height and width: ``(N, H, W, C) -> (N, C)``."""

    name = "global_avg_pool2d"
    kind = "reduction"

    def infer(self, x: TensorSpec) -> TensorSpec:
        check_nhwc(self.name, "x", x)
        return TensorSpec((x.shape[0], x.shape[3]), x.dtype)

    def forward(self, ctx: ExecContext, x: Array) -> Array:
        return kp.global_avg_pool2d(x)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("global_avg_pool2d_grad", dy, input_shape=node.inputs[0].shape)]

    def cost(self, in_specs: Specs, out_specs: Specs) -> OpCost:
        return io_cost(in_specs[0].size, in_specs, out_specs, "reduction")


@register
class GlobalAvgPool2DGrad(Op):
    """Gradient of global_avg_pool2d: ``dy / (H·W)`` broadcast over every pixel."""

    name = "global_avg_pool2d_grad"
    kind = "data_movement"

    def infer(self, dy: TensorSpec, *, input_shape: Shape) -> TensorSpec:
        if dy.rank != 2 or len(input_shape) != 4 or not known_eq(dy.shape[1], input_shape[3]):
            raise ConfigurationError(
                f"{self.name}: dy must be (batch, channels) matching input_shape "
                f"(batch, height, width, channels); received dy {dy.shape} and "
                f"input_shape {input_shape!r}"
            )
        return TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)

    def forward(self, ctx: ExecContext, dy: Array, *, input_shape: Shape) -> Array:
        return kp.global_avg_pool2d_grad(dy, known_hw(tuple(input_shape[1:3])))

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        return [apply1("global_avg_pool2d", g)]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(out_specs[0].size, in_specs, out_specs, "data_movement")


def global_avg_pool2d(x: TensorLike) -> Symbol:
    """Mean of NHWC ``x`` over height and width, giving ``(batch, channels)``."""
    return apply1("global_avg_pool2d", x)


def global_avg_pool2d_grad(dy: TensorLike, input_shape: Shape) -> Symbol:
    """Gradient of :func:`global_avg_pool2d` w.r.t. its input of shape ``input_shape`` (NHWC)."""
    return apply1("global_avg_pool2d_grad", dy, input_shape=tuple(input_shape))
