"""``image_resize``: NHWC images to any size as ``tf.image.resize`` (Keras' Resizing, CenterCrop's
and RandomCrop's smart resize), and its gradient. Numerics: :mod:`ipusim.kernels.image_resize`.

Cost: each output element gathers its taps (bilinear 2 per axis, nearest 1) and blends them; the
gradient scatters them back (:mod:`ipusim.cost.compute` costs both as gathers / scatters).
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.ops._window import known_hw
from ipusim.graph.spec import FLOAT_DTYPES, Array, TensorSpec
from ipusim.kernels import image_resize as k

#: Source pixels each output pixel reads, per method (both axes).
TAPS = {"bilinear": 4, "nearest": 1}


def _check(op: str, x: TensorSpec, size: tuple[int, int], method: str) -> None:
    if x.rank != 4 or x.dtype not in FLOAT_DTYPES:
        raise ConfigurationError(
            f"{op}: expects float (N, H, W, C) images, received {x.shape} {x.dtype}"
        )
    if method not in TAPS:
        raise ConfigurationError(f"{op}: method must be one of {sorted(TAPS)}, received {method!r}")
    if len(size) != 2 or any(int(d) < 1 for d in size):
        raise ConfigurationError(f"{op}: size must be two positive ints, received {size}")


@register
class ImageResize(Op):
    """``(N, H, W, C) -> (N, size[0], size[1], C)`` by ``method`` (half-pixel centres)."""

    name = "image_resize"
    kind = "data_movement"

    def infer(self, x: TensorSpec, *, size: tuple[int, int], method: str) -> TensorSpec:
        _check(self.name, x, size, method)
        if x.shape[1] is None or x.shape[2] is None:
            raise ConfigurationError(
                f"{self.name}: the input's height and width must be known, {x.shape}"
            )
        return TensorSpec((x.shape[0], int(size[0]), int(size[1]), x.shape[3]), x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, size: tuple[int, int], method: str) -> Array:
        return k.resize(x, (size[0], size[1]), method)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        hw = known_hw(tuple(node.inputs[0].shape[1:3]))  # infer checked they are known
        return [apply1("image_resize_grad", dy, input_hw=hw, method=node.attrs["method"])]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        flops = 2 * TAPS[attrs["method"]] * out_specs[0].size if attrs["method"] != "nearest" else 0
        return io_cost(flops, in_specs, out_specs, "data_movement")


@register
class ImageResizeGrad(Op):
    """Gradient of ``image_resize`` w.r.t. an input of spatial size ``input_hw``."""

    name = "image_resize_grad"
    kind = "data_movement"

    def infer(self, dy: TensorSpec, *, input_hw: tuple[int, int], method: str) -> TensorSpec:
        _check(self.name, dy, input_hw, method)
        return TensorSpec((dy.shape[0], int(input_hw[0]), int(input_hw[1]), dy.shape[3]), dy.dtype)

    def forward(
        self, ctx: ExecContext, dy: Array, *, input_hw: tuple[int, int], method: str
    ) -> Array:
        return k.resize_grad(dy, (input_hw[0], input_hw[1]), method)

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        size = tuple(node.inputs[0].shape[1:3])
        return [apply1("image_resize", g, size=size, method=node.attrs["method"])]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        flops = 2 * TAPS[attrs["method"]] * in_specs[0].size
        return io_cost(flops, in_specs, out_specs, "data_movement")


def image_resize(x: TensorLike, height: int, width: int, method: str = "bilinear") -> Symbol:
    """``tf.image.resize(x, (height, width), method)`` for NHWC ``x`` (no antialiasing)."""
    return apply1("image_resize", x, size=(int(height), int(width)), method=str(method))
