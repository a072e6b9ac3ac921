"""Up-sampling of NHWC images by integer factors as ``tf.image.resize`` does it (half-pixel
centres; ``method`` ``"bilinear"`` or ``"nearest"``), and its gradient: ``UpSampling2D``.

Numerics: :mod:`ipusim.kernels.resize`. Cost: tf2xla lowers ``ResizeBilinear`` and
``ResizeNearestNeighbor`` one axis at a time (``GeneralCompile``), each a depthwise convolution
of the input dilated by the scale with a small interpolation kernel (S: graphcore/tensorflow
tensorflow/compiler/tf2xla/kernels/image_resize_ops.cc, ``ResizeUsingDilationAndConvolution``),
so ``UpSampling2D`` applies this op per axis and the planner sees one conv group per channel
and, per resized axis, the source pixels each output reads (bilinear two, nearest one;
:func:`ipusim.cost.conv_nd.resize_problem`); the gradient is the matching strided depthwise
convolution.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.ops._window import check_nhwc, normalize_pair
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import resize as kr

#: Source pixels an output pixel reads along each resized axis, per method.
TAPS = {"bilinear": 2, "nearest": 1}


def _attrs(op: str, scale: object, method: object) -> tuple[tuple[int, int], str]:
    if method not in TAPS:
        raise ConfigurationError(f"{op}: method must be one of {sorted(TAPS)}, received {method!r}")
    return normalize_pair(op, "scale", scale), method


def _flops(out: TensorSpec, scale: object, method: str) -> int:
    """A multiply-add per output pixel for each source pixel it reads."""
    taps = 1
    for s in normalize_pair("resize", "scale", scale):
        taps *= TAPS[method] if s > 1 else 1
    return 2 * out.size * taps


class _ResizeOp(Op):
    kind = "conv"

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        # Counted on the up-sampled tensor: resize's output, resize_grad's dy.
        big = out_specs[0] if self.name == "resize" else in_specs[0]
        flops = _flops(big, attrs["scale"], attrs.get("method", "bilinear"))
        return io_cost(flops, in_specs, out_specs, "conv")


@register
class Resize(_ResizeOp):
    """``(N, H, W, C) -> (N, H·sh, W·sw, C)`` by ``method`` (half-pixel centres)."""

    name = "resize"

    def infer(self, x: TensorSpec, *, scale: object, method: object = "bilinear") -> TensorSpec:
        check_nhwc(self.name, "x", x)
        (sh, sw), _ = _attrs(self.name, scale, method)
        h, w = x.shape[1:3]
        return TensorSpec(
            (x.shape[0], None if h is None else h * sh, None if w is None else w * sw, x.shape[3]),
            x.dtype,
        )

    def forward(
        self, ctx: ExecContext, x: Array, *, scale: object, method: object = "bilinear"
    ) -> Array:
        return kr.resize(x, *_attrs(self.name, scale, method))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x = node.inputs[0]
        return [apply1("resize_grad", dy, input_hw=tuple(x.shape[1:3]), **node.attrs)]


@register
class ResizeGrad(_ResizeOp):
    """Gradient of resize w.r.t. its input of spatial size ``input_hw``."""

    name = "resize_grad"

    def infer(
        self,
        dy: TensorSpec,
        *,
        input_hw: tuple[int, int],
        scale: object,
        method: object = "bilinear",
    ) -> TensorSpec:
        check_nhwc(self.name, "dy", dy)
        (sh, sw), _ = _attrs(self.name, scale, method)
        h, w = input_hw
        if dy.shape[1] not in (None, h * sh) or dy.shape[2] not in (None, w * sw):
            raise ConfigurationError(
                f"{self.name}: dy has spatial size {dy.shape[1:3]} but an input of "
                f"{tuple(input_hw)} resized by {(sh, sw)} gives {(h * sh, w * sw)}"
            )
        return TensorSpec((dy.shape[0], h, w, dy.shape[3]), dy.dtype)

    def forward(
        self,
        ctx: ExecContext,
        dy: Array,
        *,
        input_hw: tuple[int, int],
        scale: object,
        method: object = "bilinear",
    ) -> Array:
        return kr.resize_grad(dy, (input_hw[0], input_hw[1]), *_attrs(self.name, scale, method))

    def gradient(self, node: Node, g: Symbol) -> list[Symbol]:
        attrs = {k: v for k, v in node.attrs.items() if k != "input_hw"}
        return [apply1("resize", g, **attrs)]


def resize(x: TensorLike, scale: TensorLike, method: str = "bilinear") -> Symbol:
    """Up-sample NHWC ``x`` by integer factors ``scale`` (int or ``(sh, sw)``) with ``method``
    (``"bilinear"`` or ``"nearest"``)."""
    scale, method = _attrs("resize", scale, method)
    return apply1("resize", x, scale=scale, method=method)
