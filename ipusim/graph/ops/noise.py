"""Random draws (uniform, normal, Bernoulli) and ``reverse``: what the noise layers and the image
augmentation layers need that composing other ops cannot express.

Draws are counter-based like dropout's masks (:mod:`ipusim.kernels.random`): the numbers are a pure
function of the op's ``seed``, the run's ``ExecContext.step`` and the element index, so the same
seed and step give the same numbers and each training step gets new ones. A draw depends on its
input only through its shape (the batch size may be unknown until run time), so no gradient flows
into that input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, TensorOperators, apply1
from ipusim.graph.op import Op, OpCost, Specs, no_gradient, register
from ipusim.graph.ops._window import known_dims
from ipusim.graph.ops.math import normalize_axes
from ipusim.graph.spec import FLOAT_DTYPES, Array, Shape, TensorSpec
from ipusim.kernels import layout
from ipusim.kernels import random as k

DISTRIBUTIONS = ("uniform", "normal", "bernoulli")

#: FLOPs per drawn element: the hardware random number generator gives one number per cycle
#: (counted as 1) plus the scaling (uniform, Bernoulli: 2); a normal draw is counted as the IPU's
#: ``poprand::normal`` (two uniforms, a log, a sqrt and a cosine: 2 + 3 x 4 transcendental FLOPs,
#: as ``math.FLOPS_PER_ELEMENT`` counts them). E.
FLOPS_PER_ELEMENT: dict[str, int] = {"uniform": 2, "normal": 14, "bernoulli": 2}


def _resolve(shape: Shape, like: Shape, op: str) -> Shape:
    if len(shape) != len(like):
        raise ConfigurationError(f"{op}: shape {shape} needs one entry per axis of {like}")
    return tuple(d if s is None else s for s, d in zip(shape, like, strict=True))


@register
class RandomDraw(Op):
    """Random numbers of ``shape`` (None entries take ``x``'s size on that axis).

    Attributes: ``distribution`` (uniform in [a, b), normal with mean a and standard deviation b,
    bernoulli: 1.0 with probability a), ``seed``, ``shape``, ``a``, ``b``. The output has ``x``'s
    float dtype.
    """

    name = "random_draw"
    kind = "elementwise"

    def infer(
        self, x: TensorSpec, *, distribution: str, seed: int, shape: Shape, a: float, b: float
    ) -> TensorSpec:
        if distribution not in DISTRIBUTIONS:
            raise ConfigurationError(
                f"random_draw: distribution must be one of {DISTRIBUTIONS}, received "
                f"{distribution!r}"
            )
        if x.dtype not in FLOAT_DTYPES:
            raise InvalidTypeError(
                f"random_draw: x must be a float tensor, received dtype {x.dtype}"
            )
        return TensorSpec(_resolve(shape, x.shape, self.name), x.dtype)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        *,
        distribution: str,
        seed: int,
        shape: Shape,
        a: float,
        b: float,
    ) -> Array:
        out_shape = _resolve(shape, x.shape, self.name)
        return k.draw(distribution, known_dims(out_shape), seed, ctx.step, a, b, x.dtype)

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        written = out_specs[0].nbytes  # only x's shape is read, not its data
        flops = FLOPS_PER_ELEMENT[attrs["distribution"]] * out_specs[0].size
        return OpCost(flops, 0, written, "elementwise")


@register
class Reverse(Op):
    """``x`` with its elements in reverse order along ``axes`` (``tf.reverse``)."""

    name = "reverse"
    kind = "data_movement"

    def infer(self, x: TensorSpec, *, axes: tuple[int, ...]) -> TensorSpec:
        normalize_axes(self.name, axes, x.rank)
        return TensorSpec(x.shape, x.dtype)

    def forward(self, ctx: ExecContext, x: Array, *, axes: tuple[int, ...]) -> Array:
        return layout.reverse(x, normalize_axes(self.name, axes, x.ndim))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        return [reverse(dy, node.attrs["axes"])]


def random_draw(
    x: TensorOperators,
    distribution: str,
    seed: int,
    shape: Sequence[int | None] | None = None,
    a: float = 0.0,
    b: float = 1.0,
) -> Symbol:
    """Random numbers for a training step (see :class:`RandomDraw`).

    Args:
        x: a float tensor; its dtype, and its sizes on axes where ``shape`` is None, are used.
        distribution: ``"uniform"``, ``"normal"`` or ``"bernoulli"``.
        seed: integer seed; with the execution step it fixes the numbers.
        shape: output shape (default ``x``'s); 1 on an axis shares the numbers along it.
        a, b: the distribution's parameters (see :class:`RandomDraw`).
    """
    rank = len(x.shape)
    shape = (None,) * rank if shape is None else tuple(None if d is None else int(d) for d in shape)
    return apply1(
        "random_draw",
        x,
        distribution=distribution,
        seed=int(seed),
        shape=shape,
        a=float(a),
        b=float(b),
    )


def reverse(x: TensorLike, axes: int | Iterable[int]) -> Symbol:
    """``x`` reversed along ``axes`` (an int or a sequence of ints)."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes)
    return apply1("reverse", x, axes=axes)
