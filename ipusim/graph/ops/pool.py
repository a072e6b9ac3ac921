"""Pooling ops on NHWC tensors: max, average and global average pooling, each with a gradient op.

Windows follow TensorFlow's padding rules (see :mod:`ipusim.graph.ops._window`). Padding never
contributes: max pooling ignores it and average pooling divides by the number of real pixels in each
window, as TensorFlow does. ``max_pool2d_grad`` routes each gradient to the first maximum of its
window in row-major order, TensorFlow's tie rule. ``strides`` default to ``pool_size`` as in Keras.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_bytes, register
from ipusim.graph.ops._window import (
    Pair,
    check_nhwc,
    check_same_dtype,
    known_eq,
    known_hw,
    normalize_padding,
    normalize_pair,
    spatial_geometry,
)
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import pool as kp


class _PoolBase(Op):
    """Shared attribute handling: ``pool_size``, ``strides`` (default: the pool size), padding."""

    kind = "reduction"

    def _attrs(self, pool_size: object, strides: object, padding: object) -> tuple[Pair, Pair, str]:
        pool = normalize_pair(self.name, "pool_size", pool_size)
        strides = pool if strides is None else normalize_pair(self.name, "strides", strides)
        return pool, strides, normalize_padding(self.name, padding)

    def _out_spec(
        self, x: TensorSpec, pool_size: object, strides: object, padding: object
    ) -> TensorSpec:
        check_nhwc(self.name, "x", x)
        pool, strides, padding = self._attrs(pool_size, strides, padding)
        (ho, wo), _ = spatial_geometry(self.name, x.shape[1:3], pool, strides, padding)
        return TensorSpec((x.shape[0], ho, wo, x.shape[3]), x.dtype)

    def _geometry(
        self, hw: Pair, pool_size: object, strides: object, padding: object
    ) -> tuple[Pair, Pair, Pair, Pair]:
        """Output size, window, strides and padding for an input of known size ``hw``."""
        pool, strides, padding = self._attrs(pool_size, strides, padding)
        out_hw, pads = spatial_geometry(self.name, hw, pool, strides, padding)
        return known_hw(out_hw), pool, strides, pads

    def _window_cost(
        self, in_specs: Specs, out_specs: Specs, per: TensorSpec, pool_size: object, kind: str
    ) -> OpCost:
        pool = normalize_pair(self.name, "pool_size", pool_size)
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(per.size * pool[0] * pool[1], read, written, kind)


def _pool_attrs(op: str, pool_size: object, strides: object, padding: str) -> dict[str, Any]:
    pool = normalize_pair(op, "pool_size", pool_size)
    return {
        "pool_size": pool,
        "strides": pool if strides is None else normalize_pair(op, "strides", strides),
        "padding": normalize_padding(op, padding),
    }


class _PoolForward(_PoolBase):
    """A pooling forward op: the window geometry feeds ``kernel_fn(x, out_hw, pool, strides, pads)``."""

    kernel_fn: ClassVar[Callable[..., Array]]

    def infer(
        self, x: TensorSpec, *, pool_size: object, strides: object = None, padding: object = "VALID"
    ) -> TensorSpec:
        return self._out_spec(x, pool_size, strides, padding)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        *,
        pool_size: object,
        strides: object = None,
        padding: object = "VALID",
    ) -> Array:
        out_hw, pool, strides, pads = self._geometry(
            known_hw(x.shape[1:3]), pool_size, strides, padding
        )
        return self.kernel_fn(x, out_hw, pool, strides, pads)

    def cost(
        self, in_specs: Specs, out_specs: Specs, *, pool_size: object, **attrs: object
    ) -> OpCost:
        return self._window_cost(in_specs, out_specs, out_specs[0], pool_size, "reduction")


@register
class MaxPool2D(_PoolForward):
    """Max over each window of an NHWC tensor; padding never wins the max."""

    name = "max_pool2d"
    kernel_fn = staticmethod(kp.max_pool2d)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("max_pool2d_grad", node.inputs[0], dy, **node.attrs)]


@register
class MaxPool2DGrad(_PoolBase):
    """Gradient of max_pool2d: each ``dy`` goes to the first maximum (row-major) of its window."""

    name = "max_pool2d_grad"

    def infer(
        self,
        x: TensorSpec,
        dy: TensorSpec,
        *,
        pool_size: object,
        strides: object = None,
        padding: object = "VALID",
    ) -> TensorSpec:
        expected = self._out_spec(x, pool_size, strides, padding)
        check_same_dtype(self.name, x, dy)
        if not dy.is_compatible_with(expected):
            raise ConfigurationError(
                f"{self.name}: dy must have the max_pool2d output shape "
                f"{expected.shape}, received {dy.shape}"
            )
        return x.with_shape(x.shape)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        dy: Array,
        *,
        pool_size: object,
        strides: object = None,
        padding: object = "VALID",
    ) -> Array:
        _, pool, strides, pads = self._geometry(known_hw(x.shape[1:3]), pool_size, strides, padding)
        return kp.max_pool2d_grad(x, dy, pool, strides, pads)

    def cost(
        self, in_specs: Specs, out_specs: Specs, *, pool_size: object, **attrs: object
    ) -> OpCost:
        return self._window_cost(in_specs, out_specs, in_specs[1], pool_size, "reduction")


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
    return apply1("max_pool2d", x, **_pool_attrs("max_pool2d", pool_size, strides, padding))


def max_pool2d_grad(
    x: TensorLike, dy: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Gradient of :func:`max_pool2d` w.r.t. ``x`` given ``dy`` (the pooled output's gradient)."""
    op = "max_pool2d_grad"
    return apply1(op, x, dy, **_pool_attrs(op, pool_size, strides, padding))


@register
class AvgPool2D(_PoolForward):
    """Mean over each window of an NHWC tensor, counting only real (unpadded) pixels."""

    name = "avg_pool2d"
    kernel_fn = staticmethod(kp.avg_pool2d)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("avg_pool2d_grad", dy, input_shape=node.inputs[0].shape, **node.attrs)]


@register
class AvgPool2DGrad(_PoolBase):
    """Gradient of avg_pool2d: each ``dy / count`` spread over the real pixels of its window."""

    name = "avg_pool2d_grad"
    kind = "data_movement"

    def infer(
        self,
        dy: TensorSpec,
        *,
        input_shape: Shape,
        pool_size: object,
        strides: object = None,
        padding: object = "VALID",
    ) -> TensorSpec:
        if len(input_shape) != 4:
            raise ConfigurationError(
                f"{self.name}: input_shape must have 4 entries (batch, height, width, "
                f"channels), received {input_shape!r}"
            )
        x = TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)
        expected = self._out_spec(x, pool_size, strides, padding)
        if not dy.is_compatible_with(expected):
            raise ConfigurationError(
                f"{self.name}: dy must have the avg_pool2d output shape "
                f"{expected.shape}, received {dy.shape}"
            )
        return x

    def forward(
        self,
        ctx: ExecContext,
        dy: Array,
        *,
        input_shape: Shape,
        pool_size: object,
        strides: object = None,
        padding: object = "VALID",
    ) -> Array:
        hw = known_hw(tuple(input_shape[1:3]))
        _, pool, strides, pads = self._geometry(hw, pool_size, strides, padding)
        return kp.avg_pool2d_grad(dy, hw, pool, strides, pads)

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        attrs = {k: v for k, v in node.attrs.items() if k != "input_shape"}
        return [apply1("avg_pool2d", g, **attrs)]

    def cost(
        self, in_specs: Specs, out_specs: Specs, *, pool_size: object, **attrs: object
    ) -> OpCost:
        return self._window_cost(in_specs, out_specs, in_specs[0], pool_size, "data_movement")


def avg_pool2d(
    x: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Average pooling of NHWC ``x``; with ``"SAME"`` padding only real pixels are averaged.

    Args: as :func:`max_pool2d`.
    """
    return apply1("avg_pool2d", x, **_pool_attrs("avg_pool2d", pool_size, strides, padding))


def avg_pool2d_grad(
    dy: TensorLike,
    input_shape: Shape,
    pool_size: object,
    strides: object = None,
    padding: str = "VALID",
) -> Symbol:
    """Gradient of :func:`avg_pool2d` w.r.t. its input of shape ``input_shape`` (NHWC)."""
    op = "avg_pool2d_grad"
    attrs = _pool_attrs(op, pool_size, strides, padding)
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
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(in_specs[0].size, read, written, "reduction")


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
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(out_specs[0].size, read, written, "data_movement")


def global_avg_pool2d(x: TensorLike) -> Symbol:
    """Mean of NHWC ``x`` over height and width, giving ``(batch, channels)``."""
    return apply1("global_avg_pool2d", x)


def global_avg_pool2d_grad(dy: TensorLike, input_shape: Shape) -> Symbol:
    """Gradient of :func:`global_avg_pool2d` w.r.t. its input of shape ``input_shape`` (NHWC)."""
    return apply1("global_avg_pool2d_grad", dy, input_shape=tuple(input_shape))
