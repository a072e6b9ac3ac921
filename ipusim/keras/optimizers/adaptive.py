"""Adadelta, Adamax, Nadam and Ftrl with tf.keras 2.x (``optimizer_v2``) defaults and rules.

The legacy Keras 2 optimizers (``keras.optimizers.legacy`` in tf-keras 2.11+, the only ones in
IPU TensorFlow's Keras 2.6). ``update_flops_per_element`` counts as in
:mod:`ipusim.keras.optimizers.algorithms` (per-step scalars computed once on the host):

============================  =====  ===================================================
optimizer                     FLOPs  rule (:mod:`ipusim.kernels.optim_adaptive`)
============================  =====  ===================================================
Adadelta                      17     two running averages, ``var -= lr * update``
Adamax                        10     ``v = max(b2 v, |g|)``; ``var -= lr_t m / (v + ε)``
Nadam                         18     Nesterov-momentum Adam with the momentum schedule
Ftrl                          17     FTRL-proximal (19 with ``l2_shrinkage``)
============================  =====  ===================================================

float16 variables are updated in half precision, one rounding per operation
(:mod:`ipusim.kernels.half_optim_adaptive`), bit for bit as TensorFlow's half kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.variable import Variable
from ipusim.keras.optimizers import schedules
from ipusim.keras.optimizers.hyper import DEFAULT_EPSILON, Hyper, half
from ipusim.keras.optimizers.optimizer import Optimizer
from ipusim.kernels import half_optim_adaptive as half_kernels
from ipusim.kernels import optim_adaptive as kernels

_ONE = np.float16(1.0)

#: Nadam's momentum-schedule base (Keras 2 ``nadam.py``: ``decay_base = 0.96``).
_NADAM_DECAY_BASE = 0.96


class Adadelta(Optimizer):
    """Adadelta as ``tf.keras.optimizers.Adadelta`` (slots ``"accum_grad"``, ``"accum_var"``).

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        rho: decay rate of both running averages. Defaults to 0.95.
        epsilon: numerical-stability constant; None or 0 means 1e-7.
        name: slot-name prefix. Defaults to ``"Adadelta"``.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``decay``.
    """

    rho = Hyper()
    update_flops_per_element = 17
    _config_hyper = ("learning_rate", "decay", "rho")
    _config_fields = ("epsilon",)
    _slot_order = ("accum_grad", "accum_var")
    _step_hyper = ("rho",)
    _half_kernel = half_kernels.adadelta

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: Any = 0.95,
        epsilon: float | None = 1e-07,
        name: str = "Adadelta",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        self.rho = rho
        self.epsilon = float(epsilon or DEFAULT_EPSILON)

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        c = coefficients
        kernels.adadelta_update(
            var, grad, slots["accum_grad"], slots["accum_var"], c["lr"], c["rho"], self.epsilon
        )

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        return {"lr": half(lr), **self._half_decays(step, "rho"), "epsilon": half(self.epsilon)}


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm) as ``tf.keras.optimizers.Adamax``.

    With ``t = iterations + 1``: ``m += (g - m)(1 - beta_1)``, ``v = max(beta_2 v, |g|)``,
    ``var -= lr / (1 - beta_1**t) * m / (v + epsilon)``. Slots ``"m"``, ``"v"``.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: first-moment decay. Defaults to 0.9.
        beta_2: infinity-norm decay. Defaults to 0.999.
        epsilon: numerical-stability constant; None or 0 means 1e-7.
        name: slot-name prefix. Defaults to ``"Adamax"``.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``decay``.
    """

    beta_1 = Hyper()
    beta_2 = Hyper()
    update_flops_per_element = 10
    _config_hyper = ("learning_rate", "decay", "beta_1", "beta_2")
    _config_fields = ("epsilon",)
    _slot_order = ("m", "v")
    _step_hyper = ("beta_1", "beta_2")
    _half_kernel = half_kernels.adamax

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: Any = 0.9,
        beta_2: Any = 0.999,
        epsilon: float | None = 1e-07,
        name: str = "Adamax",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = float(epsilon or DEFAULT_EPSILON)

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        # As Keras' _prepare_local: beta_1**t and lr / (1 - beta_1**t) in the variable's dtype.
        t, c = var.dtype.type, coefficients
        lr_t = t(c["lr"]) / (t(1) - t(c["beta_1"]) ** t(c["step"] + 1))
        kernels.adamax_update(
            var, grad, slots["m"], slots["v"], lr_t, c["beta_1"], c["beta_2"], self.epsilon
        )

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        # Keras' _prepare_local and the functor's scalar lr / (1 - beta1_power), in half.
        beta_1 = np.float16(self._hyper_value("beta_1", step))
        beta_1_power = beta_1 ** np.float16(step + 1)
        step_size = np.float16(lr) / (_ONE - beta_1_power)
        return {
            "step_size": np.float32(step_size),
            "one_minus_beta_1": np.float32(_ONE - beta_1),
            "beta_2": half(self._hyper_value("beta_2", step)),
            "epsilon": half(self.epsilon),
        }


class Nadam(Optimizer):
    """Nadam (Adam with Nesterov momentum) as ``tf.keras.optimizers.Nadam`` (Keras 2).

    The legacy ``decay`` argument is Nadam's momentum-schedule decay (``schedule_decay``,
    default 0.004), not a learning-rate decay: ``m_t = beta_1 (1 - 0.5 * 0.96**(decay * t))``
    and the running product of the ``m_t`` is the ``"momentum_cache"`` weight (created before
    the slots ``"m"`` and ``"v"``, as Keras orders ``weights``). A learning-rate schedule is
    refused, as Keras 2 refuses it.

    Args:
        learning_rate: float or callable. Defaults to 0.001.
        beta_1: first-moment decay. Defaults to 0.9.
        beta_2: second-moment decay. Defaults to 0.999.
        epsilon: numerical-stability constant; None or 0 means 1e-7.
        name: slot-name prefix. Defaults to ``"Nadam"``.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``schedule_decay``.

    Raises:
        ValueError: ``learning_rate`` is a ``LearningRateSchedule``.
    """

    beta_1 = Hyper()
    beta_2 = Hyper()
    update_flops_per_element = 18
    _config_hyper = ("learning_rate", "decay", "beta_1", "beta_2")
    _config_fields = ("epsilon",)
    _slot_order = ("m", "v")
    _half_kernel = half_kernels.nadam

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: Any = 0.9,
        beta_2: Any = 0.999,
        epsilon: float | None = 1e-07,
        name: str = "Nadam",
        **kwargs: Any,
    ) -> None:
        kwargs["decay"] = kwargs.pop("schedule_decay", 0.004)
        if isinstance(kwargs.get("lr", learning_rate), schedules.LearningRateSchedule):
            raise ConfigurationError(
                "The Nadam optimizer does not support tf.keras.optimizers.LearningRateSchedules "
                "as the learning rate; pass a float (or use Adam with the schedule)"
            )
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = float(epsilon or DEFAULT_EPSILON)
        self._m_cache: Variable | None = None

    def _create_slots(self, var_list: list[Variable]) -> None:
        if self._m_cache is None:
            dtype = var_list[0].value.dtype
            self._m_cache = Variable(np.ones((), dtype=dtype), "momentum_cache:0", False)
            self._weights.append(self._m_cache)
        super()._create_slots(var_list)

    def _prepare(self, lr: float, step: int) -> dict[str, Any]:
        # Keras' Nadam._prepare_local: the undecayed learning rate (``decay`` is the momentum
        # schedule's), every scalar in the momentum cache's dtype, the cache updated once.
        assert self._m_cache is not None  # created by _create_slots before _prepare
        t = self._m_cache.value.dtype.type
        decay = float(self._hyper_value("decay", step))
        beta_1 = t(self._hyper_value("beta_1", step))
        beta_2 = t(self._hyper_value("beta_2", step))
        local_step, next_step = t(step + 1), t(step + 2)
        base = t(_NADAM_DECAY_BASE)
        m_t = beta_1 * (t(1) - t(0.5) * base ** (t(decay) * local_step))
        m_t_1 = beta_1 * (t(1) - t(0.5) * base ** (t(decay) * next_step))
        m_schedule_new = t(self._m_cache.value) * m_t
        self._m_cache.value[...] = m_schedule_new
        m_schedule_next = m_schedule_new * m_t_1
        one = t(1)
        self._last = {
            "coefficients": (
                t(self._hyper_value("learning_rate", step)),
                beta_1,
                one - beta_1,
                beta_2,
                one - beta_2,
                one - m_t,
                m_t_1,
                one - m_schedule_new,
                one - m_schedule_next,
                one - beta_2**local_step,
                t(self.epsilon),
            )
        }
        return self._last

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, Any],
    ) -> None:
        # ``coefficients`` is what :meth:`_prepare` returned: one tuple of scalars.
        t = var.dtype.type
        scalars = tuple(t(c) for c in coefficients["coefficients"])
        kernels.nadam_update(var, grad, slots["m"], slots["v"], scalars)

    def _prepare_half(self, lr: float, step: int) -> dict[str, Any]:
        # _prepare already computed the scalars in the momentum cache's dtype: float16 (one
        # rounding per numpy float16 operation, as TensorFlow's half ops) when the first
        # variable is float16.
        return {"coefficients": tuple(np.float32(c) for c in self._last["coefficients"])}


def _non_negative(name: str, value: float) -> float:
    if value < 0.0:
        raise ConfigurationError(
            f"`{name}` needs to be positive or zero. Received: {name}={value}."
        )
    return float(value)


class Ftrl(Optimizer):
    """FTRL-proximal as ``tf.keras.optimizers.Ftrl`` (slots ``"accumulator"``, ``"linear"``).

    The slots are created variable by variable (both slots of the first variable, then of the
    second...), as Keras' Ftrl does. ``beta`` adds ``beta / (2 * lr)`` to the L2 strength; a
    positive ``l2_shrinkage_regularization_strength`` selects TensorFlow's ``FtrlV2`` update.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        learning_rate_power: ≤ 0; -0.5 is the usual square-root schedule.
        initial_accumulator_value: starting value of ``"accumulator"`` (≥ 0). Defaults to 0.1.
        l1_regularization_strength: ≥ 0.
        l2_regularization_strength: ≥ 0.
        name: slot-name prefix. Defaults to ``"Ftrl"``.
        l2_shrinkage_regularization_strength: ≥ 0; magnitude penalty on the gradient.
        beta: ≥ 0, see above.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``decay``.

    Raises:
        ValueError: a negative strength or accumulator value, or a positive power.
    """

    learning_rate_power = Hyper()
    l1_regularization_strength = Hyper()
    l2_regularization_strength = Hyper()
    beta = Hyper()
    _slot_order = ("accumulator", "linear")
    _half_kernel = half_kernels.ftrl

    def __init__(
        self,
        learning_rate: Any = 0.001,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        name: str = "Ftrl",
        l2_shrinkage_regularization_strength: float = 0.0,
        beta: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        self._initial_accumulator_value = _non_negative(
            "initial_accumulator_value", initial_accumulator_value
        )
        if learning_rate_power > 0.0:
            raise ConfigurationError(
                "`learning_rate_power` needs to be negative or zero. Received: "
                f"learning_rate_power={learning_rate_power}."
            )
        self.learning_rate_power = learning_rate_power
        self.l1_regularization_strength = _non_negative(
            "l1_regularization_strength", l1_regularization_strength
        )
        self.l2_regularization_strength = _non_negative(
            "l2_regularization_strength", l2_regularization_strength
        )
        self._l2_shrinkage_regularization_strength = _non_negative(
            "l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength
        )
        self.beta = beta

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return 19 if self._l2_shrinkage_regularization_strength > 0.0 else 17

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._add_slot(var, "accumulator", self._initial_accumulator_value)
            self._add_slot(var, "linear", 0.0)

    def _prepare(self, lr: float, step: int) -> dict[str, float]:
        return {
            "lr": lr,
            "power": self._hyper_value("learning_rate_power", step),
            "l1": self._hyper_value("l1_regularization_strength", step),
            "l2": self._hyper_value("l2_regularization_strength", step),
            "beta": self._hyper_value("beta", step),
        }

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        t = var.dtype.type
        c = coefficients
        lr = t(c["lr"])
        adjusted_l2 = t(c["l2"]) + t(c["beta"]) / (t(2.0) * lr)
        kernels.ftrl_update(
            var,
            grad,
            slots["accumulator"],
            slots["linear"],
            lr,
            c["l1"],
            adjusted_l2,
            self._l2_shrinkage_regularization_strength,
            c["power"],
        )

    def _prepare_half(self, lr: float, step: int) -> dict[str, Any]:
        # Keras casts the hyperparameters to float16; adjusted l2 = l2 + beta / (2 lr) and the
        # functor's 2 * l2 (and 2 * l2_shrinkage) are computed in half.
        h = np.float16
        c = self._prepare(lr, step)
        lr16 = h(c["lr"])
        adjusted = h(c["l2"]) + h(c["beta"]) / (h(2.0) * lr16)
        return {
            "lr": np.float32(lr16),
            "l1": half(c["l1"]),
            "two_l2": np.float32(h(2.0) * adjusted),
            "two_l2_shrinkage": np.float32(h(2.0) * h(self._l2_shrinkage_regularization_strength)),
            "power": half(c["power"]),
        }

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            **self._serialize_hyperparameters("learning_rate", "decay"),
            "initial_accumulator_value": self._initial_accumulator_value,
            **self._serialize_hyperparameters(
                "learning_rate_power",
                "l1_regularization_strength",
                "l2_regularization_strength",
                "beta",
            ),
            "l2_shrinkage_regularization_strength": self._l2_shrinkage_regularization_strength,
        }
