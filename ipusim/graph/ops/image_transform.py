"""``image_transform`` (TensorFlow's ImageProjectiveTransformV3) and ``augment_transforms`` (the
random per-image maps of Keras' RandomRotation, RandomTranslation and RandomZoom).

The gradient w.r.t. the images is what TensorFlow registers for ImageProjectiveTransformV3: the
incoming gradient warped by the inverse maps with fill value 0 (tensorflow/python/ops/
image_grad.py), not the exact adjoint of the bilinear sampling, so training matches TensorFlow's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.spec import FLOAT_DTYPES, Array, TensorSpec
from ipusim.kernels import image_transform as k
from ipusim.kernels import random as kr

#: FLOPs per output element: the map (8 multiply-adds and a divide per pixel, shared by the
#: channels, counted once per element as an upper bound) plus bilinear's 4 taps x 2 and the
#: 3 blends x 3; nearest reads one tap. D
FLOPS_PER_ELEMENT = {"bilinear": 18 + 17, "nearest": 18 + 1}

KINDS = ("rotation", "translation", "zoom")


@register
class ImageTransform(Op):
    """Warp ``images`` (batch, H, W, C) by ``transforms`` (batch or 1, 8); ``inverse`` warps by
    the inverse maps instead (the gradient's form)."""

    name = "image_transform"
    kind = "data_movement"

    def infer(
        self,
        images: TensorSpec,
        transforms: TensorSpec,
        *,
        interpolation: str,
        fill_mode: str,
        fill_value: float,
        inverse: bool = False,
    ) -> TensorSpec:
        if images.rank != 4 or images.dtype not in FLOAT_DTYPES:
            raise ConfigurationError(
                f"image_transform: images must be float (batch, H, W, C), received "
                f"{images.shape} {images.dtype}"
            )
        if transforms.rank != 2 or transforms.shape[1] != 8:
            raise ConfigurationError(
                f"image_transform: transforms must be (batch, 8), received {transforms.shape}"
            )
        if interpolation not in k.INTERPOLATIONS or fill_mode not in k.FILL_MODES:
            raise ConfigurationError(
                f"image_transform: interpolation {interpolation!r} / fill_mode {fill_mode!r} "
                f"not in {k.INTERPOLATIONS} / {k.FILL_MODES}"
            )
        return TensorSpec(images.shape, images.dtype)

    def forward(
        self,
        ctx: ExecContext,
        images: Array,
        transforms: Array,
        *,
        interpolation: str,
        fill_mode: str,
        fill_value: float,
        inverse: bool = False,
    ) -> Array:
        maps = k.invert(transforms) if inverse else transforms
        return k.transform(images, maps, interpolation, fill_mode, fill_value)

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol | None]:
        attrs = dict(node.attrs, fill_value=0.0, inverse=not node.attrs.get("inverse", False))
        return [apply1("image_transform", dy, node.inputs[1], **attrs), None]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        flops = FLOPS_PER_ELEMENT[attrs["interpolation"]] * out_specs[0].size
        return io_cost(flops, in_specs, out_specs, "elementwise")


def augment_matrices(kind: str, draws: np.ndarray, height: int, width: int) -> np.ndarray:
    """Keras' maps for uniform draws ``draws`` (batch, 2): rotation angles (radians, column 0),
    translations (fractions of height, width), zooms (height, width factors)."""
    h, w = float(height), float(width)
    n = draws.shape[0]
    out = np.zeros((n, 8), dtype=np.float32)
    if kind == "rotation":
        cos, sin = np.cos(draws[:, 0]), np.sin(draws[:, 0])
        out[:, 0], out[:, 1], out[:, 3], out[:, 4] = cos, -sin, sin, cos
        out[:, 2] = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
        out[:, 5] = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
    elif kind == "translation":
        dy = (draws[:, 0] * h).astype(np.float32)
        dx = (draws[:, 1] * w).astype(np.float32)
        out[:, 0], out[:, 4], out[:, 2], out[:, 5] = 1.0, 1.0, -dx, -dy
    else:
        zoom_h, zoom_w = draws[:, 0], draws[:, 1]
        out[:, 0], out[:, 4] = zoom_w, zoom_h
        out[:, 2] = (w - 1.0) / 2.0 * (1.0 - zoom_w)
        out[:, 5] = (h - 1.0) / 2.0 * (1.0 - zoom_h)
    return out


@register
class AugmentTransforms(Op):
    """Random maps for a batch of ``images``: ``kind`` rotation (angle uniform in
    [low0, high0] radians), translation (fractions of height and width uniform in
    [low0, high0] and [low1, high1]) or zoom (factors likewise; ``same`` uses the height's for
    the width). Drawn from the op's seed and the step like every random op."""

    name = "augment_transforms"
    kind = "elementwise"

    def infer(
        self,
        images: TensorSpec,
        *,
        kind: str,
        seed: int,
        bounds: tuple[float, ...],
        same: bool = False,
    ) -> TensorSpec:
        if kind not in KINDS:
            raise ConfigurationError(
                f"augment_transforms: kind must be one of {KINDS}, got {kind!r}"
            )
        return TensorSpec((images.shape[0], 8), "float32")

    def forward(
        self,
        ctx: ExecContext,
        images: Array,
        *,
        kind: str,
        seed: int,
        bounds: tuple[float, ...],
        same: bool = False,
    ) -> Array:
        n = images.shape[0]
        u = kr.draw("uniform", (n, 2), seed, ctx.step, 0.0, 1.0, np.float32)
        low = np.array(bounds[0::2], np.float32)
        high = np.array(bounds[1::2], np.float32)
        draws = low + (high - low) * u
        if same:
            draws[:, 1] = draws[:, 0]
        return augment_matrices(kind, draws, images.shape[1], images.shape[2])

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        # A few dozen scalar operations per image (two draws, a sine and a cosine). E
        flops = 32 * out_specs[0].shape[0] if out_specs[0].shape[0] else 32
        return OpCost(flops, 0, out_specs[0].nbytes, "elementwise")


def image_transform(
    images: TensorLike,
    transforms: TensorLike,
    interpolation: str = "bilinear",
    fill_mode: str = "reflect",
    fill_value: float = 0.0,
) -> Symbol:
    """``tf.raw_ops.ImageProjectiveTransformV3`` with the output size of the input."""
    return apply1(
        "image_transform",
        images,
        transforms,
        interpolation=interpolation,
        fill_mode=fill_mode,
        fill_value=float(fill_value),
        inverse=False,
    )


def augment_transforms(
    images: TensorLike, kind: str, seed: int, bounds: Iterable[float], same: bool = False
) -> Symbol:
    """Random maps (batch, 8) for ``images`` (see :class:`AugmentTransforms`)."""
    return apply1(
        "augment_transforms",
        images,
        kind=kind,
        seed=int(seed),
        bounds=tuple(float(b) for b in bounds),
        same=bool(same),
    )
