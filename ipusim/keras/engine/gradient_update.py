"""The weight update of a Keras training step: apply each step's gradients, or accumulate them
over ``gradient_accumulation_steps_per_replica`` mini-batches and apply them once every N steps
(the accumulation is :class:`ipusim.graph.ops.update.GradientAccumulator`, the one driver every
front end shares). A mixin of :class:`ipusim.keras.engine.training.TrainingMixin`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.graph.ops.update import GradientAccumulator

__all__ = ["GradientUpdateMixin"]


class GradientUpdateMixin:
    """Applies or accumulates a model's gradients (the accumulator is kept on the model as
    ``_accumulators``; None makes the next step start a fresh one)."""

    optimizer: Any
    _gradient_accumulation: int
    _accumulation_method: Any
    _accumulators: Any
    _exec_step: int

    def _apply_or_accumulate(self, grads: list[np.ndarray], variables: list[Any]) -> None:
        """Apply the gradients now, or accumulate them and apply every N steps."""
        # An optional observer on the optimizer sees each step's ("computed") and the applied
        # ("apply") gradients; used by optimizers that outfeed gradients for inspection.
        observe = getattr(self.optimizer, "_gradients_observer", None)
        if observe is not None:  # it may hand back the gradients to use (a TF1 optimizer's)
            replaced = observe(grads, variables, "computed")
            grads = list(grads) if replaced is None else list(replaced)
        if self._gradient_accumulation == 1:
            if observe is not None:
                observe(grads, variables, "apply")
            captured = getattr(self, "_captured_grads", None)
            if captured and getattr(self.optimizer, "supports_captured_grads", False):
                self.optimizer.apply_gradients(zip(grads, variables), captured_grads=captured)
            else:
                self.optimizer.apply_gradients(zip(grads, variables))
            return
        if not isinstance(self._accumulators, GradientAccumulator):
            self._accumulators = GradientAccumulator(
                self._gradient_accumulation, self._accumulation_method, self._accumulator_dtype
            )
        applied = self._accumulators.add(grads, variables, self._exec_step)
        if applied is None:
            return
        if observe is not None:
            observe(applied, variables, "apply")
        self.optimizer.apply_gradients(zip(applied, variables))

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
