"""Random tensors drawn on the device: ``random_tensor`` (uniform, normal, truncated normal,
integers) and ``random_categorical``, with fresh values at every execution of a traced function
(the executor's step is part of the stream key; see :mod:`ipusim.kernels.random_draws`).

No gradient flows into a random draw (its inputs, if any, are the logits of a categorical draw,
which TensorFlow does not differentiate either).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import SupportsInt

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.spec import FLOAT_DTYPES, Array, Shape, TensorSpec, canonical_dtype
from ipusim.kernels import random_draws as k

#: FLOPs per element drawn: splitmix64 is ~10 integer operations; Box-Muller adds a log, a sqrt
#: and a cos (4 each, as ipusim.graph.ops.math.FLOPS_PER_ELEMENT counts transcendentals) (E).
DRAW_FLOPS: dict[str, int] = {"uniform": 12, "integers": 13, "normal": 36, "truncated_normal": 40}


@register
class RandomDraw(Op):
    """A tensor of ``shape`` drawn from ``dist`` (attrs ``a``, ``b``: bounds, or mean and stddev)."""

    name = "random_tensor"
    kind = "elementwise"

    def infer(
        self,
        *,
        shape: Shape,
        dist: str,
        a: float,
        b: float,
        seed: int,
        dtype: str,
        stateless: bool = False,
    ) -> TensorSpec:
        if dist not in k.DIST_CODES:
            raise ConfigurationError(f"random_tensor: unknown distribution {dist!r}")
        if any(d is None or d < 0 for d in shape):
            raise ConfigurationError(
                f"random: `shape` must be known non-negative sizes, received {shape}"
            )
        if dist == "integers" and canonical_dtype(dtype) in FLOAT_DTYPES:
            raise InvalidTypeError("random_tensor: integer draws need an integer dtype")
        return TensorSpec(tuple(shape), canonical_dtype(dtype))

    def forward(
        self,
        ctx: ExecContext,
        *,
        shape: tuple[int, ...],
        dist: str,
        a: float,
        b: float,
        seed: int,
        dtype: str,
        stateless: bool = False,
    ) -> Array:
        # A stateless draw depends on its seed only; others also on the execution step.
        return k.draw(tuple(shape), dist, a, b, seed, 0 if stateless else ctx.step, dtype)

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, *, dist: str, **attrs: object) -> OpCost:
        return io_cost(DRAW_FLOPS[dist] * out_specs[0].size, in_specs, out_specs, "elementwise")


@register
class RandomCategorical(Op):
    """``num_samples`` class indices per row of 2-D ``logits``."""

    name = "random_categorical"
    kind = "elementwise"

    def infer(self, logits: TensorSpec, *, num_samples: int, seed: int, dtype: str) -> TensorSpec:
        if logits.rank != 2 or logits.dtype not in FLOAT_DTYPES:
            raise ConfigurationError(
                "categorical: `logits` must be a 2-D float tensor [batch, classes], received "
                f"shape {logits.shape} dtype {logits.dtype}"
            )
        return TensorSpec((logits.shape[0], int(num_samples)), canonical_dtype(dtype))

    def forward(
        self, ctx: ExecContext, logits: Array, *, num_samples: int, seed: int, dtype: str
    ) -> Array:
        return k.categorical(logits, num_samples, seed, ctx.step, dtype)

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        classes = in_specs[0].shape[1] or 1
        # exp per class per sample (4 FLOPs each) plus the running sum (E).
        return io_cost(5 * classes * out_specs[0].size, in_specs, out_specs, "elementwise")


def random_draw(
    shape: Iterable[SupportsInt],
    dist: str,
    a: float,
    b: float,
    seed: int,
    dtype: object,
    stateless: bool = False,
) -> Symbol:
    """A random tensor of ``shape`` (see :class:`RandomDraw`); ``stateless`` draws ignore the
    execution step (``tf.random.stateless_*``)."""
    return apply1(
        "random_tensor",
        seed=int(seed),
        dtype=canonical_dtype(dtype),
        stateless=bool(stateless),
        shape=tuple(int(d) for d in shape),
        dist=dist,
        a=float(a),
        b=float(b),
    )


def random_categorical(logits: TensorLike, num_samples: int, seed: int, dtype: object) -> Symbol:
    """Class indices drawn from ``softmax(logits)`` (see :class:`RandomCategorical`)."""
    return apply1(
        "random_categorical",
        logits,
        num_samples=int(num_samples),
        seed=int(seed),
        dtype=canonical_dtype(dtype),
    )


__all__ = ["random_categorical", "random_draw"]
