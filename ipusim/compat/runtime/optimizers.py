"""IPU optimizer wrappers (``ipu.optimizers``, IPU TensorFlow 2.5) and optimizer updates in
traced code.

The wrappers take an ipusim Keras optimizer (``keras.optimizers.SGD``, ``Adam``, ...), which in
ipusim plays the part of both TensorFlow optimizer families (so IPU TensorFlow's "use
ipu.keras.optimizers to wrap V2 optimizers" restriction has nothing to separate here):

- :class:`CrossReplicaOptimizer`: the replicas' gradients are replaced by their **mean** before
  the update (the all-reduce; with one replica nothing changes);
- :class:`GradientAccumulationOptimizerV2`: gradients are accumulated over ``num_mini_batches``
  calls (SUM: added; MEAN: added then divided by N once; RUNNING_MEAN: a running mean), then the
  wrapped optimizer applies the result once;
- :class:`CrossReplicaGradientAccumulationOptimizerV2`: accumulation around a cross-replica
  optimizer, so the replicas combine once per N mini-batches;
- :class:`MapGradientOptimizer`: a function maps each gradient before the update.

In a traced function ``apply_gradients`` adds the update-phase graph ops
(:func:`~ipusim.graph.ops.update.add_update`, a side effect) with an :class:`ApplyHandle` as
their optimizer: each execution of its ``apply_gradients`` node hands the gradients to the
optimizer's update, which runs in Numba kernels as in Keras' own training loop, and lowering
times the same nodes. A plain Keras optimizer's ``apply_gradients`` given traced gradients does
the same: it asks the innermost trace (:meth:`TraceContext.trace_apply`) to record it.
Once every replica has staged its gradients, :meth:`ApplyHandle.apply_replicated` executes the
update nodes on them (:func:`ipusim.graph.ops.update.run_update`: the mean over replicas, then
the wrapper chain's apply); the accumulating wrappers run the same ops eagerly.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.context import Operation
from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError
from ipusim.graph.autodiff import gradients as graph_gradients
from ipusim.graph.graph import Symbol, to_symbol
from ipusim.graph.ops.update import (
    GradientAccumulator,
    add_update,
    has_traced_gradient,
    optimizer_cost,
    run_update,
    trace_apply,
)
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod
from ipusim.keras.optimizers import SGD, Optimizer
from ipusim.session.exchange import job_replicas

log = logging.getLogger("ipusim")

__all__ = [
    "CrossReplicaGradientAccumulationOptimizer",
    "CrossReplicaGradientAccumulationOptimizerV2",
    "CrossReplicaOptimizer",
    "GradientAccumulationOptimizer",
    "GradientAccumulationOptimizerV2",
    "IpuOptimizer",
    "MapGradientOptimizer",
]


# ---------------------------------------------------------------------- updates
class ApplyHandle:
    """An optimizer update in a traced graph: executing it applies the gradients.

    Attributes:
        optimizer: the optimizer (a Keras optimizer or an :class:`IpuOptimizer`).
        variables: the variables updated, one per gradient.
        grads: the traced gradients (what the update-phase graph ops read).
        done: the update's last node (:func:`add_update`), set once it is added.
    """

    def __init__(self, optimizer: Any, variables: list[Any], grads: list[Symbol]) -> None:
        self.optimizer = optimizer
        self.variables = list(variables)
        self.grads = list(grads)
        self.done: Symbol | None = None

    @property
    def slots_per_variable(self) -> int:
        """Slots of the optimizer that applies the update (what lowering times)."""
        return optimizer_cost(innermost(self.optimizer))[0]

    @property
    def update_flops_per_element(self) -> int:
        return optimizer_cost(innermost(self.optimizer))[1]

    def apply_gradients(self, grads_and_vars: list[tuple[Any, Any]]) -> None:
        """Apply concrete gradients (what the ``apply_gradients`` op runs); in a replicated
        loop iteration, stage them for :meth:`apply_replicated`."""
        grads = [np.asarray(g) for g, _ in grads_and_vars]
        state = context.replica_state()
        if state is not None and state.replicas > 1:
            staged = state.gradients.setdefault(self, [None] * state.replicas)
            staged[state.index] = [np.array(g, copy=True) for g in grads]
        else:  # one local replica (of a PopDist job: a cross-replica mean spans the instances)
            self.apply_replicated([grads])

    def apply_replicated(self, staged: list[list[np.ndarray]]) -> None:
        """One update from every local replica's gradients (combined across replicas and
        instances when the optimizer is a cross-replica one)."""
        if has_cross_replica(self.optimizer):
            staged = job_replicas(staged)  # with the other instances' (ipusim run --instances)
        elif len(staged) > 1:
            raise IncompatibleStateError(
                f"The loop runs {len(staged)} replicas but its optimizer "
                f"({type(self.optimizer).__name__}) does not combine their gradients, so the "
                "replicas' weights would drift apart (ipusim keeps one copy of the weights). Wrap "
                "the optimizer in ipu.optimizers.CrossReplicaOptimizer (or "
                "CrossReplicaGradientAccumulationOptimizerV2)."
            )
        # the update nodes again, on every replica's gradients, applied by the wrapper chain
        run_update(self.done, staged, optimizer=ConcreteApply(self.optimizer, outermost=True))


class ConcreteApply:
    """``optimizer`` (any wrapper chain) applying concrete gradients, as the ``apply_gradients``
    node calls it: an IPU wrapper's own update, a Keras optimizer's ``apply_gradients``.

    The outermost wrapper's ``apply_gradients`` ran when traced (e.g. a gradient map); an inner
    wrapper's never runs, so its gradient map is applied here, to the gradients it receives
    (e.g. accumulated ones, as IPU TensorFlow's wrappers call the inner ``apply_gradients``).
    """

    def __init__(self, optimizer: Any, outermost: bool = False) -> None:
        self.optimizer = optimizer
        self.outermost = outermost

    def apply_gradients(self, grads_and_vars: list[tuple[Any, Any]], **kwargs: object) -> None:
        opt = self.optimizer
        if isinstance(opt, MapGradientOptimizer) and not self.outermost:
            grads_and_vars = opt._mapped(grads_and_vars)
        if isinstance(opt, IpuOptimizer):
            opt._apply([g for g, _ in grads_and_vars], [v for _, v in grads_and_vars])
        else:
            opt.apply_gradients(grads_and_vars)


def symbolic_apply(optimizer: Any, grads_and_vars: Any) -> Operation:
    """Add an update of ``optimizer`` with traced gradients to the graph being traced."""
    ctx = context.current()
    assert ctx is not None  # TraceContext.trace_apply calls this
    pairs = present_gradients(list(grads_and_vars))
    grads = [to_symbol(g, ctx.graph) for g, _ in pairs]
    handle = ApplyHandle(optimizer, [v for _, v in pairs], grads)
    with ctx.graph.phase("update"):
        done = handle.done = add_update(grads, handle.variables, handle)
    ctx.add_side_effect(done)
    ctx.applies.append(handle)
    return Operation("apply_gradients", done)


def present_gradients(pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The ``(gradient, variable)`` pairs that have a gradient (TF's warning names the others).

    Raises:
        ConfigurationError: no pair has a gradient.
    """
    missing = [v.name for g, v in pairs if g is None]
    if missing:
        log.warning("Gradients do not exist for variables %s when minimizing the loss.", missing)
    kept = [(g, v) for g, v in pairs if g is not None]
    if not kept:
        raise ConfigurationError(
            f"No gradients provided for any variable: the loss does not depend on {missing}"
        )
    return kept


def compute_gradients_symbolic(loss: Any, variables: list[Any]) -> list[Any]:
    """d(loss)/d(variable) in the graph being traced (None where the loss does not depend)."""
    if not isinstance(loss, Symbol):
        raise InvalidTypeError(
            f"compute_gradients: `loss` must be a tensor computed in the traced function, "
            f"received {type(loss).__name__}"
        )
    from ipusim.graph.ops.reduce import reduce_sum

    target = reduce_sum(loss) if loss.shape != () else loss
    return graph_gradients(target, [loss.graph.read_variable(v) for v in variables])


def has_cross_replica(optimizer: Any) -> bool:
    """Whether the wrapper chain combines gradients across replicas."""
    while isinstance(optimizer, IpuOptimizer):
        if isinstance(optimizer, CrossReplicaOptimizer):
            return True
        optimizer = optimizer._opt
    return False


def innermost(optimizer: Any) -> Any:
    """The Keras optimizer at the bottom of a wrapper chain."""
    while isinstance(optimizer, IpuOptimizer):
        optimizer = optimizer._opt
    return optimizer


def accumulation_of(optimizer: Any) -> GradientAccumulationOptimizerV2 | None:
    """The gradient-accumulation wrapper of a chain, if any."""
    while isinstance(optimizer, IpuOptimizer):
        if isinstance(optimizer, GradientAccumulationOptimizerV2):
            return optimizer
        optimizer = optimizer._opt
    return None


# ---------------------------------------------------------------------- wrappers
class IpuOptimizer:
    """Base of the IPU optimizer wrappers: delegates to the wrapped optimizer.

    Args:
        opt: an ipusim Keras optimizer or another IPU optimizer wrapper.
        name: the wrapper's name.

    Raises:
        TypeError: ``opt`` is not an optimizer.
    """

    def __init__(self, opt: Any, name: str | None = None) -> None:
        if not isinstance(opt, Optimizer | IpuOptimizer):
            raise InvalidTypeError(
                f"{type(self).__name__}: `opt` must be an optimizer (e.g. "
                f"keras.optimizers.SGD(0.01)), received {type(opt).__name__}"
            )
        self._opt = opt
        self._name = name or type(self).__name__

    @property
    def name(self) -> str:
        return self._name

    @property
    def opt(self) -> Any:
        return self._opt

    @property
    def slots_per_variable(self) -> int:
        opt: Optimizer = innermost(self)  # __init__ accepts only optimizers and wrappers
        return opt.slots_per_variable

    @property
    def update_flops_per_element(self) -> int:
        opt: Optimizer = innermost(self)  # __init__ accepts only optimizers and wrappers
        return opt.update_flops_per_element

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._opt, name)

    # ------------------------------------------------------------------ TF surface
    def compute_gradients(
        self, loss: Any, var_list: Any = None, tape: Any = None, **kwargs: Any
    ) -> list[tuple[Any, Any]]:
        """``(gradient, variable)`` pairs of ``loss`` (traced), as TF1 optimizers return."""
        variables = list(var_list) if var_list is not None else _trainable_in(loss)
        if tape is not None:
            grads = tape.gradient(loss, variables)
        else:
            grads = compute_gradients_symbolic(loss, variables)
        return list(zip(grads, variables))

    def get_gradients(self, loss: Any, params: Any) -> list[Any]:
        return [g for g, _ in self.compute_gradients(loss, params)]

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None, **kwargs: Any
    ) -> Any:
        """Update the variables: in traced code, once per execution of the graph."""
        pairs = list(grads_and_vars)
        if has_traced_gradient(pairs):
            return trace_apply(self, pairs)
        pairs = [(g, v) for g, v in pairs if g is not None]
        self._apply([np.asarray(g) for g, _ in pairs], [v for _, v in pairs])
        return Operation("apply_gradients")

    def minimize(self, loss: Any, var_list: Any = None, tape: Any = None, **kwargs: Any) -> Any:
        return self.apply_gradients(self.compute_gradients(loss, var_list, tape))

    # ------------------------------------------------------------------ numerics
    def _apply(self, grads: list[Any], variables: list[Any]) -> None:
        ConcreteApply(self._opt).apply_gradients(list(zip(grads, variables)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._opt!r})"


def _trainable_in(loss: Any) -> list[Any]:
    if not isinstance(loss, Symbol):
        raise InvalidTypeError("compute_gradients needs a traced loss tensor (or pass var_list)")
    return [v for v in loss.graph.variables if v.trainable]


class CrossReplicaOptimizer(IpuOptimizer):
    """Averages each gradient over the replicas (``cross_replica_mean``) before the update."""

    def __init__(self, opt: Any, name: str = "CrossReplicaOptimizer") -> None:
        super().__init__(opt, name)


class GradientAccumulationOptimizerV2(IpuOptimizer):
    """Accumulates ``num_mini_batches`` gradients, then applies them once (see module doc).

    Args:
        opt: the optimizer that applies the accumulated gradients.
        num_mini_batches: gradients per update (a positive int).
        offload_weight_update_variables: keep the optimizer state in Streaming Memory (None:
            the default, on when the system has remote buffers); used by the timing model.
        replicated_optimizer_state_sharding: shard the offloaded state over replicas (timing).
        dtype: accumulator dtype: None (the variable's), a dtype, or ``callable(var) -> dtype``.
        reduction_method: SUM, MEAN or RUNNING_MEAN (or their names).
        name: the wrapper's name.
    """

    def __init__(
        self,
        opt: Any,
        num_mini_batches: int,
        offload_weight_update_variables: bool | None = None,
        replicated_optimizer_state_sharding: bool = False,
        dtype: Any = None,
        reduction_method: Any = GradientAccumulationReductionMethod.SUM,
        name: str = "GradientAccumulationOptimizerV2",
    ) -> None:
        super().__init__(opt, name)
        self._accumulator = GradientAccumulator(num_mini_batches, reduction_method, dtype)
        self.offload_weight_update_variables = offload_weight_update_variables
        self.replicated_optimizer_state_sharding = bool(replicated_optimizer_state_sharding)

    @property
    def num_mini_batches(self) -> int:
        return self._accumulator.num_mini_batches

    @property
    def reduction_method(self) -> GradientAccumulationReductionMethod:
        return self._accumulator.reduction_method

    def _apply(self, grads: list[Any], variables: list[Any]) -> None:
        run_update(
            None,
            [grads],
            variables=variables,
            optimizer=ConcreteApply(self._opt),
            accumulator=self._accumulator,
        )


class CrossReplicaGradientAccumulationOptimizerV2(GradientAccumulationOptimizerV2):
    """Gradient accumulation around a :class:`CrossReplicaOptimizer`: replicas combine their
    accumulated gradients once per ``num_mini_batches``."""

    def __init__(
        self,
        opt: Any,
        num_mini_batches: int,
        offload_weight_update_variables: bool | None = None,
        replicated_optimizer_state_sharding: bool = False,
        dtype: Any = None,
        reduction_method: Any = GradientAccumulationReductionMethod.SUM,
        name: str = "CrossReplicaGradientAccumulationOptimizerV2",
    ) -> None:
        super().__init__(
            CrossReplicaOptimizer(opt),
            num_mini_batches,
            offload_weight_update_variables,
            replicated_optimizer_state_sharding,
            dtype,
            reduction_method,
            name,
        )


def _require_sgd(owner: str, opt: Any) -> None:
    if not isinstance(innermost(opt), SGD):
        raise InvalidTypeError(
            f"{owner} only wraps gradient descent (with or without momentum): pass a "
            f"keras.optimizers.SGD, or use {owner}V2 for any optimizer (received "
            f"{type(opt).__name__})"
        )


class GradientAccumulationOptimizer(GradientAccumulationOptimizerV2):
    """The legacy accumulation optimizer: SUM accumulation of SGD (with momentum) only."""

    def __init__(
        self,
        opt: Any,
        num_mini_batches: int,
        verify_usage: bool = True,
        name: str = "GradientAccumulationOptimizer",
    ) -> None:
        _require_sgd("GradientAccumulationOptimizer", opt)
        super().__init__(opt, num_mini_batches, name=name)


class CrossReplicaGradientAccumulationOptimizer(GradientAccumulationOptimizerV2):
    """The legacy cross-replica accumulation optimizer (SGD only)."""

    def __init__(
        self,
        opt: Any,
        num_mini_batches: int,
        verify_usage: bool = True,
        name: str = "CrossReplicaGradientAccumulationOptimizer",
    ) -> None:
        _require_sgd("CrossReplicaGradientAccumulationOptimizer", opt)
        super().__init__(CrossReplicaOptimizer(opt), num_mini_batches, name=name)


class MapGradientOptimizer(IpuOptimizer):
    """Applies ``gradient_mapping_function(grad, var)`` to every gradient before the update."""

    def __init__(
        self,
        wrapped_optimizer: Any,
        gradient_mapping_function: Any,
        name: str = "MapGradientOptimizer",
    ) -> None:
        if not callable(gradient_mapping_function):
            raise InvalidTypeError(
                "MapGradientOptimizer: `gradient_mapping_function` must be callable(grad, var)"
            )
        super().__init__(wrapped_optimizer, name)
        self._map = gradient_mapping_function

    def _mapped(self, grads_and_vars: Any) -> list[tuple[Any, Any]]:
        return [(None if g is None else self._map(g, v), v) for g, v in grads_and_vars]

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None, **kwargs: Any
    ) -> Any:
        return super().apply_gradients(self._mapped(grads_and_vars), global_step, name)
