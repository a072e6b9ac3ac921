"""SGD, RMSprop, Adam and Adagrad with tf.keras 2.x (``optimizer_v2``) defaults and update rules.

``update_flops_per_element`` counts the arithmetic operations (multiply, add, subtract, divide,
square root, max) the fused kernel performs per variable element, with per-step scalars such as
``1 - rho`` or Adam's bias-corrected ``lr_t`` computed once on the host:

============================  =====  ===================================================
optimizer                     FLOPs  rule
============================  =====  ===================================================
SGD                           2      ``var -= lr * g``
SGD(momentum)                 4      ``v = m * v - lr * g; var += v``
SGD(momentum, nesterov)       6      ``v = m * v - lr * g; var += m * v - lr * g``
RMSprop                       9      ``rms = rho * rms + (1 - rho) * g²; var -= lr * g / (√rms + ε)``
RMSprop(centered)             14     ``+ mg = rho * mg + (1 - rho) * g; denom = rms - mg²``
RMSprop(momentum)             11     ``mom = m * mom + lr * g / √(rms + ε); var -= mom``
RMSprop(momentum, centered)   16     both of the above
Adam                          12     ``m, v`` moments, ``var -= lr_t * m / (√v + ε)``
Adam(amsgrad)                 13     ``+ vhat = max(vhat, v)``
Adagrad                       7      ``acc += g²; var -= lr * g / (√acc + ε)``
============================  =====  ===================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras.optimizers.hyper import DEFAULT_EPSILON, Hyper, half
from ipusim.keras.optimizers.optimizer import Optimizer
from ipusim.kernels import optim as optim_kernels
from ipusim.kernels.half_optim import HalfUpdate

_ONE = np.float16(1.0)


def _check_momentum(owner: str, momentum: Any) -> None:
    if isinstance(momentum, int | float) and not 0.0 <= momentum <= 1.0:
        raise ConfigurationError(f"{owner}: momentum must be between [0, 1], received {momentum!r}")


def _is_positive_hyper(value: Any) -> bool:
    # As Keras: a callable (or schedule) momentum always enables the momentum slot.
    return callable(value) or float(value) > 0.0


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum, as ``tf.keras.optimizers.SGD``.

    With ``momentum == 0`` there is no slot and ``var -= lr * g``. Otherwise a ``"momentum"`` slot
    (zeros) holds the velocity ``v = momentum * v - lr * g`` and ``var += v`` (Nesterov:
    ``var += momentum * v - lr * g``). Whether the slot exists is decided at construction.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.01.
        momentum: float in [0, 1]. Defaults to 0.
        nesterov: whether to apply Nesterov momentum.
        name: slot-name prefix. Defaults to ``"SGD"``.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``decay``.
    """

    momentum = Hyper()
    _config_hyper = ("learning_rate", "decay", "momentum")
    _config_fields = ("nesterov",)
    _step_hyper = ("momentum",)

    def __init__(
        self,
        learning_rate: Any = 0.01,
        momentum: Any = 0.0,
        nesterov: bool = False,
        name: str = "SGD",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        _check_momentum("SGD", momentum)
        self.momentum = momentum
        self._momentum = _is_positive_hyper(momentum)
        self.nesterov = bool(nesterov)

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        if not self._momentum:
            return 2
        return 6 if self.nesterov else 4

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [("momentum", 0.0)] if self._momentum else []

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        c = coefficients
        if self._momentum:
            optim_kernels.sgd_momentum_update(
                var, grad, slots["momentum"], c["lr"], c["momentum"], self.nesterov
            )
        else:
            optim_kernels.sgd_update(var, grad, c["lr"])

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        return {"lr": half(lr), "momentum": half(self._hyper_value("momentum", step))}

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, np.float32],
    ) -> None:
        c = coefficients
        if self._momentum:
            update.run(
                "momentum", [var, grad, slots["momentum"]], c["lr"], c["momentum"], self.nesterov
            )
        else:
            update.run("sgd", [var, grad], c["lr"])


class RMSprop(Optimizer):
    """RMSprop as ``tf.keras.optimizers.RMSprop`` (TF 2.x: slots start at zero).

    Slots, created in this order: ``"rms"``, then ``"momentum"`` if ``momentum > 0``, then ``"mg"``
    if ``centered``. See :func:`ipusim.kernels.optim.rmsprop_update` for the rules; note that with
    momentum epsilon sits *inside* the square root, as in TensorFlow's ``ResourceApplyRMSProp``.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        rho: discounting factor for the gradient history. Defaults to 0.9.
        momentum: float in [0, 1]. Defaults to 0.
        epsilon: numerical-stability constant; None or 0 means 1e-7 (Keras' ``epsilon or 1e-7``).
        centered: normalise by the estimated variance of the gradient.
        name: slot-name prefix. Defaults to ``"RMSprop"``.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``decay``.
    """

    rho = Hyper()
    momentum = Hyper()
    _config_hyper = ("learning_rate", "decay", "rho", "momentum")
    _config_fields = ("epsilon", "centered")
    _step_hyper = ("rho", "momentum")

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: float | None = 1e-07,
        centered: bool = False,
        name: str = "RMSprop",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        _check_momentum("RMSprop", momentum)
        self.rho = rho
        self.momentum = momentum
        self._momentum = _is_positive_hyper(momentum)
        self.epsilon = float(epsilon or DEFAULT_EPSILON)
        self.centered = bool(centered)

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return (11 if self._momentum else 9) + (5 if self.centered else 0)

    def _slot_specs(self) -> list[tuple[str, float]]:
        wanted = {"rms": True, "momentum": self._momentum, "mg": self.centered}
        return [(name, 0.0) for name, on in wanted.items() if on]

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        optim_kernels.rmsprop_update(
            var,
            grad,
            slots["rms"],
            coefficients["lr"],
            coefficients["rho"],
            self.epsilon,
            mg=slots.get("mg"),
            mom=slots.get("momentum"),
            momentum=coefficients["momentum"],
        )

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        return {
            "lr": half(lr),
            **self._half_decays(step, "rho"),
            "momentum": half(self._hyper_value("momentum", step)),
            "epsilon": half(self.epsilon),
        }

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, np.float32],
    ) -> None:
        c = coefficients
        if self._momentum:
            update.run(
                "rmsprop_momentum",
                [var, grad, slots["rms"], slots.get("mg"), slots["momentum"]],
                self.centered,
                c["lr"],
                c["one_minus_rho"],
                c["momentum"],
                c["epsilon"],
            )
        else:
            update.run(
                "rmsprop",
                [var, grad, slots["rms"], slots.get("mg")],
                self.centered,
                c["lr"],
                c["rho"],
                c["one_minus_rho"],
                c["epsilon"],
            )


class Adam(Optimizer):
    """Adam as ``tf.keras.optimizers.Adam`` (bias correction folded into the step size).

    With ``t = iterations + 1``: ``lr_t = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)``,
    ``m = beta_1 * m + (1 - beta_1) * g``, ``v = beta_2 * v + (1 - beta_2) * g²``,
    ``var -= lr_t * m / (sqrt(v) + epsilon)``; AMSGrad uses ``vhat = max(vhat, v)`` instead of
    ``v`` in the denominator. Slots: ``"m"``, ``"v"`` (and ``"vhat"``), zeros.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: first-moment decay. Defaults to 0.9.
        beta_2: second-moment decay. Defaults to 0.999.
        epsilon: numerical-stability constant; None or 0 means 1e-7 (Keras' ``epsilon or 1e-7``).
        amsgrad: use the AMSGrad variant.
        name: slot-name prefix. Defaults to ``"Adam"``.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``decay``.
    """

    beta_1 = Hyper()
    beta_2 = Hyper()
    _config_hyper: tuple[str, ...] = ("learning_rate", "decay", "beta_1", "beta_2")
    _config_fields: tuple[str, ...] = ("epsilon", "amsgrad")
    _step_hyper = ("beta_1", "beta_2")

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: Any = 0.9,
        beta_2: Any = 0.999,
        epsilon: float | None = 1e-07,
        amsgrad: bool = False,
        name: str = "Adam",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = float(epsilon or DEFAULT_EPSILON)
        self.amsgrad = bool(amsgrad)

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return 13 if self.amsgrad else 12

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [("m", 0.0), ("v", 0.0)] + ([("vhat", 0.0)] if self.amsgrad else [])

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        # As ResourceApplyAdam: the powers and alpha in the variable's precision.
        t = var.dtype.type
        local_step = t(coefficients["step"] + 1)
        one = t(1)
        b1, b2 = t(coefficients["beta_1"]), t(coefficients["beta_2"])
        alpha = t(coefficients["lr"]) * np.sqrt(one - b2**local_step) / (one - b1**local_step)
        optim_kernels.adam_update(
            var,
            grad,
            slots["m"],
            slots["v"],
            alpha,
            coefficients["beta_1"],
            coefficients["beta_2"],
            self.epsilon,
            vhat=slots.get("vhat"),
        )

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        # Keras' _prepare_local and ResourceApplyAdam's alpha, in float16 arithmetic.
        b1 = np.float16(self._hyper_value("beta_1", step))
        b2 = np.float16(self._hyper_value("beta_2", step))
        t = np.float16(step + 1)
        b1_power, b2_power = b1**t, b2**t
        alpha = np.float16(lr) * np.sqrt(_ONE - b2_power) / (_ONE - b1_power)
        return {
            "alpha": np.float32(alpha),
            "one_minus_beta_1": np.float32(_ONE - b1),
            "one_minus_beta_2": np.float32(_ONE - b2),
            "epsilon": half(self.epsilon),
        }

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, np.float32],
    ) -> None:
        c = coefficients
        update.run(
            "adam",
            [var, grad, slots["m"], slots["v"], slots.get("vhat")],
            self.amsgrad,
            c["alpha"],
            c["one_minus_beta_1"],
            c["one_minus_beta_2"],
            c["epsilon"],
        )


class Adagrad(Optimizer):
    """Adagrad as ``tf.keras.optimizers.Adagrad``: ``acc += g²; var -= lr * g / (√acc + ε)``.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        initial_accumulator_value: starting value of the ``"accumulator"`` slot (≥ 0).
        epsilon: numerical-stability constant; None means 1e-7.
        name: slot-name prefix. Defaults to ``"Adagrad"``.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``decay``.
    """

    update_flops_per_element = 7
    _config_hyper = ("learning_rate", "decay")
    _config_fields = ("initial_accumulator_value", "epsilon")
    _slot_order = ("accumulator",)
    _half_kernel = "adagrad"

    def __init__(
        self,
        learning_rate: Any = 0.001,
        initial_accumulator_value: float = 0.1,
        epsilon: float | None = 1e-07,
        name: str = "Adagrad",
        **kwargs: Any,
    ) -> None:
        if initial_accumulator_value < 0.0:
            raise ConfigurationError(
                "Adagrad: initial_accumulator_value must be non-negative, received "
                f"{initial_accumulator_value!r}"
            )
        super().__init__(name, learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(DEFAULT_EPSILON if epsilon is None else epsilon)

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [("accumulator", self.initial_accumulator_value)]

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        optim_kernels.adagrad_update(
            var, grad, slots["accumulator"], coefficients["lr"], self.epsilon
        )

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        return {"lr": half(lr), "epsilon": half(self.epsilon)}
