"""The weight-update phase as graph ops: the cross-replica mean, gradient accumulation and the
optimizer's apply, and the one driver that executes them.

:func:`add_update` puts the phase in a training step's graph: ``cross_replica_mean`` (the mean
over replicas; lowering times it as the all-reduce of its gradients' bytes),
``accumulate_gradients`` and ``apply_gradients`` (their ``variable_cost`` is what the update of
one variable costs, :func:`accumulate_cost` and :func:`update_cost`; ``cost`` its sum). Each
op's ``forward`` does its part of the numbers. :func:`run_update` executes the three with every
replica's gradients (the mean node takes them as :class:`Replicas`), calling the gradient
observer in between: Keras' ``fit``, ``pipeline()`` and a custom loop's ``apply_gradients``
walk their graph's update nodes through it, and the eager accumulating wrappers
(``ipu.optimizers``, ``keras.ipu.optimizers``) run the same ops with their own attributes.
:class:`GradientAccumulator` is the state of ``accumulate_gradients``, with IPU TensorFlow's
semantics (``GradientAccumulationOptimizerV2`` and ``gradient_accumulation_dtype``):

* the accumulator has the requested dtype: None (the variable's), a dtype, or a callable
  ``variable -> dtype``. A float16 accumulator adds in half precision: the value, kept in float32
  storage (the kernels have no half path), is rounded to binary16 after every addition, with
  stochastic rounding when the run enables it. When the run computes float32 as half (precision
  fp16.16 / fp16.32) a float32 accumulator nobody asked for is half precision too;
* SUM adds, MEAN adds and divides by N once at the end, RUNNING_MEAN keeps the running mean
  (:mod:`ipusim.kernels.accumulate`);
* the gradient handed to the optimizer has the variable's dtype (the optimizer casts to it
  anyway).

:func:`trace_apply` adds an optimizer's update with traced gradients to the graph being traced:
the innermost trace on this thread's :func:`tracers` stack (the compat runtime's trace contexts
live there) records it.
"""

from __future__ import annotations

import functools
import operator
import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ipusim.errors import ConfigurationError, IncompatibleStateError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Symbol, apply, apply1
from ipusim.graph.numerics import Numerics, current_numerics
from ipusim.graph.op import Op, OpCost, register
from ipusim.graph.spec import Array, TensorSpec, canonical_dtype
from ipusim.kernels.accumulate import accumulate, finish
from ipusim.kernels.half import round_to_half, stream_key
from ipusim.pipelining import GradientAccumulationReductionMethod

if TYPE_CHECKING:
    from ipusim.graph.variable import Variable

__all__ = [
    "GradientAccumulator",
    "Replicas",
    "UpdateOp",
    "UpdateTracer",
    "accumulate_cost",
    "add_update",
    "cross_replica_mean",
    "has_traced_gradient",
    "optimizer_cost",
    "run_update",
    "trace_apply",
    "tracers",
    "update_cost",
]

#: Stream of the accumulators' stochastic rounding (``stream_key(seed, _ACC_STREAM, step, i)``).
_ACC_STREAM = 0xACC

#: The accumulator dtype: None (the variable's), a dtype, or ``callable(variable) -> dtype``.
DtypeSelector: TypeAlias = "DTypeLike | Callable[[Variable], DTypeLike | None] | None"
#: ``observe(grads, variables, stage)``: sees each call's gradients (stage ``"computed"``; what
#: it returns, when not None, replaces them) and those applied (stage ``"apply"``).
GradientObserver: TypeAlias = (
    "Callable[[list[ArrayLike], list[Variable], str], Sequence[ArrayLike] | None]"
)


class GradientAccumulator:
    """Accumulates one gradient per variable over ``num_mini_batches`` calls of :meth:`add`.

    Args:
        num_mini_batches: gradients per window (a positive int).
        reduction_method: a ``GradientAccumulationReductionMethod`` or its name (any case).
        dtype: the accumulator dtype (see the module docstring).

    Raises:
        ValueError: ``num_mini_batches`` is not a positive int, or an unknown reduction method
            (IPU TensorFlow's messages).
    """

    def __init__(
        self, num_mini_batches: int, reduction_method: object = "sum", dtype: DtypeSelector = None
    ) -> None:
        n = num_mini_batches
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ConfigurationError(
                f"num_mini_batches must be a positive number: received {n!r}; pass the number "
                "of mini-batches to accumulate before each update, e.g. 4"
            )
        try:
            self.reduction_method = GradientAccumulationReductionMethod.parse(reduction_method)
        except ValueError:
            raise ConfigurationError(
                "reduction_method must be set to SUM, MEAN or RUNNING_MEAN, received "
                f"{reduction_method!r}"
            ) from None
        self.num_mini_batches = int(n)
        self.method = self.reduction_method.kernel_name
        self.dtype = dtype
        self.accumulators: list[np.ndarray] = []
        self._half: list[bool] = []
        self._variables: list[int] = []
        self.count = 0
        #: True right after the :meth:`add` that completed a window (its gradients are applied).
        self.complete = False
        self._calls = 0

    def dtype_of(self, variable: Variable) -> tuple[str, bool]:
        """The accumulator dtype of ``variable`` and whether it was asked for."""
        selector = self.dtype
        dtype = selector(variable) if callable(selector) else selector
        if dtype is None:
            return variable.value.dtype.name, False
        return canonical_dtype(dtype), True

    def _create(self, variables: Sequence[Variable], numerics: Numerics) -> None:
        self.accumulators, self._half = [], []
        self._variables = [id(v) for v in variables]
        for variable in variables:
            dtype, explicit = self.dtype_of(variable)
            storage = np.float64 if dtype == "float64" else np.float32
            self.accumulators.append(np.zeros(variable.shape, dtype=storage))
            self._half.append(
                dtype == "float16"
                or (dtype == "float32" and numerics.emulate_half and not explicit)
            )
        self.count = 0

    def add(
        self, grads: Sequence[ArrayLike], variables: Sequence[Variable], step: int | None = None
    ) -> list[np.ndarray] | None:
        """Fold one call's gradients in; the gradients to apply when the window is full.

        Args:
            grads: one gradient per variable (array-like).
            variables: the variables, in the same order at every call.
            step: the execution step keying stochastic rounding (default: calls so far).

        Returns:
            None while the window fills; then one gradient per variable, in its dtype (and the
            accumulators start again from zero).
        """
        numerics = current_numerics()
        step = self._calls if step is None else step
        self._calls += 1
        if self._variables != [id(v) for v in variables]:  # first call, or other variables
            self._create(variables, numerics)
        for index, (acc, grad) in enumerate(zip(self.accumulators, grads, strict=True)):
            accumulate(acc, np.asarray(grad, dtype=acc.dtype), self.count, self.method)
            self._round(index, numerics, step)
        self.count += 1
        self.complete = self.count == self.num_mini_batches
        if not self.complete:
            return None
        applied = []
        for index, (acc, variable) in enumerate(zip(self.accumulators, variables, strict=True)):
            finish(acc, self.num_mini_batches, self.method)
            self._round(index, numerics, step)
            applied.append(acc.astype(variable.value.dtype))
            acc[...] = 0
        self.count = 0
        return applied

    def _round(self, index: int, numerics: Numerics, step: int) -> None:
        """Round a half-precision accumulator (kept in float32 storage) after an update."""
        if not self._half[index]:
            return
        acc = self.accumulators[index]
        round_to_half(
            acc,
            stochastic=numerics.stochastic_rounding,
            key=stream_key(numerics.seed, _ACC_STREAM, step, index),
            nan_on_overflow=numerics.nan_on_overflow,
            out=acc,
        )


def cross_replica_mean(per_replica: Sequence[Sequence[ArrayLike]]) -> list[Array]:
    """The mean over replicas of each array (``per_replica[replica][i]``), as the all-reduce of
    ``CrossReplicaOptimizer`` and of a replicated Keras step computes it (one replica: its
    arrays as they are).

    The sum runs in float32 (float64 for float64 arrays); half-precision arrays (float16, or
    float32 when the run computes float32 as half) get the mean rounded to half once.
    """
    if len(per_replica) == 1:
        return [np.asarray(a) for a in per_replica[0]]
    numerics = current_numerics()
    out = []
    for arrays in zip(*per_replica):
        dtype = np.asarray(arrays[0]).dtype
        acc = np.zeros(np.shape(arrays[0]), dtype=np.float64 if dtype == np.float64 else np.float32)
        for count, array in enumerate(arrays):
            accumulate(acc, np.asarray(array, dtype=acc.dtype), count, "sum")
        finish(acc, len(arrays), "mean")
        if dtype == np.float16 or (dtype == np.float32 and numerics.emulate_half):
            acc = round_to_half(acc, nan_on_overflow=numerics.nan_on_overflow)[0]
        out.append(acc.astype(dtype, copy=False))
    return out


# ---------------------------------------------------------------------- costs
def accumulate_cost(shape: tuple[int | None, ...]) -> OpCost:
    """One gradient folded into its accumulator: a read of both, a write of the accumulator
    (float32, as the timing model stores accumulators)."""
    spec = TensorSpec(shape, "float32")
    return OpCost(spec.size, 2 * spec.nbytes, spec.nbytes, "elementwise")


def update_cost(shape: tuple[int | None, ...], slots: int, flops_per_element: int) -> OpCost:
    """One variable's optimizer update: reads the variable, its gradient and ``slots`` state
    arrays, writes the variable and the slots (float32)."""
    spec = TensorSpec(shape, "float32")
    n = spec.nbytes
    return OpCost(flops_per_element * spec.size, (2 + slots) * n, (1 + slots) * n, "elementwise")


#: What an optimizer that declares nothing costs: no slot arrays and 2 FLOPs per element
#: (D: plain SGD, a multiply and a subtract).
DEFAULT_SLOTS = 0
DEFAULT_UPDATE_FLOPS = 2


def optimizer_cost(optimizer: object) -> tuple[int, int]:
    """``(slots_per_variable, update_flops_per_element)`` an optimizer declares, the defaults
    above for what it does not say (the one place they live)."""
    return (
        int(getattr(optimizer, "slots_per_variable", DEFAULT_SLOTS)),
        int(getattr(optimizer, "update_flops_per_element", DEFAULT_UPDATE_FLOPS)),
    )


# ---------------------------------------------------------------------- ops
class Applier(Protocol):
    """What applies the update: ``apply_gradients(pairs)`` (plus ``captured_grads=`` for an
    optimizer that takes them)."""

    def apply_gradients(self, grads_and_vars: list[tuple[Array, Variable]], /) -> object: ...


class UpdateOptimizer(Applier, Protocol):
    """What the ``apply_gradients`` op needs of an optimizer: its update and what it costs."""

    @property
    def slots_per_variable(self) -> int: ...

    @property
    def update_flops_per_element(self) -> int: ...


class UpdateOp(Op):
    """An update-phase op: lowered one superstep per variable from :meth:`variable_cost`."""

    @abstractmethod
    def variable_cost(self, shape: tuple[int | None, ...], **attrs: Any) -> tuple[OpCost, int]:
        """The update of one variable of ``shape``: its cost, and how many float32 arrays of
        that shape it reads."""

    def cost(
        self, in_specs: Sequence[TensorSpec], out_specs: Sequence[TensorSpec], **attrs: Any
    ) -> OpCost:
        costs = [self.variable_cost(s.shape, **attrs)[0] for s in in_specs]
        return functools.reduce(operator.add, costs)


@register
class AccumulateGradients(UpdateOp):
    """Folds one gradient per variable into ``accumulator``; outputs the accumulated gradients
    (the finished ones when the call completes the window). Attributes: ``accumulator`` (a
    :class:`GradientAccumulator`, or None: a window of one, each gradient passes through as it
    is), ``variables``. Lowering times it only when the run accumulates."""

    name = "accumulate_gradients"
    kind = "elementwise"
    num_outputs = -1  # VARIADIC: one per variable

    def infer(
        self,
        *grads: TensorSpec,
        accumulator: GradientAccumulator | None,
        variables: Sequence[Variable],
    ) -> tuple[TensorSpec, ...]:
        if accumulator is None:
            return tuple(TensorSpec(g.shape, g.dtype) for g in grads)
        return tuple(TensorSpec(g.shape, v.value.dtype.name) for g, v in zip(grads, variables))

    def forward(
        self,
        ctx: ExecContext | None,
        *grads: ArrayLike,
        accumulator: GradientAccumulator | None,
        variables: Sequence[Variable],
    ) -> tuple[Array, ...]:
        if accumulator is None:
            return tuple(np.asarray(g) for g in grads)
        step = None if ctx is None else ctx.step
        applied = accumulator.add(list(grads), list(variables), step)
        if applied is None:
            applied = [a.astype(v.value.dtype) for a, v in zip(accumulator.accumulators, variables)]
        return tuple(applied)

    def variable_cost(self, shape: tuple[int | None, ...], **attrs: Any) -> tuple[OpCost, int]:
        """One variable's share: its cost and how many float32 arrays of its shape it reads
        (the accumulator and the gradient). Lowering makes one superstep of each."""
        return accumulate_cost(shape), 2


@register
class ApplyGradients(UpdateOp):
    """The optimizer's update of ``variables`` from one gradient each (run when ``accumulator``
    is None or has just completed a window); outputs the optimizer's iteration count.
    Attributes: ``optimizer``, ``variables``, ``accumulator`` (optional); ``captured_grads``
    (the gradients ``keras.ipu.layers`` captured, for an optimizer that takes them) comes from
    :func:`run_update`."""

    name = "apply_gradients"
    kind = "elementwise"

    def infer(
        self,
        *grads: TensorSpec,
        optimizer: UpdateOptimizer,
        variables: Sequence[Variable],
        accumulator: GradientAccumulator | None = None,
    ) -> TensorSpec:
        return TensorSpec((), "int64")

    def forward(
        self,
        ctx: ExecContext | None,
        *grads: Array,
        optimizer: Applier,
        variables: Sequence[Variable],
        accumulator: GradientAccumulator | None = None,
        captured_grads: Mapping[str, ArrayLike] | None = None,
    ) -> Array:
        if accumulator is None or accumulator.complete:
            kwargs = {} if captured_grads is None else {"captured_grads": captured_grads}
            optimizer.apply_gradients(list(zip(grads, variables)), **kwargs)
        return np.asarray(getattr(optimizer, "iterations", 0), dtype=np.int64)

    def variable_cost(self, shape: tuple[int | None, ...], **attrs: Any) -> tuple[OpCost, int]:
        """One variable's share: its update's cost and how many float32 arrays of its shape
        it reads (the variable, the gradient and the ``optimizer`` attribute's slots)."""
        slots, flops = optimizer_cost(attrs["optimizer"])
        return update_cost(shape, slots, flops), 2 + slots


@register
class CrossReplicaMean(Op):
    """Each gradient's mean over the replicas (IPU TensorFlow's ``cross_replica_mean``, the
    all-reduce of ``CrossReplicaOptimizer`` and of a replicated Keras step); lowering times it
    as the all-reduce of its inputs' bytes. ``forward`` takes the mean over each input's
    :class:`Replicas` (what :func:`run_update` feeds it); the graph executor runs one
    replica's trace, whose gradients pass through. Attribute: ``variables``, the variable of
    each gradient."""

    name = "cross_replica_mean"
    kind = "data_movement"
    num_outputs = -1  # VARIADIC: one per gradient

    def infer(self, *grads: TensorSpec, variables: Sequence[Variable]) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(g.shape, g.dtype) for g in grads)

    def forward(
        self, ctx: ExecContext | None, *grads: ArrayLike | Replicas, variables: Sequence[Variable]
    ) -> tuple[Array, ...]:
        """Each gradient's mean over its :class:`Replicas` (a plain array is one replica's)."""
        replicas = [g if isinstance(g, Replicas) else Replicas((g,)) for g in grads]
        return tuple(cross_replica_mean(list(zip(*replicas))))


class Replicas(tuple[ArrayLike, ...]):
    """One gradient on every replica (the graph executor runs one: a plain array)."""


_MEAN, _ACCUMULATE, _APPLY = CrossReplicaMean(), AccumulateGradients(), ApplyGradients()


# ---------------------------------------------------------------------- tracing
class UpdateTracer(Protocol):
    """A trace that records optimizer updates made with its traced gradients."""

    def trace_apply(self, optimizer: object, pairs: list[tuple[object, object]]) -> object: ...


_local = threading.local()


def tracers() -> list[UpdateTracer]:
    """This thread's traces that take optimizer updates, innermost last (the compat runtime
    keeps its trace contexts here, so entering a trace is all it takes)."""
    if not hasattr(_local, "stack"):
        _local.stack = []
    stack: list[UpdateTracer] = _local.stack
    return stack


def trace_apply(optimizer: object, pairs: list[tuple[object, object]]) -> object:
    """Add ``optimizer``'s update with traced gradients to the innermost trace.

    Raises:
        IncompatibleStateError: no trace is being built (the gradients outlived their function).
    """
    stack = tracers()
    if not stack:
        raise IncompatibleStateError(
            "apply_gradients received traced gradients outside a device function; call it in "
            "the tf.function (or loop body) that computed them"
        )
    return stack[-1].trace_apply(optimizer, pairs)


def has_traced_gradient(pairs: Sequence[object]) -> bool:
    """Whether any ``(gradient, variable)`` pair holds a traced gradient (a graph Symbol);
    malformed pairs count as not traced (``apply_gradients`` reports them)."""
    return any(isinstance(p, tuple | list) and p and isinstance(p[0], Symbol) for p in pairs)


def run_update(
    done: Symbol | None,
    per_replica: Sequence[Sequence[ArrayLike]],
    *,
    variables: Sequence[Variable] | None = None,
    optimizer: Applier | None = None,
    accumulator: GradientAccumulator | None = None,
    captured_grads: Mapping[str, ArrayLike] | None = None,
    step: int | None = None,
    observe: GradientObserver | None = None,
) -> Array | None:
    """Execute the update phase on every replica's gradients (``per_replica[replica][i]``): the
    ops of the nodes :func:`add_update` made (``done``, its result; None: no graph, an eager
    optimizer call), each ``forward`` with its node's attributes or those given (not None).

    The replicas' mean; ``observe(grads, variables, "computed")`` (what it returns, when not
    None, replaces them); accumulation (``step`` keys stochastic rounding; None: the
    accumulator's call count); when the window is complete, ``observe(..., "apply")`` and the
    apply (with ``captured_grads`` when given). Returns the apply's output (the optimizer's
    iterations), or None while the window fills.
    """
    if done is not None:  # the apply node, its accumulation node before it
        applies, accumulates = done.node, done.node.inputs[0].node
        variables = applies.attrs["variables"] if variables is None else variables
        optimizer = applies.attrs["optimizer"] if optimizer is None else optimizer
        if accumulator is None:
            accumulator = accumulates.attrs["accumulator"]
    variables = list(variables or ())
    ctx = None if step is None else ExecContext(training=True, step=step)
    grads: Sequence[ArrayLike] = _MEAN.forward(
        ctx, *map(Replicas, zip(*per_replica)), variables=variables
    )
    if observe is not None:
        replaced = observe(list(grads), variables, "computed")
        grads = grads if replaced is None else replaced
    grads = _ACCUMULATE.forward(ctx, *grads, accumulator=accumulator, variables=variables)
    if accumulator is not None and not accumulator.complete:
        return None
    if observe is not None:
        observe(list(grads), variables, "apply")
    assert optimizer is not None, "run_update needs an optimizer or an apply_gradients node"
    return _APPLY.forward(
        ctx,
        *grads,
        optimizer=optimizer,
        variables=variables,
        accumulator=accumulator,
        captured_grads=captured_grads,
    )


def add_update(
    grads: Sequence[Symbol],
    variables: Sequence[Variable],
    optimizer: UpdateOptimizer,
    accumulator: GradientAccumulator | None = None,
) -> Symbol:
    """The update phase as nodes of the gradients' graph: ``cross_replica_mean`` (the
    all-reduce over replicas), ``accumulate_gradients`` (without an accumulator the gradients
    pass through) then ``apply_gradients``. Keep the returned Symbol as a side effect; lowering
    builds the all-reduce, accumulation and weight-update supersteps from these nodes
    (:mod:`ipusim.lowering.update`)."""
    grads = list(apply("cross_replica_mean", *grads, variables=variables))
    grads = list(
        apply("accumulate_gradients", *grads, accumulator=accumulator, variables=variables)
    )
    return apply1(
        "apply_gradients", *grads, optimizer=optimizer, variables=variables, accumulator=accumulator
    )
