"""Automatic loss scaling (ALS), as ``keras.ipu.optimizers`` of Graphcore's Keras (SDK 3.x).

``ALSOptimizer(opt, ...)`` scales the loss by a loss-scaling factor (LSF) before the backward
pass and keeps a two-bin histogram of the scaled float16 gradients: ``|g| < 65504`` (fine) and
``|g| >= 65504`` (overflowed: saturated, infinite or NaN). Each ``apply_gradients`` call
(S: graphcore/keras ``keras/ipu/optimizers/als_optimizer.py``, SDK 3.x):

1. adds every float16 gradient to the histogram (every call when
   ``accumulate_statistics_over_update_period``, else only on the update call), then divides
   each gradient by the LSF (cast to the gradient's dtype);
2. when an update is due, sets ``LSF /= increase_factor`` if the overflowed fraction exceeds
   ``ratio_threshold`` and ``LSF *= increase_factor`` otherwise (also when there are no float16
   gradients: 0/0 is not above the threshold), keeping the old LSF if the new one is not finite,
   not below ``max_loss_scaling_factor`` or below 1; the histogram is then cleared;
3. applies the unscaled gradients with the wrapped optimizer. As in the SDK, an overflow does
   **not** skip the update: the gradients are applied as they are (saturated on the IPU by
   default) and the LSF comes down at the next update.

An update is due when the call counter ``n`` is a positive multiple of ``update_frequency`` (or
always when it is 1); ``n`` counts the calls since the last update and restarts at 0 after one,
so with ``update_frequency = f > 1`` the LSF changes on calls ``f + 1``, ``2(f + 1)``, ... (the
SDK's counter, reproduced). Statistics are collected by ``lpf_alpha``'s low-pass filter
``h = alpha * h_old + (1 - alpha) * h_new``.

Cost: the histogram (absolute value, compare, count) and the unscale multiply are 4 operations
per element, added to the wrapped optimizer's ``update_flops_per_element`` (E: popops'
histogram vertex plus a scale); the ALS state is 5 scalars, no per-variable slot.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.ops.update import GradientAccumulator, has_traced_gradient
from ipusim.graph.variable import Variable
from ipusim.keras.keyword_init import fields
from ipusim.keras.optimizers.accumulation import (
    AccumulatingWrapper,
    OptimizerWrapper,
    from_wrapped_config,
    wrapped_config,
)
from ipusim.keras.optimizers.optimizer import Optimizer
from ipusim.kernels import loss_scaling
from ipusim.pipelining import GradientAccumulationReductionMethod


def _power_of_two(owner: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise ConfigurationError(f"{owner}: {name} must be a power of two, received {value!r}")
    number = float(value)
    exponent = math.log2(number) if number > 0 and math.isfinite(number) else 0.5
    if number != int(number) or exponent != int(exponent):
        raise ConfigurationError(
            f"{name} must be a power of two, received {value!r}; use e.g. 1, 2, 128 or 32768"
        )
    return number


def add_to_histogram(hist: np.ndarray, grad: Any) -> np.ndarray:
    """``hist`` (``[fine, overflowed]``, float32) plus a float16 gradient's counts; other
    gradients are not counted."""
    array = np.asarray(grad)
    if array.dtype != np.float16:
        return hist
    fine, over = loss_scaling.overflow_histogram(array)
    return hist + np.array([fine, over], np.float32)


class ALSOptimizer(OptimizerWrapper):
    """Wraps an optimizer with automatic loss scaling (see the module doc).

    Args:
        opt: the Keras optimizer that applies the unscaled gradients.
        initial_loss_scaling_factor: starting LSF, a power of two. Defaults to 1.
        update_frequency: calls between LSF updates (> 0). Defaults to 8.
        increase_factor: LSF multiplier (its inverse divides), a power of two. Defaults to 2.
        max_loss_scaling_factor: the LSF stays below it, a power of two. Defaults to 32768.
        accumulate_statistics_over_update_period: collect statistics on every call (True) or
            only on the update call.
        ratio_threshold: overflowed fraction above which the LSF decreases, in (0, 1).
            Defaults to 10e-6.
        captured_grads_only: use only the gradients captured by ``CaptureUpstreamGradients`` /
            ``CaptureActivationGradients`` (passed as ``captured_grads``).
        lpf_alpha: low-pass filter coefficient of the statistics. Defaults to 0.
        name: the wrapper's name.

    Raises:
        ConfigurationError: (a ValueError) for an argument outside its range, with the SDK's
            message.
        TypeError: ``opt`` is not a Keras optimizer.
    """

    #: The Keras training step scales the loss by ``loss_scale_variable`` and leaves the
    #: gradients scaled: ALS histograms the scaled gradients before it unscales them.
    unscales_own_gradients = True
    #: It accepts ``captured_grads`` (gradients captured by the IPU layers) in apply_gradients.
    supports_captured_grads = True

    def __init__(
        self,
        opt: Optimizer,
        initial_loss_scaling_factor: float = 1,
        update_frequency: int = 8,
        increase_factor: float = 2,
        max_loss_scaling_factor: float = 32768,
        accumulate_statistics_over_update_period: bool = True,
        ratio_threshold: float = 10e-6,
        captured_grads_only: bool = False,
        lpf_alpha: float = 0.0,
        name: str = "ALSOptimizer",
    ) -> None:
        if not isinstance(opt, Optimizer):
            raise InvalidTypeError(
                f"ALSOptimizer wraps a Keras optimizer (e.g. keras.optimizers.SGD(0.01)), "
                f"received {type(opt).__name__}"
            )
        owner = "ALSOptimizer"
        if update_frequency <= 0:
            raise ConfigurationError("update_frequency must be nonzero and positive")
        increase = _power_of_two(owner, "increase_factor", increase_factor)
        maximum = _power_of_two(owner, "max_loss_scaling_factor", max_loss_scaling_factor)
        if ratio_threshold >= 1.0 or ratio_threshold <= 0.0:
            raise ConfigurationError("ratio_threshold must be greater than zero and less than one")
        initial = _power_of_two(owner, "initial_loss_scaling_factor", initial_loss_scaling_factor)
        if initial >= maximum:
            raise ConfigurationError(
                "initial_loss_scaling_factor must be less than max_loss_scaling_factor"
            )
        if initial * increase >= maximum:
            raise ConfigurationError(
                "initial_loss_scaling_factor x increase_factor must be less than "
                "max_loss_scaling_factor"
            )
        self._wrap(opt, name)
        self.update_frequency = int(update_frequency)
        self.increase_factor = increase_factor
        self.max_loss_scaling_factor = max_loss_scaling_factor
        self.initial_loss_scaling_factor = initial_loss_scaling_factor
        self.accumulate_statistics_over_update_period = bool(
            accumulate_statistics_over_update_period
        )
        self.ratio_threshold = float(ratio_threshold)
        self.captured_grads_only = bool(captured_grads_only)
        self.lpf_alpha = float(lpf_alpha)
        self._hist = Variable(np.zeros(2, np.float32), "gradient_histogram:0", False)
        self._n = Variable(np.zeros((), np.int32), "lsf_update_counter:0", False)
        self._lsf = Variable(np.array(initial, np.float32), "loss_scaling_factor:0", False)
        self._prev_lsf = Variable(
            np.array(initial, np.float32), "prev_loss_scaling_factor:0", False
        )

    # ------------------------------------------------------------------ state
    def get_name(self) -> str:
        return self._wrapper_name

    @property
    def loss_scale_variable(self) -> Variable:
        """The LSF variable (the Keras training step multiplies the loss by it)."""
        return self._lsf

    @property
    def loss_scaling_factor(self) -> float:
        return float(self._lsf.value)

    @property
    def previous_loss_scaling_factor(self) -> float:
        return float(self._prev_lsf.value)

    @property
    def histogram(self) -> np.ndarray:
        """``[fine, overflowed]`` counts (float32) collected since the last LSF update."""
        return self._hist.value.copy()

    @property
    def normalized_histogram(self) -> np.ndarray:
        normalized: np.ndarray = self._hist.value / np.sum(self._hist.value)
        return normalized

    @property
    def update_counter(self) -> int:
        return int(self._n.value)

    @property
    def decrease_factor(self) -> float:
        return 1.0 / float(self.increase_factor)

    @property
    def weights(self) -> list[Variable]:
        return [*self._opt.weights, self._hist, self._n, self._lsf, self._prev_lsf]

    def set_weights(self, weights: list[np.ndarray]) -> None:
        count = len(self._opt.weights)
        self._opt.set_weights(list(weights[:count]))
        for variable, value in zip(self.weights[count:], weights[count:], strict=True):
            variable.assign(value)

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return self._opt.update_flops_per_element + loss_scaling.ALS_FLOPS_PER_ELEMENT

    def reset(self) -> None:
        """Clear the statistics and the counter; the LSF returns to its initial value."""
        self._hist.value[...] = 0
        self._n.value[...] = 0
        self._lsf.value[...] = self.initial_loss_scaling_factor

    # ------------------------------------------------------------------ scaling
    def minimize(
        self,
        loss: Any,
        var_list: Any,
        grad_loss: Any = None,
        name: str | None = None,
        tape: Any = None,
    ) -> Any:
        """Differentiate the scaled ``loss`` (traced) and apply the gradients."""
        variables = list(var_list() if callable(var_list) else var_list)
        scaled = self.get_scaled_loss(loss() if callable(loss) else loss)
        if tape is not None:
            grads = tape.gradient(scaled, variables, output_gradients=grad_loss)
        else:
            from ipusim.graph.autodiff import gradients

            graph = scaled.graph
            grads = gradients(scaled, [graph.read_variable(v) for v in variables])
        return self.apply_gradients(zip(grads, variables))

    def _update_due(self) -> bool:
        n = int(self._n.value)
        return self.update_frequency == 1 or (n > 0 and n % self.update_frequency == 0)

    def _collecting(self) -> bool:
        return self.accumulate_statistics_over_update_period or self._update_due()

    def _filtered(self, new: np.ndarray) -> np.ndarray:
        alpha = np.float32(self.lpf_alpha)
        return alpha * self._hist.value + (np.float32(1) - alpha) * new

    def add_gradient_statistics(self, grads: list[Any]) -> None:
        """Add each float16 gradient to the histogram (SDK ``_add_grads``, gradient by gradient)."""
        collect = self._collecting() and not self.captured_grads_only
        for grad in grads:
            hist = add_to_histogram(self._hist.value, grad) if collect else self._hist.value
            self._hist.value[...] = self._filtered(hist)

    def unscale(self, grads: list[Any]) -> list[Any]:
        """Each gradient divided by the current LSF (cast to the gradient's dtype)."""
        lsf = self.loss_scaling_factor
        return [None if g is None else loss_scaling.unscale(g, lsf) for g in grads]

    def update_loss_scaling_factor(self, captured_grads: dict[str, Any] | None = None) -> None:
        """One step of the LSF state machine (SDK ``_do_lsf_update``)."""
        due = self._update_due()
        hist = self._hist.value.copy()
        if self._collecting():
            for value in (captured_grads or {}).values():
                for grad in value if isinstance(value, list | tuple) else [value]:
                    hist = add_to_histogram(hist, grad)
        old = np.float32(self._lsf.value)
        lsf = self._next_lsf(hist, old) if due else old
        if lsf != old:
            self._prev_lsf.value[...] = old
        self._lsf.value[...] = lsf
        self._hist.value[...] = 0 if due else self._filtered(hist)
        self._n.value[...] = 0 if due else int(self._n.value) + 1

    def _next_lsf(self, hist: np.ndarray, old: np.float32) -> np.float32:
        factor = np.float32(self.increase_factor)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = hist[1] / np.sum(hist)
            lsf = old / factor if ratio > np.float32(self.ratio_threshold) else old * factor
        if not np.isfinite(lsf) or not lsf < np.float32(self.max_loss_scaling_factor):
            return old
        return lsf if lsf >= 1.0 else old

    # The SDK's signature: captured_grads comes second, before Keras' name.
    def apply_gradients(  # type: ignore[override]
        self,
        grads_and_vars: Any,
        captured_grads: dict[str, Any] | None = None,
        name: str | None = None,
        experimental_aggregate_gradients: bool = True,
    ) -> Any:
        """Collect statistics, unscale, update the LSF, then apply with the wrapped optimizer.

        Traced gradients (in a ``tf.function``) add an update to the traced graph that does the
        same at every execution.
        """
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if has_traced_gradient(pairs):  # the update becomes a node of the traced graph
            return Optimizer.apply_gradients(self, pairs)
        grads = [g for g, _ in pairs]
        self.add_gradient_statistics(grads)
        unscaled = self.unscale(grads)
        self.update_loss_scaling_factor(captured_grads)
        return self._apply_unscaled(unscaled, [v for _, v in pairs])

    def _apply_unscaled(self, grads: list[Any], variables: list[Variable]) -> Any:
        """Apply the unscaled gradients with the wrapped optimizer."""
        return self._opt.apply_gradients(zip(grads, variables))

    # ------------------------------------------------------------------ config
    def get_config(self) -> dict[str, Any]:
        return {
            "name": self._wrapper_name,
            **wrapped_config(self._opt),
            **fields(
                self,
                "initial_loss_scaling_factor update_frequency increase_factor "
                "max_loss_scaling_factor accumulate_statistics_over_update_period "
                "ratio_threshold captured_grads_only",
            ),
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> ALSOptimizer:
        return from_wrapped_config(cls, config, custom_objects)

    def __repr__(self) -> str:
        return f"<ALSOptimizer lsf={self.loss_scaling_factor} inner={self._opt!r}>"


class ALSGradientAccumulationOptimizer(AccumulatingWrapper, ALSOptimizer):
    """Gradient accumulation around an :class:`ALSOptimizer` (``keras.ipu.optimizers``).

    Every call collects statistics, unscales and steps the LSF state machine (per mini-batch,
    as the SDK does); the unscaled gradients are accumulated (``reduction_method``) and the
    ALS optimizer's wrapped optimizer applies them once every ``num_mini_batches`` calls
    (``num_mini_batches=1`` returns ``als_optimizer`` itself, as the SDK's ``__new__``).

    Args:
        als_optimizer: the :class:`ALSOptimizer` to accumulate for.
        num_mini_batches: calls per update (a positive int).
        offload_weight_update_variables: accepted for the SDK's signature (timing only).
        replicated_optimizer_state_sharding: accepted for the SDK's signature (timing only).
        dtype: accumulator dtype (None: the variable's).
        reduction_method: SUM, MEAN or RUNNING_MEAN.
        name: the wrapper's name.

    Raises:
        ConfigurationError: ``als_optimizer`` is not an ALSOptimizer, or a bad count.
    """

    def __new__(cls, als_optimizer: Any, num_mini_batches: int, *args: Any, **kwargs: Any) -> Any:
        if num_mini_batches == 1 and isinstance(als_optimizer, ALSOptimizer):
            return als_optimizer
        return object.__new__(cls)

    def __init__(
        self,
        als_optimizer: ALSOptimizer,
        num_mini_batches: int,
        offload_weight_update_variables: Any = None,
        replicated_optimizer_state_sharding: Any = False,
        dtype: Any = None,
        reduction_method: Any = GradientAccumulationReductionMethod.SUM,
        name: str = "ALSGradientAccumulationOptimizer",
    ) -> None:
        if not isinstance(als_optimizer, ALSOptimizer):
            raise ConfigurationError(
                "ALSGradientAccumulationOptimizer can only be used with instances of "
                f"ALSOptimizer, received {type(als_optimizer).__name__}"
            )
        self.__dict__.update(als_optimizer.__dict__)  # the same ALS state variables
        self._accumulator = GradientAccumulator(num_mini_batches, reduction_method, dtype)
        self._als = als_optimizer
        self._wrapper_name = name
        self.offload_weight_update_variables = offload_weight_update_variables
        self.replicated_optimizer_state_sharding = replicated_optimizer_state_sharding

    @property
    def als_optimizer(self) -> ALSOptimizer:
        return self._als

    def _apply_unscaled(self, grads: list[Any], variables: list[Variable]) -> Any:
        """Statistics, unscale and LSF step come first, on every call (ALSOptimizer's
        ``apply_gradients``); the update every ``num_mini_batches`` calls."""
        return self._accumulate(grads, variables)

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self._wrapper_name,
            "inner_optimizer_type": "ALSOptimizer",
            "inner_optimizer_config": self._als.get_config(),
            **self._accumulation_config(),
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Any:
        config = dict(config)
        if config.pop("inner_optimizer_type") != "ALSOptimizer":
            raise ConfigurationError(
                "ALSGradientAccumulationOptimizer.from_config can only be used with "
                "configurations that have ALSOptimizer as the specified inner_type."
            )
        inner = ALSOptimizer.from_config(config.pop("inner_optimizer_config"), custom_objects)
        return cls(inner, **config)
