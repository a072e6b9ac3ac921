"""AdamW, Lion and Adafactor: the tf-keras 2.11+ optimizers that have no ``optimizer_v2`` form.

IPU TensorFlow's Keras 2.6 does not have them; programs written for a newer Keras do. They
follow tf-keras' new optimizer base (``tf_keras/src/optimizers/optimizer.py``) where it differs
from the legacy one: ``weight_decay`` (decoupled: ``var -= var * weight_decay * lr`` before each
update, with the learning rate of the step), no ``decay`` argument, and the update rules of
``adamw.py``, ``lion.py`` and ``adafactor.py`` (kernels in :mod:`ipusim.kernels.optim_modern`;
AdamW's Adam step is :func:`ipusim.kernels.optim.adam_update`). The exponential moving average
of the weights (``use_ema=True``) is not simulated. float16 variables: AdamW and Lion update them
in half precision (one rounding per operation); Adafactor does not support them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.variable import Variable
from ipusim.keras.optimizers import schedules
from ipusim.keras.optimizers.algorithms import Adam
from ipusim.keras.optimizers.hyper import Hyper, half
from ipusim.keras.optimizers.optimizer import Optimizer
from ipusim.kernels import half_optim_adaptive as half_kernels
from ipusim.kernels import optim as optim_kernels
from ipusim.kernels import optim_modern as kernels
from ipusim.kernels.half_optim import HalfUpdate

#: FLOPs of the decoupled weight decay per element (two multiplies and a subtract).
WEIGHT_DECAY_FLOPS = 3


def _new_optimizer_kwargs(owner: str, kwargs: dict[str, Any], options: dict[str, Any]) -> None:
    """Check the new optimizer base's own arguments; ``use_ema`` is not simulated."""
    if options.get("use_ema"):
        raise UnsupportedError(
            f"{owner}(use_ema=True): the moving average of the weights is not simulated by "
            "ipusim; leave use_ema=False"
        )
    if "decay" in kwargs:
        raise ConfigurationError(
            f"{owner}: `decay` is not supported by the new Keras optimizers; use a "
            "learning-rate schedule (keras.optimizers.schedules) instead"
        )


class _WeightDecay:
    """Decoupled weight decay of the new Keras optimizers (mixed into an Optimizer)."""

    weight_decay: float | None

    def _decay(self, var: np.ndarray, lr: float) -> None:
        if self.weight_decay:
            kernels.weight_decay(var, self.weight_decay, lr)

    def _decay_flops(self) -> int:
        return WEIGHT_DECAY_FLOPS if self.weight_decay else 0

    def _decay_half(self, update: HalfUpdate, var: np.ndarray, lr: float | np.float32) -> None:
        if self.weight_decay:
            arrays = [var, None]
            update.run(half_kernels.weight_decay, arrays, half(self.weight_decay), half(lr))


class AdamW(_WeightDecay, Adam):
    """Adam with decoupled weight decay, as ``tf.keras.optimizers.AdamW`` (tf-keras 2.11+).

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        weight_decay: decay rate per unit learning rate. Defaults to 0.004.
        beta_1, beta_2, epsilon, amsgrad: as :class:`Adam`.
        clipnorm, clipvalue, global_clipnorm: gradient clipping.
        use_ema, ema_momentum, ema_overwrite_frequency, jit_compile: accepted (EMA not
            simulated).
        name: slot-name prefix. Defaults to ``"AdamW"``.
    """

    _config_hyper = ("learning_rate", "beta_1", "beta_2")  # no ``decay`` in the new optimizers
    _config_fields = ("epsilon", "amsgrad", "weight_decay")

    def __init__(
        self,
        learning_rate: Any = 0.001,
        weight_decay: float = 0.004,
        beta_1: Any = 0.9,
        beta_2: Any = 0.999,
        epsilon: float = 1e-07,
        amsgrad: bool = False,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        jit_compile: bool = True,
        name: str = "AdamW",
        **kwargs: Any,
    ) -> None:
        _new_optimizer_kwargs("AdamW", kwargs, {"use_ema": use_ema})
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name, **clips, **kwargs)
        if weight_decay is None:
            raise ConfigurationError(
                "Missing value of `weight_decay` which is required and must be a float value."
            )
        self.weight_decay = float(weight_decay)

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return super().update_flops_per_element + self._decay_flops()

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        self._decay(var, coefficients["lr"])
        super()._apply_dense(grad, var, slots, coefficients)

    def _prepare_half(self, lr: float, step: int) -> dict[str, Any]:
        coefficients: dict[str, float | np.float32] = dict(super()._prepare_half(lr, step))
        # The new optimizer's update multiplies by the Python float ``1 - self.beta_1``, which
        # becomes a float16 constant (the legacy Adam computes 1 - beta_1 in half).
        for name in ("beta_1", "beta_2"):
            coefficients[f"one_minus_{name}"] = half(1.0 - self._hyper_value(name, step))
        coefficients["decay_lr"] = lr
        return coefficients

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, Any],  # what _prepare_half returned
    ) -> None:
        self._decay_half(update, var, coefficients["decay_lr"])
        super()._apply_half(update, grad, var, slots, coefficients)


class Lion(_WeightDecay, Optimizer):
    """Lion (evoLved sIgn mOmeNtum), as ``tf.keras.optimizers.Lion`` (tf-keras 2.13+).

    ``var -= lr * sign(beta_1 m + (1 - beta_1) g)``; ``m = beta_2 m + (1 - beta_2) g``.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.0001.
        beta_1: interpolation factor of the update direction. Defaults to 0.9.
        beta_2: momentum decay. Defaults to 0.99.
        weight_decay: decoupled weight decay (None: off).
        clipnorm, clipvalue, global_clipnorm, use_ema, ...: as :class:`AdamW`.
        name: slot-name prefix. Defaults to ``"Lion"``.

    Raises:
        ValueError: ``beta_1`` outside (0, 1], as tf-keras checks.
    """

    beta_1 = Hyper()
    beta_2 = Hyper()
    _config_hyper = ("learning_rate", "beta_1", "beta_2")
    _config_fields = ("weight_decay",)
    _slot_order = ("m",)
    _step_hyper = ("beta_1", "beta_2")
    _half_kernel = half_kernels.lion

    def __init__(
        self,
        learning_rate: Any = 0.0001,
        beta_1: Any = 0.9,
        beta_2: Any = 0.99,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        jit_compile: bool = True,
        name: str = "Lion",
        **kwargs: Any,
    ) -> None:
        _new_optimizer_kwargs("Lion", kwargs, {"use_ema": use_ema})
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        super().__init__(name, learning_rate, **clips, **kwargs)
        if isinstance(beta_1, int | float) and not 0.0 < beta_1 <= 1.0:
            raise ConfigurationError(
                f"`beta_1`={beta_1} must be between ]0, 1]. Otherwise, the optimizer degenerates "
                "to SignSGD."
            )
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.weight_decay = weight_decay

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return 9 + self._decay_flops()

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        c = coefficients
        self._decay(var, c["lr"])
        kernels.lion_update(var, grad, slots["m"], c["lr"], c["beta_1"], c["beta_2"])

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        return {"lr": half(lr), **self._half_decays(step, "beta_1", "beta_2")}

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, np.float32],
    ) -> None:
        self._decay_half(update, var, coefficients["lr"])  # half(lr) again: the same value
        super()._apply_half(update, grad, var, slots, coefficients)


class Adafactor(_WeightDecay, Optimizer):
    """Adafactor, as ``tf.keras.optimizers.Adafactor`` (tf-keras 2.11+).

    Variables of rank ≥ 2 keep factored second moments (``"r"``: row means, ``"c"``: column
    means of the last two axes) and ``"v"``; others keep ``"v"`` only. See
    :func:`ipusim.kernels.optim_modern.adafactor_update`.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_2_decay: exponent of the second-moment decay ``1 - t**beta_2_decay``. Defaults to
            -0.8.
        epsilon_1: added to the squared gradient. Defaults to 1e-30.
        epsilon_2: floor of the variable's RMS in the step size. Defaults to 1e-3.
        clip_threshold: RMS of the normalised update above which it is scaled down.
        relative_step: with a constant learning rate, use ``min(lr, 1 / sqrt(t))``.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ...: as :class:`AdamW`.
        name: slot-name prefix. Defaults to ``"Adafactor"``.
    """

    slots_per_variable = 1
    _config_hyper = ("learning_rate",)
    _config_fields = (
        "beta_2_decay",
        "epsilon_1",
        "epsilon_2",
        "clip_threshold",
        "relative_step",
        "weight_decay",
    )

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_2_decay: float = -0.8,
        epsilon_1: float = 1e-30,
        epsilon_2: float = 1e-3,
        clip_threshold: float = 1.0,
        relative_step: bool = True,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        jit_compile: bool = True,
        name: str = "Adafactor",
        **kwargs: Any,
    ) -> None:
        _new_optimizer_kwargs("Adafactor", kwargs, {"use_ema": use_ema})
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        super().__init__(name, learning_rate, **clips, **kwargs)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1 = float(epsilon_1)
        self.epsilon_2 = float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = bool(relative_step)
        self.weight_decay = weight_decay

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return 15 + self._decay_flops()

    def _create_slots(self, var_list: list[Variable]) -> None:
        # r and c exist for factored (rank >= 2) variables only; v for every variable.
        for var in var_list:
            if len(var.shape) >= 2 and "r" not in self._slots.get(var.name, {}):
                self._add_slot(var, "r", 0.0, var.shape[:-1])
                self._add_slot(var, "c", 0.0, var.shape[:-2] + var.shape[-1:])
        for var in var_list:
            self._add_slot(var, "v", 0.0)

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        t = var.dtype.type
        lr = t(coefficients["lr"])
        self._decay(var, coefficients["lr"])
        local_step = t(coefficients["step"] + 1)
        inverse_root = t(1) / np.sqrt(local_step)
        is_schedule = isinstance(self._hyper["learning_rate"], schedules.LearningRateSchedule)
        if self.relative_step and not is_schedule:
            lr = min(lr, inverse_root)
        rho = min(lr, inverse_root)
        rms = t(math.sqrt(optim_kernels.l2_norm_squared(var) / var.size))
        alpha = max(t(self.epsilon_2), rms) * rho
        beta = t(1) - local_step ** t(self.beta_2_decay)
        kernels.adafactor_update(
            var,
            grad,
            slots.get("r"),
            slots.get("c"),
            slots["v"],
            alpha,
            beta,
            self.epsilon_1,
            self.clip_threshold,
        )
