"""The conv planner's view of convolution-like passes beyond the 2-D ones: 3-D convolutions and
bilinear resizes (see :mod:`ipusim.cost.amp` for the planner, :mod:`ipusim.cost.compute` for
the dispatch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ipusim.cost import amp
from ipusim.cost.shapes import dims
from ipusim.graph.spec import TensorSpec

#: Ops planned by :func:`conv3d_problem`; ``conv3d_backprop_filter`` is planned as a product.
CONV3D = frozenset({"conv3d", "conv3d_backprop_input", "conv3d_backprop_filter"})
#: Ops planned by :func:`resize_problem`.
RESIZES = frozenset({"resize", "resize_grad"})


def conv3d_problem(
    op: str, in_specs: Sequence[TensorSpec], out_specs: Sequence[TensorSpec], attrs: dict[str, Any]
) -> amp.ConvProblem:
    """The planner's view of a forward or input-gradient 3-D convolution pass.

    poplin plans one convolution with three field and three kernel dimensions; ipusim's planner
    has a batch, two field dimensions and kernel rows, so depth folds into them (E): output planes
    into the batch (each is an independent 2-D field), depth taps into the kernel rows (the AMP
    vertex ``ConvPartialnx1`` loops over every kernel dimension but the innermost one, so the
    taps per output position and the MACs are exact), and each output plane reads its ``Kd``
    input planes, stacked as input rows.
    """
    sd, sh = (int(v) for v in attrs["strides"][:2])
    if op == "conv3d":
        n, do, ho, wo, _ = dims(out_specs[0])
        kd, kh, kw, cin, cout = dims(in_specs[1])
        in_h, in_w = (ho - 1) * sh + kh, (wo - 1) * attrs["strides"][2] + kw
        return amp.ConvProblem(n * do, ho, wo, kd * in_h, in_w, kd * kh, kw, sh, cin, cout)
    n, d, h, w, cin = dims(out_specs[0])
    kd, kh, kw, _, cout = dims(in_specs[1])
    # As the 2-D input gradient: an input-dilated convolution, ⌈k / stride⌉ taps per dimension.
    td, th, tw = -(-kd // sd), -(-kh // sh), -(-kw // attrs["strides"][2])
    flipped = kd * kh * kw * cin * cout  # the weights, transposed and flipped first
    in_d_h = td * (h + th - 1)  # the input planes each output plane reads, stacked as rows
    return amp.ConvProblem(
        n * d, h, w, in_d_h, w + tw - 1, td * th, tw, 1, cout, cin, transform_elements=flipped
    )


def resize_problem(
    op: str, in_specs: Sequence[TensorSpec], out_specs: Sequence[TensorSpec], attrs: dict[str, Any]
) -> amp.ConvProblem:
    """An up-sampling pass as tf2xla lowers it (``ResizeUsingDilationAndConvolution``): a
    depthwise convolution (one conv group per channel) of the input dilated by the scale (stride
    1; of its kernel's ``2·scale − 1`` taps per resized axis, those meeting real pixels: two for
    bilinear, one for nearest); its gradient is the strided depthwise convolution with that
    kernel. An axis with scale 1 has one tap. (E: with the half-pixel offset tf2xla's kernel can
    be one tap longer; the planner's problem has one stride for both axes, the resized one's.)
    """
    sh, sw = (int(v) for v in attrs["scale"])
    taps = 2 if attrs.get("method", "bilinear") == "bilinear" else 1
    th, tw = (taps if sh > 1 else 1), (taps if sw > 1 else 1)
    if op == "resize":
        n, ho, wo, channels = dims(out_specs[0])
        return amp.ConvProblem(
            n, ho, wo, ho + th - 1, wo + tw - 1, th, tw, 1, 1, 1, groups=channels
        )
    n, h, w, channels = dims(out_specs[0])
    kh, kw = th * sh, tw * sw
    return amp.ConvProblem(
        n, h, w, (h - 1) * sh + kh, (w - 1) * sw + kw, kh, kw, max(sh, sw), 1, 1, groups=channels
    )
