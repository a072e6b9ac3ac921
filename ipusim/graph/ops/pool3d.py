"""3-D pooling ops on NDHWC volumes: ``max_pool3d`` and ``avg_pool3d`` with their gradient ops.

Windows follow TensorFlow's padding rules per axis; padding never contributes (see
:mod:`ipusim.kernels.pool3d`). ``max_pool3d_grad`` takes the forward input and output, as
TensorFlow's ``MaxPool3DGrad`` does, and gives every tie of a window's maximum the window's
gradient (TensorFlow's and popnn's rule for 3-D windows). popnn pools any number of field
dimensions in one pass, so each op is one pooling pass (cost: one step per window tap per
output, as the 2-D ops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_bytes, register
from ipusim.graph.ops._window import check_same_dtype, normalize_padding
from ipusim.graph.ops.conv3d import Triple, _check_5d, normalize_triple, volume_geometry
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import pool as kp3

_ACTS = "(batch, depth, height, width, channels)"


def _pool_attrs(op: str, pool_size: object, strides: object, padding: object) -> dict[str, Any]:
    pool = normalize_triple(op, "pool_size", pool_size)
    return {
        "pool_size": pool,
        "strides": pool if strides is None else normalize_triple(op, "strides", strides),
        "padding": normalize_padding(op, padding),
    }


class _Pool3DBase(Op):
    kind = "reduction"

    def _geometry(
        self, dhw: Shape, attrs: dict[str, Any]
    ) -> tuple[tuple[int | None, ...], Triple, Triple, Triple]:
        a = _pool_attrs(self.name, attrs["pool_size"], attrs.get("strides"), attrs["padding"])
        out, pads = volume_geometry(
            self.name, dhw, a["pool_size"], a["strides"], a["padding"], (1, 1, 1)
        )
        return out, a["pool_size"], a["strides"], pads

    def _out_spec(self, x: TensorSpec, attrs: dict[str, Any]) -> TensorSpec:
        _check_5d(self.name, "x", x, _ACTS)
        out, _, _, _ = self._geometry(x.shape[1:4], attrs)
        return TensorSpec((x.shape[0], *out, x.shape[4]), x.dtype)

    def _check_dy(self, dy: TensorSpec, expected: TensorSpec) -> None:
        if not dy.is_compatible_with(expected):
            raise ConfigurationError(
                f"{self.name}: dy must have the pooled shape {expected.shape}, received {dy.shape}"
            )

    def _window_cost(
        self, in_specs: Specs, out_specs: Specs, per: TensorSpec, pool_size: object
    ) -> OpCost:
        pool = normalize_triple(self.name, "pool_size", pool_size)
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(per.size * pool[0] * pool[1] * pool[2], read, written, self.kind)


class _Pool3DForward(_Pool3DBase):
    """A forward pooling op: ``pool_kernel`` (max or average) over each window of ``x``."""

    pool_kernel: ClassVar[Callable[..., Array]]

    def infer(self, x: TensorSpec, **attrs: object) -> TensorSpec:
        return self._out_spec(x, attrs)

    def forward(self, ctx: ExecContext, x: Array, **attrs: object) -> Array:
        out, pool, strides, pads = self._geometry(x.shape[1:4], attrs)
        return self.pool_kernel(x, out, pool, strides, pads)

    def cost(
        self, in_specs: Specs, out_specs: Specs, *, pool_size: object, **attrs: object
    ) -> OpCost:
        return self._window_cost(in_specs, out_specs, out_specs[0], pool_size)


@register
class MaxPool3D(_Pool3DForward):
    """Max over each window of an NDHWC tensor; padding never wins the max."""

    name = "max_pool3d"
    pool_kernel = staticmethod(kp3.max_pool3d)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("max_pool3d_grad", node.inputs[0], node.outputs[0], dy, **node.attrs)]


@register
class MaxPool3DGrad(_Pool3DBase):
    """Gradient of max_pool3d: each ``dy`` goes to every voxel equal to its window's maximum."""

    name = "max_pool3d_grad"

    def infer(self, x: TensorSpec, y: TensorSpec, dy: TensorSpec, **attrs: object) -> TensorSpec:
        expected = self._out_spec(x, attrs)
        check_same_dtype(self.name, x, dy)
        check_same_dtype(self.name, x, y)
        self._check_dy(y, expected)
        self._check_dy(dy, expected)
        return x

    def forward(self, ctx: ExecContext, x: Array, y: Array, dy: Array, **attrs: object) -> Array:
        _, pool, strides, pads = self._geometry(x.shape[1:4], attrs)
        return kp3.max_pool3d_grad(x, y, dy, pool, strides, pads)

    def cost(
        self, in_specs: Specs, out_specs: Specs, *, pool_size: object, **attrs: object
    ) -> OpCost:
        return self._window_cost(in_specs, out_specs, in_specs[2], pool_size)


@register
class AvgPool3D(_Pool3DForward):
    """Mean over each window of an NDHWC tensor, counting only real (unpadded) voxels."""

    name = "avg_pool3d"
    pool_kernel = staticmethod(kp3.avg_pool3d)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("avg_pool3d_grad", dy, input_shape=node.inputs[0].shape, **node.attrs)]


@register
class AvgPool3DGrad(_Pool3DBase):
    """Gradient of avg_pool3d: each ``dy / count`` spread over the real voxels of its window."""

    name = "avg_pool3d_grad"
    kind = "data_movement"

    def infer(self, dy: TensorSpec, *, input_shape: Shape, **attrs: object) -> TensorSpec:
        if len(input_shape) != 5:
            raise ConfigurationError(
                f"{self.name}: input_shape must have 5 entries {_ACTS}, received {input_shape!r}"
            )
        x = TensorSpec((dy.shape[0], *input_shape[1:]), dy.dtype)
        self._check_dy(dy, self._out_spec(x, attrs))
        return x

    def forward(self, ctx: ExecContext, dy: Array, *, input_shape: Shape, **attrs: object) -> Array:
        dhw = cast(Triple, tuple(input_shape[1:4]))  # the input's volume is known at run time
        _, pool, strides, pads = self._geometry(dhw, attrs)
        return kp3.avg_pool3d_grad(dy, dhw, pool, strides, pads)

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        attrs = {k: v for k, v in node.attrs.items() if k != "input_shape"}
        return [apply1("avg_pool3d", g, **attrs)]

    def cost(
        self, in_specs: Specs, out_specs: Specs, *, pool_size: object, **attrs: object
    ) -> OpCost:
        return self._window_cost(in_specs, out_specs, in_specs[0], pool_size)


def max_pool3d(
    x: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Max pooling of NDHWC ``x`` (``tf.nn.max_pool3d``).

    Args:
        x: ``(batch, depth, height, width, channels)``.
        pool_size: int or ``(pd, ph, pw)`` window, in voxels.
        strides: int or ``(sd, sh, sw)``; default: ``pool_size`` (as Keras' MaxPooling3D).
        padding: ``"VALID"`` or ``"SAME"`` (case-insensitive).
    """
    return apply1("max_pool3d", x, **_pool_attrs("max_pool3d", pool_size, strides, padding))


def avg_pool3d(
    x: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Average pooling of NDHWC ``x`` over the real voxels of each window (args as
    :func:`max_pool3d`)."""
    return apply1("avg_pool3d", x, **_pool_attrs("avg_pool3d", pool_size, strides, padding))
