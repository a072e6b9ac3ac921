"""``keras.ipu.optimizers.GradientAccumulationOptimizer`` (Graphcore's Keras, SDK 3.x): apply the
wrapped optimizer once every ``num_mini_batches`` calls, to the gradients accumulated in between.

Each call runs the update-phase ops (:func:`ipusim.graph.ops.update.run_update`: accumulation in
a :class:`~ipusim.graph.ops.update.GradientAccumulator`, then the wrapped optimizer's apply), as
:class:`~ipusim.keras.optimizers.als.ALSGradientAccumulationOptimizer`, Keras' ``fit`` and the
compat runtime do. SUM adds (the SDK's default: no division by the number of mini-batches),
MEAN adds then divides once, RUNNING_MEAN keeps the running mean; float16 accumulators round
every addition to half precision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ipusim.errors import InvalidTypeError
from ipusim.graph.ops.update import GradientAccumulator, has_traced_gradient, run_update
from ipusim.graph.variable import Variable
from ipusim.keras.optimizers.optimizer import Optimizer
from ipusim.pipelining import GradientAccumulationReductionMethod

__all__ = [
    "AccumulatingWrapper",
    "GradientAccumulationOptimizer",
    "OptimizerWrapper",
    "from_wrapped_config",
    "wrapped_config",
]

#: The wrapper class :func:`from_wrapped_config` rebuilds.
_W = TypeVar("_W", bound=Optimizer)


def wrapped_config(opt: Any) -> dict[str, Any]:
    """The ``inner_optimizer_*`` entries of a wrapper's ``get_config`` (the SDK's keys)."""
    return {"inner_optimizer_type": type(opt).__name__, "inner_optimizer_config": opt.get_config()}


def from_wrapped_config(
    cls: Callable[..., _W], config: dict[str, Any], custom_objects: dict[str, Any] | None = None
) -> _W:
    """Rebuild a wrapper ``cls`` from its config: the wrapped optimizer by its class name."""
    from ipusim.keras import optimizers

    config = dict(config)
    inner = optimizers.deserialize(
        {
            "class_name": config.pop("inner_optimizer_type"),
            "config": config.pop("inner_optimizer_config"),
        },
        custom_objects,
    )
    return cls(inner, **config)


class OptimizerWrapper(Optimizer):
    """What the Keras optimizer wrappers share: their own name, and everything they do not
    define (hyperparameters, slots, iterations, the slots the timing model budgets) is the
    wrapped optimizer's (``_opt``, set by :meth:`_wrap`; ``inner_optimizer``)."""

    _opt: Optimizer
    _wrapper_name: str

    def _wrap(self, opt: Optimizer, name: str) -> None:
        self.__dict__["_opt"] = opt
        self._wrapper_name = name

    def __getattr__(self, name: str) -> Any:
        if name == "_opt":
            raise AttributeError(name)
        return getattr(self.__dict__["_opt"], name)

    @property
    def name(self) -> str:
        return self._wrapper_name

    @property
    def inner_optimizer(self) -> Optimizer:
        """The wrapped optimizer."""
        return self._opt

    @property
    def iterations(self) -> int:
        return self._opt.iterations

    @iterations.setter
    def iterations(self, value: int) -> None:
        self._opt.iterations = value

    @property
    def slots_per_variable(self) -> int:
        return self._opt.slots_per_variable

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return self._opt.update_flops_per_element

    @property
    def weights(self) -> list[Variable]:
        return self._opt.weights

    def get_scaled_loss(self, loss: Any) -> Any:
        """``loss`` times the loss scale of a loss-scaling wrapper (its ``loss_scale_variable``,
        cast to the loss' dtype), for a traced tensor or an array."""
        scale = self.loss_scale_variable
        if hasattr(loss, "graph"):
            from ipusim.graph.ops import math as m

            return m.multiply(loss, m.cast(loss.graph.read_variable(scale), loss.dtype))
        array = np.asarray(loss)
        return array * array.dtype.type(float(scale.value))


class AccumulatingWrapper:
    """``num_mini_batches``, the update every ``num_mini_batches`` calls and the ``get_config``
    entries of the accumulating wrappers (their ``__init__`` sets the
    :class:`GradientAccumulator` and the SDK's placement arguments)."""

    _opt: Optimizer
    _accumulator: GradientAccumulator
    offload_weight_update_variables: Any
    replicated_optimizer_state_sharding: Any

    @property
    def num_mini_batches(self) -> int:
        return self._accumulator.num_mini_batches

    def _accumulate(
        self,
        grads: list[Any],
        variables: list[Variable],
        captured_grads: dict[str, Any] | None = None,
    ) -> int | None:
        """Add the gradients; every ``num_mini_batches`` calls, apply the accumulated ones with
        the wrapped optimizer (its iterations then; None in between)."""
        done = run_update(
            None,
            [grads],
            variables=variables,
            optimizer=self._opt,
            accumulator=self._accumulator,
            captured_grads=captured_grads,
        )
        return None if done is None else self._opt.iterations

    def _accumulation_config(self) -> dict[str, Any]:
        return {
            "num_mini_batches": self.num_mini_batches,
            "offload_weight_update_variables": self.offload_weight_update_variables,
            "replicated_optimizer_state_sharding": self.replicated_optimizer_state_sharding,
            "dtype": self._accumulator.dtype,
            "reduction_method": self._accumulator.reduction_method,
        }


class GradientAccumulationOptimizer(AccumulatingWrapper, OptimizerWrapper):
    """Applies ``opt`` once every ``num_mini_batches`` calls (``num_mini_batches=1``: ``opt``
    itself is returned, as the SDK's ``__new__`` does).

    Args:
        opt: the Keras optimizer to wrap.
        num_mini_batches: calls per update (≥ 1).
        offload_weight_update_variables, replicated_optimizer_state_sharding: placement of the
            optimizer state (kept for the timing model).
        dtype: accumulator dtype: None (the variable's), a dtype, or ``callable(var) -> dtype``.
        reduction_method: SUM (default), MEAN or RUNNING_MEAN.
        name: the wrapper's name.
    """

    def __new__(cls, opt: Any, num_mini_batches: int, *args: Any, **kwargs: Any) -> Any:
        if num_mini_batches == 1:
            return opt
        return super().__new__(cls)

    def __init__(
        self,
        opt: Optimizer,
        num_mini_batches: int,
        offload_weight_update_variables: Any = None,
        replicated_optimizer_state_sharding: Any = False,
        dtype: Any = None,
        reduction_method: Any = GradientAccumulationReductionMethod.SUM,
        name: str = "GradientAccumulationOptimizer",
    ) -> None:
        if not isinstance(opt, Optimizer):
            raise InvalidTypeError(
                f"{type(self).__name__} wraps a Keras optimizer, received {type(opt).__name__}"
            )
        self._wrap(opt, name)
        self._accumulator = GradientAccumulator(num_mini_batches, reduction_method, dtype)
        self.offload_weight_update_variables = offload_weight_update_variables
        self.replicated_optimizer_state_sharding = replicated_optimizer_state_sharding

    def apply_gradients(
        self,
        grads_and_vars: Any,
        name: str | None = None,
        experimental_aggregate_gradients: bool = True,
        **kwargs: Any,
    ) -> Any:
        """Accumulate; every ``num_mini_batches`` calls, apply with the wrapped optimizer."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if has_traced_gradient(pairs):  # the update becomes a node of the traced graph
            return Optimizer.apply_gradients(self, pairs)
        return self._accumulate([g for g, _ in pairs], [v for _, v in pairs], **kwargs)

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self._wrapper_name,
            **wrapped_config(self._opt),
            **self._accumulation_config(),
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Any:
        """Rebuild from :meth:`get_config` (the wrapped optimizer by its class name)."""
        return from_wrapped_config(cls, config, custom_objects)
