"""Normalisation ops: batch and layer normalisation, each with a dedicated backward op.

``batch_norm`` has three outputs ``(y, mean, variance)``:

- ``training=True`` normalises with the batch statistics over every axis except ``axis`` and returns
  them: the batch mean and the **biased** batch variance (divided by the element count ``M``, as
  TensorFlow's fused batch norm uses for normalisation), computed as the IPU does: in one pass
  (mean of squares less the squared mean), or in two with ``norms.use_stable_statistics``. A
  layer that wants the unbiased variance for its moving average (the fused TF path applies
  Bessel's correction) multiplies by ``M / (M − 1)`` itself.
- ``training=False`` normalises with ``moving_mean`` / ``moving_var`` and returns them unchanged.

Gradients flow from output 0 only: gradients arriving at outputs 1 and 2 (the statistics) are
ignored, and no gradient flows into the moving statistics. In training mode the backward pass is
the full batch-norm backward (the statistics depend on ``x``); in inference mode it is the affine
backward ``dx = γ·dy/√(var + ε)``.

``layer_norm`` normalises over the trailing axes (Keras ``LayerNormalization`` defaults:
``axis=-1``, ``epsilon=1e-3``) with the biased variance: as ``tf.nn.moments`` computes it, or
(``fused=True``) as the IPU's fused batch norm over each row does.
"""

from __future__ import annotations

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1, apply_multi
from ipusim.graph.numerics import computes_half, numerics_of
from ipusim.graph.op import Op, OpCost, Specs, io_cost, register
from ipusim.graph.spec import Array, Shape, TensorSpec
from ipusim.kernels import norm as k
from ipusim.kernels.half import round_to_half, stream_key


def _check_float(op: str, arg: str, spec: TensorSpec) -> None:
    if spec.dtype not in ("float32", "float64"):
        raise InvalidTypeError(f"{op}: {arg} must be float32 or float64, received {spec.dtype}")


def _check_like(op: str, arg: str, spec: TensorSpec, shape: Shape, dtype: str) -> None:
    if spec.dtype != dtype:
        raise InvalidTypeError(
            f"{op}: {arg} has dtype {spec.dtype} but x has {dtype}; cast it to match"
        )
    if len(spec.shape) != len(shape) or not all(
        a is None or b is None or a == b for a, b in zip(spec.shape, shape, strict=True)
    ):
        raise ConfigurationError(f"{op}: {arg} must have shape {shape}, received {spec.shape}")


def _check_epsilon(op: str, epsilon: object) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not epsilon >= 0:
        raise ConfigurationError(
            f"{op}: epsilon must be a non-negative float, received {epsilon!r}"
        )
    return float(epsilon)


def normalize_axis(op: str, axis: object, rank: int) -> int:
    """``axis`` (possibly negative) as an index in ``[0, rank)``."""
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer) or not -rank <= axis < rank:
        raise ConfigurationError(
            f"{op}: axis must be an int in [{-rank}, {rank}) for an input of rank "
            f"{rank}, received {axis!r}"
        )
    return int(axis) % rank


# ---------------------------------------------------------------------------------- batch norm
@register
class BatchNorm(Op):
    """Batch normalisation; outputs ``(y, mean, variance)`` (see the module docstring)."""

    name = "batch_norm"
    kind = "reduction"
    num_outputs = 3

    def infer(
        self,
        x: TensorSpec,
        gamma: TensorSpec,
        beta: TensorSpec,
        moving_mean: TensorSpec,
        moving_var: TensorSpec,
        *,
        training: bool,
        epsilon: float = 1e-3,
        axis: int = -1,
    ) -> tuple[TensorSpec, TensorSpec, TensorSpec]:
        if not isinstance(training, bool):
            raise InvalidTypeError(f"batch_norm: training must be a bool, received {training!r}")
        _check_epsilon(self.name, epsilon)
        _check_float(self.name, "x", x)
        ax = normalize_axis(self.name, axis, x.rank)
        vec = (x.shape[ax],)
        args = ("gamma", "beta", "moving_mean", "moving_var")
        for arg, spec in zip(args, (gamma, beta, moving_mean, moving_var), strict=True):
            _check_like(self.name, arg, spec, vec, x.dtype)
        stats = TensorSpec(vec if vec[0] is not None else gamma.shape, x.dtype)
        return x.with_shape(x.shape), stats, stats

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        gamma: Array,
        beta: Array,
        moving_mean: Array,
        moving_var: Array,
        *,
        training: bool,
        epsilon: float = 1e-3,
        axis: int = -1,
    ) -> tuple[Array, ...]:
        ax = normalize_axis(self.name, axis, x.ndim)
        if training:
            mean, var = _batch_statistics(ctx, x, ax)
        else:
            mean, var = moving_mean.copy(), moving_var.copy()
        return k.batch_norm_apply(x, mean, var, gamma, beta, epsilon, ax), mean, var

    def gradient(
        self, node: Node, dy: Symbol | None, dmean: Symbol | None, dvar: Symbol | None
    ) -> list[Symbol | None]:
        # Gradients into the statistics outputs are ignored (documented in the module docstring).
        if dy is None:
            return [None] * 5
        x, gamma = node.inputs[:2]
        _, mean, var = node.outputs
        dx, dgamma, dbeta = apply_multi("batch_norm_grad", dy, x, gamma, mean, var, **node.attrs)
        return [dx, dgamma, dbeta, None, None]

    def cost(self, in_specs: Specs, out_specs: Specs, *, training: bool, **attrs: object) -> OpCost:
        size = in_specs[0].size
        # Statistics: a sum, then subtract-square-add per element; applying: multiply-add.
        if training:
            return io_cost(6 * size, in_specs, out_specs, "reduction")
        return io_cost(2 * size, in_specs, out_specs, "elementwise")


def _batch_statistics(ctx: ExecContext, x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """The batch mean and biased variance as the IPU computes them: one pass, or two with
    ``norms.use_stable_statistics``; half-precision activations store the mean (and the
    deviations) as half (see :func:`ipusim.kernels.norm.ipu_batch_norm_stats`)."""
    numerics = numerics_of(ctx)
    to_half = None
    if computes_half(ctx):
        keys = iter(range(1, 3))

        def to_half(values: np.ndarray) -> np.ndarray:
            rounded, overflows = round_to_half(
                values,
                stochastic=numerics.stochastic_rounding,
                key=stream_key(ctx.rounding_key, next(keys)),
                nan_on_overflow=numerics.nan_on_overflow,
            )
            ctx.overflows += overflows
            return rounded

    return k.ipu_batch_norm_stats(x, axis, stable=numerics.stable_norm_statistics, to_half=to_half)


def batch_norm(
    x: TensorLike,
    gamma: TensorLike,
    beta: TensorLike,
    moving_mean: TensorLike,
    moving_var: TensorLike,
    *,
    training: bool,
    epsilon: float = 1e-3,
    axis: int = -1,
) -> tuple[Symbol, Symbol, Symbol]:
    """Batch normalisation ``γ·(x − mean)/√(var + ε) + β`` per channel along ``axis``.

    Args:
        x: input of any rank ≥ 1.
        gamma, beta: scale and offset, shape ``(C,)`` with ``C = x.shape[axis]``.
        moving_mean, moving_var: the layer's moving statistics, shape ``(C,)``.
        training: True to normalise with the batch statistics (and return them), False to use
            the moving statistics.
        epsilon: added to the variance before the square root.
        axis: the channel axis (the one that is *not* reduced).

    Returns:
        ``(y, mean, variance)``: the normalised tensor and the statistics used (batch mean and
        biased batch variance when training; the moving statistics otherwise).
    """
    y, mean, variance = apply_multi(
        "batch_norm",
        x,
        gamma,
        beta,
        moving_mean,
        moving_var,
        training=bool(training),
        epsilon=_check_epsilon("batch_norm", epsilon),
        axis=axis,
    )
    return y, mean, variance


@register
class BatchNormGrad(Op):
    """Backward of batch_norm: ``(dx, dgamma, dbeta)`` from ``dy`` and the statistics used."""

    name = "batch_norm_grad"
    kind = "reduction"
    num_outputs = 3

    def infer(
        self,
        dy: TensorSpec,
        x: TensorSpec,
        gamma: TensorSpec,
        mean: TensorSpec,
        var: TensorSpec,
        *,
        training: bool,
        epsilon: float = 1e-3,
        axis: int = -1,
    ) -> tuple[TensorSpec, TensorSpec, TensorSpec]:
        _check_float(self.name, "x", x)
        _check_like(self.name, "dy", dy, x.shape, x.dtype)
        vec = (x.shape[normalize_axis(self.name, axis, x.rank)],)
        for arg, spec in (("gamma", gamma), ("mean", mean), ("var", var)):
            _check_like(self.name, arg, spec, vec, x.dtype)
        return x.with_shape(x.shape), gamma.with_shape(gamma.shape), gamma.with_shape(gamma.shape)

    def forward(
        self,
        ctx: ExecContext,
        dy: Array,
        x: Array,
        gamma: Array,
        mean: Array,
        var: Array,
        *,
        training: bool,
        epsilon: float = 1e-3,
        axis: int = -1,
    ) -> tuple[Array, ...]:
        return k.batch_norm_grad(
            dy, x, gamma, mean, var, epsilon, normalize_axis(self.name, axis, x.ndim), training
        )

    def cost(self, in_specs: Specs, out_specs: Specs, *, training: bool, **attrs: object) -> OpCost:
        # Two reductions (Σdy, Σdy·x̂) then the dx formula; inference needs the reductions only
        # for dgamma/dbeta and a multiply per element.
        return io_cost((9 if training else 5) * in_specs[1].size, in_specs, out_specs, "reduction")


# ---------------------------------------------------------------------------------- layer norm
def _first_norm_axis(op: str, axis: object, rank: int) -> int:
    """The first of the normalised axes, which must be the trailing axes of the input."""
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    if not axes:
        raise ConfigurationError(f"{op}: axis must name at least one axis, received {axis!r}")
    norm = sorted({normalize_axis(op, a, rank) for a in axes})
    if norm != list(range(norm[0], rank)):
        raise ConfigurationError(
            f"{op}: axis must be the trailing axes of the input (e.g. -1, or "
            f"(-2, -1)); received {axis!r} for an input of rank {rank}"
        )
    return norm[0]


@register
class LayerNorm(Op):
    """Layer normalisation over the trailing axes, with ``gamma``/``beta`` of those axes' shape."""

    name = "layer_norm"
    kind = "reduction"

    def infer(
        self,
        x: TensorSpec,
        gamma: TensorSpec,
        beta: TensorSpec,
        *,
        axis: object = -1,
        epsilon: float = 1e-3,
        fused: bool = False,
    ) -> TensorSpec:
        _check_float(self.name, "x", x)
        _check_epsilon(self.name, epsilon)
        first = _first_norm_axis(self.name, axis, x.rank)
        for arg, spec in (("gamma", gamma), ("beta", beta)):
            _check_like(self.name, arg, spec, x.shape[first:], x.dtype)
        return x.with_shape(x.shape)

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        gamma: Array,
        beta: Array,
        *,
        axis: object = -1,
        epsilon: float = 1e-3,
        fused: bool = False,
    ) -> Array:
        first = _first_norm_axis(self.name, axis, x.ndim)
        return k.layer_norm(x, gamma, beta, epsilon, first, _one_pass(ctx, x, fused))

    def gradient(self, node: Node, dy: Symbol) -> list[Symbol]:
        x, gamma, _ = node.inputs
        return list(apply_multi("layer_norm_grad", dy, x, gamma, **node.attrs))

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(8 * in_specs[0].size, in_specs, out_specs, "reduction")


def _one_pass(ctx: ExecContext, x: np.ndarray, fused: bool) -> bool:
    """Whether a layer norm's row statistics take PopLibs' single pass: the fused kernel (see
    :func:`layer_norm`) on float32 rows, unless ``norms.use_stable_statistics``."""
    return fused and x.dtype == np.float32 and not numerics_of(ctx).stable_norm_statistics


def layer_norm(
    x: TensorLike,
    gamma: TensorLike,
    beta: TensorLike,
    *,
    axis: object = -1,
    epsilon: float = 1e-3,
    fused: bool = False,
) -> Symbol:
    """Layer normalisation ``γ·(x − mean)/√(var + ε) + β`` over the trailing ``axis`` (or axes).

    Args:
        x: input of any rank ≥ 1.
        gamma, beta: scale and offset with the shape of the normalised axes.
        axis: an int or a tuple of ints naming the trailing axes to normalise over.
        epsilon: added to the (biased) variance before the square root.
        fused: the statistics come from a fused batch norm over each row, as Keras'
            ``LayerNormalization`` computes them when it can (float32 variables, ε ≥ 1.001e-5);
            on the IPU that is PopLibs' ``normStatistics``: one pass (the mean of squares less
            the squared mean) unless ``norms.use_stable_statistics``. False: ``tf.nn.moments``
            (the mean, then the mean squared deviation).
    """
    axis = tuple(axis) if isinstance(axis, list | tuple) else axis
    return apply1(
        "layer_norm",
        x,
        gamma,
        beta,
        axis=axis,
        epsilon=_check_epsilon("layer_norm", epsilon),
        fused=bool(fused),
    )


@register
class LayerNormGrad(Op):
    """Backward of layer_norm: ``(dx, dgamma, dbeta)``; the row statistics are recomputed."""

    name = "layer_norm_grad"
    kind = "reduction"
    num_outputs = 3

    def infer(
        self,
        dy: TensorSpec,
        x: TensorSpec,
        gamma: TensorSpec,
        *,
        axis: object = -1,
        epsilon: float = 1e-3,
        fused: bool = False,
    ) -> tuple[TensorSpec, TensorSpec, TensorSpec]:
        _check_float(self.name, "x", x)
        _check_like(self.name, "dy", dy, x.shape, x.dtype)
        first = _first_norm_axis(self.name, axis, x.rank)
        _check_like(self.name, "gamma", gamma, x.shape[first:], x.dtype)
        return x.with_shape(x.shape), gamma.with_shape(gamma.shape), gamma.with_shape(gamma.shape)

    def forward(
        self,
        ctx: ExecContext,
        dy: Array,
        x: Array,
        gamma: Array,
        *,
        axis: object = -1,
        epsilon: float = 1e-3,
        fused: bool = False,
    ) -> tuple[Array, ...]:
        first = _first_norm_axis(self.name, axis, x.ndim)
        return k.layer_norm_grad(dy, x, gamma, epsilon, first, _one_pass(ctx, x, fused))

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return io_cost(14 * in_specs[1].size, in_specs, out_specs, "reduction")
