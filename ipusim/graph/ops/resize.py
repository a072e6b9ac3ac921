"""Bilinear up-sampling of NHWC images by integer factors (``UpSampling2D(interpolation=
"bilinear")``, i.e. ``tf.image.resize`` with half-pixel centres) and its gradient.

Numerics: :mod:`ipusim.kernels.resize`. Cost: tf2xla lowers ``ResizeBilinear`` one axis at a
time (``GeneralCompile``), each a depthwise convolution of the input dilated by the scale with a
small interpolation kernel (S: graphcore/tensorflow
tensorflow/compiler/tf2xla/kernels/image_resize_ops.cc, ``ResizeUsingDilationAndConvolution``),
so ``UpSampling2D`` applies this op per axis and the planner sees one conv group per channel,
two taps per resized axis (:func:`ipusim.cost.conv_nd.resize_problem`); the gradient is the
matching strided depthwise convolution.
"""

from __future__ import annotations

from typing import Any

from ipusim.graph.graph import Node, Symbol, apply
from ipusim.graph.op import Op, OpCost, io_bytes, register
from ipusim.graph.ops._window import check_nhwc, normalize_pair
from ipusim.graph.spec import TensorSpec
from ipusim.kernels import resize as kr


def _flops(out: TensorSpec, scale: Any) -> int:
    """Two multiply-adds per output pixel for each resized axis (bilinear: two source pixels)."""
    taps = 1
    for s in normalize_pair("resize_bilinear", "scale", scale):
        taps *= 2 if s > 1 else 1
    return 2 * out.size * taps


@register
class ResizeBilinear(Op):
    """``(N, H, W, C) -> (N, H·sh, W·sw, C)`` by bilinear interpolation (half-pixel centres)."""

    name = "resize_bilinear"
    kind = "conv"

    def infer(self, x: TensorSpec, *, scale: Any) -> TensorSpec:
        check_nhwc(self.name, "x", x)
        sh, sw = normalize_pair(self.name, "scale", scale)
        h, w = x.shape[1:3]
        return TensorSpec(
            (x.shape[0], None if h is None else h * sh, None if w is None else w * sw, x.shape[3]),
            x.dtype,
        )

    def forward(self, ctx: Any, x: Any, *, scale: Any) -> Any:
        return kr.resize_bilinear(x, normalize_pair(self.name, "scale", scale))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x = node.inputs[0]
        return [apply("resize_bilinear_grad", dy, input_hw=tuple(x.shape[1:3]), **node.attrs)]

    def cost(self, in_specs, out_specs, **attrs: Any) -> OpCost:
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(_flops(out_specs[0], attrs["scale"]), read, written, "conv")


@register
class ResizeBilinearGrad(Op):
    """Gradient of resize_bilinear w.r.t. its input of spatial size ``input_hw``."""

    name = "resize_bilinear_grad"
    kind = "conv"

    def infer(self, dy: TensorSpec, *, input_hw: tuple, scale: Any) -> TensorSpec:
        check_nhwc(self.name, "dy", dy)
        sh, sw = normalize_pair(self.name, "scale", scale)
        h, w = input_hw
        if dy.shape[1] not in (None, h * sh) or dy.shape[2] not in (None, w * sw):
            raise ValueError(
                f"{self.name}: dy has spatial size {dy.shape[1:3]} but an input of "
                f"{tuple(input_hw)} resized by {(sh, sw)} gives {(h * sh, w * sw)}"
            )
        return TensorSpec((dy.shape[0], h, w, dy.shape[3]), dy.dtype)

    def forward(self, ctx: Any, dy: Any, *, input_hw: tuple, scale: Any) -> Any:
        return kr.resize_bilinear_grad(
            dy, tuple(input_hw), normalize_pair(self.name, "scale", scale)
        )

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        return [apply("resize_bilinear", g, scale=node.attrs["scale"])]

    def cost(self, in_specs, out_specs, **attrs: Any) -> OpCost:
        read, written = io_bytes(in_specs, out_specs)
        return OpCost(_flops(in_specs[0], attrs["scale"]), read, written, "conv")


def resize_bilinear(x: Any, scale: Any) -> Symbol:
    """Bilinear up-sampling of NHWC ``x`` by integer factors ``scale`` (int or ``(sh, sw)``)."""
    return apply("resize_bilinear", x, scale=normalize_pair("resize_bilinear", "scale", scale))
