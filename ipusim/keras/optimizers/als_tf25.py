"""``ipu.keras.optimizers.AutomaticLossScalingOptimizer``: IPU TensorFlow 2.5's Keras automatic
loss scaling (S: graphcore/tensorflow ``tensorflow/python/ipu/keras/optimizers/
automatic_loss_scaling_optimizer.py``, "EXPERIMENTAL"; SDK 3 replaced it by ``ALSOptimizer``).

The same histogram, unscale and LSF bounds as :class:`~ipusim.keras.optimizers.als.ALSOptimizer`
with the 2.5 state machine: the counter starts at 1, an update is due when it is a multiple of
``update_frequency`` (it then restarts at 1), a decrease multiplies by ``decrease_factor``, and
the factors need not be powers of two. No low-pass filter and no captured gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.variable import Variable
from ipusim.keras.optimizers.als import ALSOptimizer
from ipusim.keras.optimizers.optimizer import Optimizer
from ipusim.kernels import loss_scaling

__all__ = ["AutomaticLossScalingOptimizer", "check", "check_factors", "check_initial"]


def check(ok: bool, message: str) -> None:
    """Raise ``ConfigurationError(message)`` unless ``ok`` (IPU TensorFlow's argument checks)."""
    if not ok:
        raise ConfigurationError(message)


def check_factors(increase_factor: float, decrease_factor: float, maximum: float) -> None:
    """IPU TensorFlow 2.5's checks of the LSF multipliers and bound (its texts, its order).

    Raises:
        ConfigurationError: a factor not positive, ``decrease_factor >= increase_factor`` or
            ``max_loss_scaling_factor <= 1``.
    """
    check(increase_factor > 0, "increase_factor must be nonzero and positive")
    check(decrease_factor > 0, "decrease_factor must be nonzero and positive")
    check(decrease_factor < increase_factor, "decrease_factor must be less than increase_factor")
    check(maximum > 1, "max_loss_scaling_factor must be greater than one")


def check_initial(initial: float, increase_factor: float, maximum: float) -> None:
    """IPU TensorFlow 2.5's checks that the initial LSF (and one increase) stays below the bound.

    Raises:
        ConfigurationError: ``initial >= maximum`` or ``initial * increase_factor >= maximum``.
    """
    check(
        initial < maximum, "initial_loss_scaling_factor must be less than max_loss_scaling_factor"
    )
    check(
        initial * increase_factor < maximum,
        "initial_loss_scaling_factor x increase_factor must be less than max_loss_scaling_factor",
    )


def step_tf25(opt: Any, hist: np.ndarray, lsf: Variable, counter: Variable) -> None:
    """IPU TensorFlow 2.5's LSF step, shared by its Keras and TF1-style wrappers.

    When ``counter`` is a multiple of ``opt.update_frequency``, ``lsf`` takes its next value from
    the ``[fine, overflowed]`` histogram ``hist`` (then cleared, in place) and the counter
    restarts at 1; otherwise the counter counts this call.
    """
    if int(counter.value) % opt.update_frequency == 0:
        lsf.value[...] = loss_scaling.next_factor_tf25(
            hist,
            np.float32(lsf.value),
            opt.ratio_threshold,
            opt.increase_factor,
            opt.decrease_factor,
            opt.max_loss_scaling_factor,
        )
        hist[...] = 0
        counter.value[...] = 1
    else:
        counter.value[...] = int(counter.value) + 1


class AutomaticLossScalingOptimizer(ALSOptimizer):
    """Automatic loss scaling of IPU TensorFlow 2.5's Keras (see the module doc).

    Args:
        opt: the Keras optimizer that applies the unscaled gradients.
        initial_loss_scaling_factor: starting LSF (> 0). Defaults to 1.
        update_frequency: calls between LSF updates (> 0). Defaults to 8.
        increase_factor: LSF multiplier when few gradients overflow. Defaults to 2.
        decrease_factor: LSF multiplier when too many overflow (< increase_factor).
        max_loss_scaling_factor: the LSF stays below it (> 1). Defaults to 32768.
        accumulate_statistics_over_update_period: collect statistics on every call.
        ratio_threshold: overflowed fraction above which the LSF decreases, in (0, 1).
        name: the wrapper's name.

    Raises:
        ConfigurationError: (a ValueError) an argument out of range (IPU TensorFlow's texts).
    """

    def __init__(
        self,
        opt: Optimizer,
        initial_loss_scaling_factor: float = 1.0,
        update_frequency: int = 8,
        increase_factor: float = 2.0,
        decrease_factor: float = 0.5,
        max_loss_scaling_factor: float = 32768,
        accumulate_statistics_over_update_period: bool = True,
        ratio_threshold: float = 10e-6,
        name: str = "AutomaticLossScalingOptimizer",
    ) -> None:
        check_factors(increase_factor, decrease_factor, max_loss_scaling_factor)
        check(
            initial_loss_scaling_factor > 0,
            "initial_loss_scaling_factor must be nonzero and positive",
        )
        # The parent checks the rest; powers of two are not required here, so it gets 1s and
        # 2s for the checks it would make on them and the real values are set after.
        super().__init__(
            opt,
            1,
            update_frequency,
            2,
            4,
            accumulate_statistics_over_update_period,
            ratio_threshold,
            name=name,
        )
        lsf = float(initial_loss_scaling_factor)
        check_initial(lsf, increase_factor, max_loss_scaling_factor)
        self.initial_loss_scaling_factor = lsf
        self.increase_factor = float(increase_factor)
        self._decrease_factor = float(decrease_factor)
        self.max_loss_scaling_factor = float(max_loss_scaling_factor)
        self._lsf.value[...] = lsf
        self._prev_lsf.value[...] = lsf
        self._n.value[...] = 1

    @property
    def decrease_factor(self) -> float:
        return self._decrease_factor

    def _update_due(self) -> bool:
        return int(self._n.value) % self.update_frequency == 0

    def update_loss_scaling_factor(self, captured_grads: Any = None) -> None:
        """The 2.5 LSF step (:func:`step_tf25`); the previous LSF is kept when it changes."""
        old = np.float32(self._lsf.value)
        step_tf25(self, self._hist.value, self._lsf, self._n)
        if np.float32(self._lsf.value) != old:
            self._prev_lsf.value[...] = old

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.pop("captured_grads_only", None)
        config["decrease_factor"] = self._decrease_factor
        return config
