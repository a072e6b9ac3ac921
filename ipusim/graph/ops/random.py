"""Random ops: dropout, with masks that are a pure function of (seed, step, element index).

The mask is never stored. Forward and backward both call the same counter-based kernel
(:mod:`ipusim.kernels.random`) with the op's ``seed`` and the run's ``ExecContext.step``, so the
gradient of dropout is dropout itself: the same op with the same attributes applied to ``dy``,
which redraws exactly the forward mask as long as both run in the same step (as they do in a
training step). Outside training (``ExecContext.training`` False) dropout is the identity.
"""

from __future__ import annotations

from collections.abc import Sequence

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.spec import FLOAT_DTYPES, Array, Shape, TensorSpec
from ipusim.kernels import elementwise as ke
from ipusim.kernels import random as k

#: FLOPs per element: draw the random number and compare (counted as one, the IPU has a hardware
#: random number generator) plus one multiply.
FLOPS_PER_ELEMENT: dict[str, int] = {"dropout": 2}


def _fits(noise_shape: Shape, shape: Shape) -> bool:
    """Whether every noise_shape entry is 1, None or the (possibly unknown) axis size."""
    return len(noise_shape) == len(shape) and all(
        n in (None, 1) or d is None or n == d for n, d in zip(noise_shape, shape, strict=True)
    )


@register
class Dropout(Op):
    """In training, keep each element with probability ``1 - rate`` and scale kept ones by
    ``1 / (1 - rate)``; otherwise the identity.

    Attributes (op attrs): ``rate`` in [0, 1), ``seed`` (int), ``noise_shape`` (None, or one entry
    per axis: 1 to share the mask along that axis, ``None`` or the axis size otherwise).
    """

    name = "dropout"
    kind = "elementwise"

    def infer(
        self, x: TensorSpec, *, rate: float, seed: int, noise_shape: Shape | None = None
    ) -> TensorSpec:
        if x.dtype not in FLOAT_DTYPES:
            raise InvalidTypeError(f"dropout: x must be a float tensor, received dtype {x.dtype}")
        if not 0.0 <= rate < 1.0:
            raise ConfigurationError(f"dropout: rate must be in [0, 1), received {rate}")
        if noise_shape is not None and not _fits(noise_shape, x.shape):
            raise ConfigurationError(
                f"dropout: noise_shape {noise_shape} must have one entry per axis "
                f"of x (shape {x.shape}), each 1, None or the axis size"
            )
        return TensorSpec(x.shape, x.dtype)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        *,
        rate: float,
        seed: int,
        noise_shape: Shape | None = None,
    ) -> Array:
        if not ctx.training or rate == 0.0:
            return x
        if noise_shape is None:
            return k.dropout(x, seed, ctx.step, rate)
        shape = tuple(d if n is None else n for n, d in zip(noise_shape, x.shape, strict=True))
        if any(n not in (1, d) for n, d in zip(shape, x.shape, strict=True)):
            raise ConfigurationError(
                f"dropout: noise_shape {noise_shape} does not fit an input of shape {x.shape}"
            )
        return ke.multiply(x, k.dropout_mask(shape, seed, ctx.step, rate, x.dtype))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        # Same op, same seed, same step: the identical mask and scale applied to dy.
        return [apply1("dropout", dy, **node.attrs)]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        flops = FLOPS_PER_ELEMENT["dropout"] * out_specs[0].size
        return io_cost(flops, in_specs, out_specs, "elementwise")


def dropout(
    x: TensorLike, rate: float, seed: int, noise_shape: Sequence[int | None] | None = None
) -> Symbol:
    """Inverted dropout: active only when the executor runs with ``training=True``.

    Args:
        x: float tensor.
        rate: fraction of elements to drop, in [0, 1).
        seed: integer seed; with the execution step it fixes the mask.
        noise_shape: optional shape of the mask (1 on axes where it is shared; None = x's size).
    """
    shape = (
        None if noise_shape is None else tuple(None if d is None else int(d) for d in noise_shape)
    )
    return apply1("dropout", x, rate=float(rate), seed=int(seed), noise_shape=shape)
