"""The weight update of a Keras training step: the step graph's update nodes executed on every
replica's gradients (:func:`ipusim.graph.ops.update.run_update`): their mean, then applied at
once, or accumulated over ``gradient_accumulation_steps_per_replica`` mini-batches and applied
once every N steps. A mixin of :class:`ipusim.keras.engine.training.TrainingMixin`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.graph.graph import Symbol
from ipusim.graph.ops.update import GradientAccumulator, run_update

__all__ = ["GradientUpdateMixin"]


class GradientUpdateMixin:
    """Applies or accumulates a model's gradients (the accumulator is kept on the model as
    ``_accumulators``; None makes the next step start a fresh one)."""

    optimizer: Any
    _gradient_accumulation: int
    _accumulation_method: Any
    _accumulators: Any
    _exec_step: int

    def _apply_or_accumulate(
        self, per_replica: list[list[np.ndarray]], variables: list[Any], done: Symbol | None = None
    ) -> None:
        """Run the update nodes that ``done`` ends (the step graph's; None: the update of
        ``variables`` with the model's optimizer) on every replica's gradients: apply their mean
        now, or accumulate it and apply every N steps."""
        optimizer, accumulator = self.optimizer, None
        if self._gradient_accumulation != 1:
            if not isinstance(self._accumulators, GradientAccumulator):
                self._accumulators = GradientAccumulator(
                    self._gradient_accumulation, self._accumulation_method, self._accumulator_dtype
                )
            accumulator = self._accumulators
        # Gradients captured by keras.ipu.layers go to an optimizer that takes them (unless
        # they are accumulated: the captures are one step's).
        captured = getattr(self, "_captured_grads", None)
        supported = accumulator is None and getattr(optimizer, "supports_captured_grads", False)
        run_update(
            done,
            per_replica,
            # with nodes, their variables and optimizer (the compiled one); else these
            variables=None if done is not None else variables,
            optimizer=None if done is not None else optimizer,
            accumulator=accumulator,
            captured_grads=captured if captured and supported else None,
            step=self._exec_step,
            # optimizers that outfeed or replace gradients (a TF1 optimizer's) observe them
            observe=getattr(optimizer, "_gradients_observer", None),
        )

    def _accumulator_dtype(self, variable: Any) -> Any:
        """The gradient accumulator's dtype for ``variable`` (None: the variable's):
        ``gradient_accumulation_dtype`` of ``set_pipelining_options`` (pipelined) or the
        ``dtype`` of ``set_gradient_accumulation_options`` (a dtype, or a callable
        ``variable -> dtype``)."""
        options = getattr(self, "_pipelining_options", None)
        pipelined = getattr(self, "_is_pipelined", None)
        if options is not None and pipelined is not None and pipelined():
            selector = options.kwargs.get("gradient_accumulation_dtype")
        else:
            selector = (getattr(self, "_gradient_accumulation_kwargs", None) or {}).get("dtype")
        return selector(variable) if callable(selector) else selector
