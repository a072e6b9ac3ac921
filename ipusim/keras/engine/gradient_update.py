"""The weight update of a Keras training step: apply each step's gradients, or accumulate them
over ``gradient_accumulation_steps_per_replica`` mini-batches (SUM / MEAN / RUNNING_MEAN, in the
accumulation dtype, rounded to half where the accumulator is half precision) and apply them
once every N steps. A mixin of :class:`ipusim.keras.engine.training.TrainingMixin`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.graph.numerics import current_numerics
from ipusim.graph.spec import canonical_dtype
from ipusim.kernels.accumulate import accumulate, finish
from ipusim.kernels.half import round_to_half, stream_key

__all__ = ["GradientUpdateMixin"]


class GradientUpdateMixin:
    """Applies or accumulates a model's gradients (state kept on the model: ``_accumulators``,
    ``_accumulator_half``, ``_accumulated``)."""

    optimizer: Any
    _gradient_accumulation: int
    _accumulation_method: Any
    _accumulators: list[np.ndarray] | None
    _accumulator_half: list[bool]
    _accumulated: int
    _exec_step: int

    def _apply_or_accumulate(self, grads: list[np.ndarray], variables: list[Any]) -> None:
        """Apply the gradients now, or accumulate them and apply every N steps."""
        # An optional observer on the optimizer sees each step's ("computed") and the applied
        # ("apply") gradients; used by optimizers that outfeed gradients for inspection.
        observe = getattr(self.optimizer, "_gradients_observer", None)
        if observe is not None:  # it may hand back the gradients to use (a TF1 optimizer's)
            replaced = observe(grads, variables, "computed")
            grads = list(grads) if replaced is None else list(replaced)
        n = self._gradient_accumulation
        if n == 1:
            if observe is not None:
                observe(grads, variables, "apply")
            captured = getattr(self, "_captured_grads", None)
            if captured and getattr(self.optimizer, "supports_captured_grads", False):
                self.optimizer.apply_gradients(zip(grads, variables), captured_grads=captured)
            else:
                self.optimizer.apply_gradients(zip(grads, variables))
            return
        numerics = current_numerics()
        if self._accumulators is None or len(self._accumulators) != len(grads):
            # Accumulators in gradient_accumulation_dtype (default: the variable's dtype). They
            # are half precision when float16, or float32 by default under fp16.x precision.
            self._accumulators, self._accumulator_half = [], []
            for variable in variables:
                dtype, explicit = self._accumulator_dtype(variable)
                storage = np.float64 if dtype == "float64" else np.float32
                self._accumulators.append(np.zeros(variable.shape, dtype=storage))
                self._accumulator_half.append(
                    dtype == "float16"
                    or (dtype == "float32" and numerics.emulate_half and not explicit)
                )
            self._accumulated = 0
        for index, (acc, grad) in enumerate(zip(self._accumulators, grads)):
            accumulate(
                acc, np.asarray(grad, dtype=acc.dtype), self._accumulated, self._accumulation_method
            )
            if self._accumulator_half[index]:
                self._round_accumulator(acc, numerics, index)
        self._accumulated += 1
        if self._accumulated == n:
            applied = []
            for index, (acc, variable) in enumerate(zip(self._accumulators, variables)):
                finish(acc, n, self._accumulation_method)
                if self._accumulator_half[index]:
                    self._round_accumulator(acc, numerics, index)
                half_var = variable.value.dtype == np.float16
                applied.append(acc.astype(np.float16) if half_var else acc)
            if observe is not None:
                observe(applied, variables, "apply")
            self.optimizer.apply_gradients(zip(applied, variables))
            for acc in self._accumulators:
                acc[...] = 0
            self._accumulated = 0

    def _round_accumulator(self, acc: np.ndarray, numerics: Any, index: int) -> None:
        """Round a half-precision accumulator (kept in float32 storage) after an update."""
        round_to_half(
            acc,
            stochastic=numerics.stochastic_rounding,
            key=stream_key(numerics.seed, 0xACC, self._exec_step, index),
            nan_on_overflow=numerics.nan_on_overflow,
            out=acc,
        )

    def _accumulator_dtype(self, variable: Any) -> tuple[str, bool]:
        """The gradient accumulator's dtype for ``variable`` and whether it was asked for:
        ``gradient_accumulation_dtype`` of ``set_pipelining_options`` (pipelined) or the
        ``dtype`` of ``set_gradient_accumulation_options`` (a dtype, or a callable
        ``variable -> dtype``); default the variable's dtype."""
        options = getattr(self, "_pipelining_options", None)
        pipelined = getattr(self, "_is_pipelined", None)
        if options is not None and pipelined is not None and pipelined():
            selector = options.kwargs.get("gradient_accumulation_dtype")
        else:
            selector = (getattr(self, "_gradient_accumulation_kwargs", None) or {}).get("dtype")
        dtype = selector(variable) if callable(selector) else selector
        if dtype is None:
            return variable.dtype, False
        return canonical_dtype(dtype), True
