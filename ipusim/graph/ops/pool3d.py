"""3-D pooling ops on NDHWC volumes: ``max_pool3d`` and ``avg_pool3d`` with their gradient ops.

Windows follow TensorFlow's padding rules per axis; padding never contributes (see
:mod:`ipusim.kernels.pool`). ``max_pool3d_grad`` takes the forward input and output, as
TensorFlow's ``MaxPool3DGrad`` does, and gives every tie of a window's maximum the window's
gradient (TensorFlow's and popnn's rule for 3-D windows). popnn pools any number of field
dimensions in one pass, so each op is one pooling pass (cost: one step per window tap per
output, as the 2-D ops, whose shared base :class:`ipusim.graph.ops.pool.PoolOp` they use).
"""

from __future__ import annotations

from typing import ClassVar

from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import register
from ipusim.graph.ops.pool import (
    AvgPoolGrad,
    MaxPoolGrad,
    PoolForward,
    PoolOp,
    pool_attrs,
)
from ipusim.kernels import pool as kp


class _Volume(PoolOp):
    """The pooling ops of 3-D windows: triples, 5-D inputs."""

    rank: ClassVar[int] = 3


@register
class MaxPool3D(_Volume, PoolForward):
    """Max over each window of an NDHWC tensor; padding never wins the max."""

    name = "max_pool3d"
    kernel_fn = staticmethod(kp.max_pool3d)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("max_pool3d_grad", node.inputs[0], node.outputs[0], dy, **node.attrs)]


@register
class MaxPool3DGrad(_Volume, MaxPoolGrad):
    """Gradient of max_pool3d: each ``dy`` goes to every voxel equal to its window's maximum."""

    name = "max_pool3d_grad"
    kernel_fn = staticmethod(kp.max_pool3d_grad)


@register
class AvgPool3D(_Volume, PoolForward):
    """Mean over each window of an NDHWC tensor, counting only real (unpadded) voxels."""

    name = "avg_pool3d"
    kernel_fn = staticmethod(kp.avg_pool3d)


@register
class AvgPool3DGrad(_Volume, AvgPoolGrad):
    """Gradient of avg_pool3d: each ``dy / count`` spread over the real voxels of its window."""

    name = "avg_pool3d_grad"
    kernel_fn = staticmethod(kp.avg_pool3d_grad)


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
    return apply1("max_pool3d", x, **pool_attrs("max_pool3d", pool_size, strides, padding, 3))


def avg_pool3d(
    x: TensorLike, pool_size: object, strides: object = None, padding: str = "VALID"
) -> Symbol:
    """Average pooling of NDHWC ``x`` over the real voxels of each window (args as
    :func:`max_pool3d`)."""
    return apply1("avg_pool3d", x, **pool_attrs("avg_pool3d", pool_size, strides, padding, 3))
