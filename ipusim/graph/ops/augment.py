"""``random_crop``: a crop of an image batch at an offset drawn per training step (what Keras'
RandomCrop does: one offset for the whole batch), and its gradient.

The offset is a pure function of the op's ``seed`` and ``ExecContext.step`` (the counter-based
stream of :mod:`ipusim.kernels.random`), so the gradient op recomputes the same offset and places
``dy`` there, as dropout's gradient redraws its mask.
"""

from __future__ import annotations

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_bytes, register
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import layout
from ipusim.kernels import random as k


def crop_offsets(seed: int, step: int, spare_h: int, spare_w: int) -> tuple[int, int]:
    """Row and column offsets in [0, spare] drawn for ``(seed, step)``."""
    u = k.draw("uniform", (2,), seed, step, 0.0, 1.0, np.float64)
    return min(int(u[0] * (spare_h + 1)), spare_h), min(int(u[1] * (spare_w + 1)), spare_w)


def _check(op: str, x: TensorSpec, height: int, width: int) -> None:
    if x.rank not in (3, 4):
        raise ConfigurationError(f"{op}: expects images of rank 3 or 4, received shape {x.shape}")
    h, w = x.shape[-3], x.shape[-2]
    if h is None or w is None or h < height or w < width:
        raise ConfigurationError(
            f"{op}: images of shape {x.shape} must be known and at least {height}x{width}"
        )


class _Crop(Op):
    kind = "data_movement"

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        read, written = io_bytes(in_specs[:1], out_specs)
        return OpCost(0, min(read, written), written, "data_movement")


@register
class RandomCrop(_Crop):
    """A ``height`` x ``width`` window of every image at the step's random offset."""

    name = "random_crop"

    def infer(self, x: TensorSpec, *, height: int, width: int, seed: int) -> TensorSpec:
        _check(self.name, x, height, width)
        return TensorSpec((*x.shape[:-3], height, width, x.shape[-1]), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, height: int, width: int, seed: int) -> Array:
        h, w = x.shape[-3], x.shape[-2]
        top, left = crop_offsets(seed, ctx.step, h - height, w - width)
        begin = [0] * x.ndim
        begin[-3], begin[-2] = top, left
        size = list(x.shape)
        size[-3], size[-2] = height, width
        return layout.slice_(x, begin, size)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [apply1("random_crop_grad", dy, node.inputs[0], **node.attrs)]


@register
class RandomCropGrad(_Crop):
    """``dy`` of a random crop placed back at the crop's offset in zeros of ``x``'s shape."""

    name = "random_crop_grad"

    def infer(
        self, dy: TensorSpec, x: TensorSpec, *, height: int, width: int, seed: int
    ) -> TensorSpec:
        _check(self.name, x, height, width)
        return TensorSpec(x.shape, dy.dtype)

    def forward(
        self, ctx: ExecContext, dy: Array, x: Array, *, height: int, width: int, seed: int
    ) -> Array:
        h, w = x.shape[-3], x.shape[-2]
        top, left = crop_offsets(seed, ctx.step, h - height, w - width)
        paddings = [(0, 0)] * dy.ndim
        paddings[-3] = (top, h - height - top)
        paddings[-2] = (left, w - width - left)
        return layout.pad(dy, paddings)


def random_crop(x: TensorLike, height: int, width: int, seed: int) -> Symbol:
    """A ``height`` x ``width`` crop of images ``(..., H, W, C)`` at a random offset per step."""
    return apply1("random_crop", x, height=int(height), width=int(width), seed=int(seed))
