"""``ipu.optimizers.AutomaticLossScalingOptimizer``: IPU TensorFlow 2.5's TF1-style automatic
loss scaling wrapper (S: graphcore/tensorflow ``tensorflow/python/ipu/optimizers/
automatic_loss_scaling_optimizer.py``, r2.5; "EXPERIMENTAL" there, replaced by Keras'
``ALSOptimizer`` in SDK 3).

``compute_gradients`` differentiates ``loss * LSF``; each executed update then adds the scaled
float16 gradients to the two-bin overflow histogram (every call with
``accumulate_statistics_over_update_period``, else only on update calls), divides them by the
LSF and, when due, multiplies the LSF by ``decrease_factor`` (overflowed fraction above
``ratio_threshold``) or ``increase_factor``, keeping it finite, below
``max_loss_scaling_factor`` and at least 1, before the wrapped optimizer applies them. Its
counter starts at 1 and an update is due when it is a multiple of ``update_frequency`` (then it
restarts at 1), so the LSF changes every ``update_frequency`` calls. Overflowing steps are
applied, as in the SDK.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.compat.runtime.optimizers import ConcreteApply, IpuOptimizer
from ipusim.graph.variable import Variable
from ipusim.keras.optimizers.als import add_to_histogram
from ipusim.keras.optimizers.als_tf25 import (
    check,
    check_factors,
    check_initial,
    step_tf25,
)
from ipusim.kernels import loss_scaling

__all__ = ["AutomaticLossScalingOptimizer"]


class AutomaticLossScalingOptimizer(IpuOptimizer):
    """Automatic loss scaling around a TF1-style (or Keras) optimizer.

    Args:
        wrapped_optimizer: the optimizer that applies the unscaled gradients.
        initial_loss_scaling_factor: starting LSF (> 0). Defaults to 1.
        update_frequency: calls between LSF updates (> 0). Defaults to 8.
        increase_factor: LSF multiplier when few gradients overflow. Defaults to 2.
        decrease_factor: LSF multiplier when too many overflow. Defaults to 0.5.
        max_loss_scaling_factor: the LSF stays below it (> 1). Defaults to 32768.
        accumulate_statistics_over_update_period: collect statistics on every call.
        ratio_threshold: overflowed fraction above which the LSF decreases, in (0, 1).
        name: the wrapper's name.

    Raises:
        ConfigurationError: (a ValueError) an argument out of range (IPU TensorFlow's texts).
    """

    def __init__(
        self,
        wrapped_optimizer: Any,
        initial_loss_scaling_factor: float = 1.0,
        update_frequency: int = 8,
        increase_factor: float = 2.0,
        decrease_factor: float = 0.5,
        max_loss_scaling_factor: float = 32768,
        accumulate_statistics_over_update_period: bool = True,
        ratio_threshold: float = 10e-6,
        name: str = "AutomaticLossScalingOptimizer",
    ) -> None:
        super().__init__(wrapped_optimizer, name)
        check(update_frequency > 0, "update_frequency must be nonzero and positive")
        check_factors(increase_factor, decrease_factor, max_loss_scaling_factor)
        check(
            0.0 < ratio_threshold < 1.0,
            "ratio_threshold must be greater than zero and less than one",
        )
        lsf = initial_loss_scaling_factor
        check(lsf > 0, "initial_loss_scaling_factor must be nonzero and positive")
        check_initial(lsf, increase_factor, max_loss_scaling_factor)
        self.initial_loss_scaling_factor = float(lsf)
        self.update_frequency = int(update_frequency)
        self.increase_factor = float(increase_factor)
        self.decrease_factor = float(decrease_factor)
        self.max_loss_scaling_factor = float(max_loss_scaling_factor)
        self.accumulate_statistics_over_update_period = bool(
            accumulate_statistics_over_update_period
        )
        self.ratio_threshold = float(ratio_threshold)
        self.histogram = Variable(np.zeros(2, np.float32), "gradient_histogram:0", False)
        self._n = Variable(np.ones((), np.int32), "lsf_update_counter:0", False)
        self.loss_scaling_factor = Variable(
            np.array(lsf, np.float32), "loss_scaling_factor:0", False
        )

    @property
    def update_flops_per_element(self) -> int:
        return super().update_flops_per_element + loss_scaling.ALS_FLOPS_PER_ELEMENT

    def compute_gradients(
        self, loss: Any, var_list: Any = None, tape: Any = None, **kwargs: Any
    ) -> list[tuple[Any, Any]]:
        """Gradients of ``loss * LSF`` (traced); they are unscaled when the update runs."""
        from ipusim.graph.ops import math as m

        scale = loss.graph.read_variable(self.loss_scaling_factor)
        scaled = m.multiply(loss, m.cast(scale, loss.dtype))
        return super().compute_gradients(scaled, var_list, tape, **kwargs)

    def _apply(self, grads: list[Any], variables: list[Any]) -> None:
        lsf = float(self.loss_scaling_factor.value)
        hist = self.histogram.value
        if self.accumulate_statistics_over_update_period or (
            int(self._n.value) % self.update_frequency == 0
        ):
            for grad in grads:
                hist[...] = add_to_histogram(hist, grad)
        unscaled = [loss_scaling.unscale(g, lsf) for g in grads]
        step_tf25(self, hist, self.loss_scaling_factor, self._n)
        ConcreteApply(self._opt).apply_gradients(list(zip(unscaled, variables)))
