"""``ipu_tensorflow_addons.keras.optimizers``: ``SGDIpuOptimizer``, ``AdamIpuOptimizer``,
``LAMBIpuOptimizer`` and their base ``IpuOptimizerBase`` (SDK 3.x).

Graphcore's optimizers let the optimizer state have its own dtype (``m_dtype``, ``v_dtype``,
``vhat_dtype``, ``momentum_accum_dtype``; default the variable's) and compute the update in
float32 (``optimizer_compute_precisions``, only float32 is simulated). Each step widens the
gradient and the state to float32, computes, stores the state back in its dtype (rounded to
nearest) and subtracts the update cast to the variable's dtype, so float16 variables and
float16 state round as on the IPU. Outlining (``outline_apply_gradients``) only saves code
memory and is not modelled. Rules: :mod:`ipusim.kernels.optim_ipu` (Adam with explicit
debiasing, LAMB's layer-wise trust ratio ``||w|| / ||update||``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.spec import canonical_dtype
from ipusim.graph.variable import Variable
from ipusim.keras.keyword_init import fields
from ipusim.keras.optimizers.algorithms import SGD
from ipusim.keras.optimizers.hyper import DEFAULT_EPSILON, Hyper
from ipusim.keras.optimizers.optimizer import Optimizer
from ipusim.kernels import optim as optim_kernels
from ipusim.kernels import optim_ipu as kernels
from ipusim.kernels.half_optim import HalfUpdate

__all__ = ["AdamIpuOptimizer", "IpuOptimizerBase", "LAMBIpuOptimizer", "SGDIpuOptimizer"]


def _check_precisions(owner: str, precisions: Any) -> tuple[str, ...]:
    names = tuple(canonical_dtype(p) for p in precisions)
    if any(n != "float32" for n in names):
        raise UnsupportedError(
            f"{owner}(optimizer_compute_precisions={names}): only float32 optimizer compute is "
            "simulated by ipusim; keep the default (float32)"
        )
    return names


class IpuOptimizerBase(Optimizer):
    """Base of the IPU Addons optimizers: typed optimizer state, float32 compute."""

    _state_dtypes: dict[str, Any]

    def _init_ipu(self, precisions: Any, outline: bool, outline_kwargs: Any) -> None:
        self.opt_dtypes = _check_precisions(type(self).__name__, precisions)
        self.outline_apply_gradients = bool(outline)
        self.outline_apply_gradients_kwargs = dict(outline_kwargs or {})

    def get_slot_dtype(self, var: Variable, slot_name: str) -> Any:
        return self._state_dtypes.get(slot_name)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for slot_name, _ in self._slot_specs():
            for var in var_list:
                # An existing slot is kept whatever its shape (no check, unlike Keras' optimizers).
                if slot_name not in self._slots.get(var.name, {}):
                    dtype = self.get_slot_dtype(var, slot_name) or var.value.dtype
                    self._add_slot(var, slot_name, 0.0, dtype=canonical_dtype(dtype))

    # float16 variables take the same float32 path (the base class would use its half kernels).
    def _prepare_half(self, lr: float, step: int) -> dict[str, Any]:
        return self._prepare(lr, step)

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, Any],  # what _prepare_half returned: _prepare's scalars
    ) -> None:
        self._apply_dense(grad, var, slots, coefficients)

    @staticmethod
    def _subtract(var: np.ndarray, delta: np.ndarray) -> None:
        """``var -= cast(delta, var.dtype)`` with one rounding per operation."""
        step = delta.astype(var.dtype)
        var[...] = (var.astype(np.float32) - step.astype(np.float32)).astype(var.dtype)

    def _ipu_config(self) -> dict[str, Any]:
        return {
            "optimizer_compute_precisions": self.opt_dtypes,
            **fields(self, "outline_apply_gradients outline_apply_gradients_kwargs"),
        }

    def _base_config(self) -> dict[str, Any]:
        return {**super()._base_config(), **self._ipu_config()}


class SGDIpuOptimizer(IpuOptimizerBase, SGD):
    """SGD with momentum whose accumulator may have its own dtype (``momentum_accum_dtype``)."""

    def __init__(
        self,
        learning_rate: Any = 0.01,
        momentum: Any = 0.0,
        nesterov: bool = False,
        name: str = "SGD",
        momentum_accum_dtype: Any = None,
        optimizer_compute_precisions: Any = ("float32",),
        outline_apply_gradients: bool = False,
        outline_apply_gradients_kwargs: Any = None,
        **kwargs: Any,
    ) -> None:
        SGD.__init__(self, learning_rate, momentum, nesterov, name, **kwargs)
        self._init_ipu(
            optimizer_compute_precisions, outline_apply_gradients, outline_apply_gradients_kwargs
        )
        self.momentum_accum_dtype = momentum_accum_dtype
        self._state_dtypes = {"momentum": momentum_accum_dtype}

    # Without momentum the update is ResourceApplyGradientDescent in the variable's dtype: the
    # Keras SGD path (half kernels for float16 variables).
    def _prepare_half(self, lr: float, step: int) -> dict[str, Any]:
        return self._prepare(lr, step) if self._momentum else SGD._prepare_half(self, lr, step)

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, Any],  # what _prepare_half returned (float32 or float16 path)
    ) -> None:
        if self._momentum:
            self._apply_dense(grad, var, slots, coefficients)
        else:
            SGD._apply_half(self, update, grad, var, slots, coefficients)

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        if not self._momentum:
            SGD._apply_dense(self, grad, var, slots, coefficients)
            return
        accum = slots["momentum"]
        work = accum.astype(np.float32)
        delta = np.zeros(var.shape, np.float32)  # the step the Keras momentum rule adds
        c = coefficients
        optim_kernels.sgd_momentum_update(
            delta, np.asarray(grad, np.float32), work, c["lr"], c["momentum"], self.nesterov
        )
        accum[...] = work.astype(accum.dtype)
        self._subtract(var, -delta)

    def _base_config(self) -> dict[str, Any]:
        return Optimizer._base_config(self)  # SGD's entries come first, as in the SDK

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            **self._ipu_config(),
            "momentum_accum_dtype": self.momentum_accum_dtype,
        }


class _AdamFamily(IpuOptimizerBase):
    beta_1 = Hyper()
    beta_2 = Hyper()
    epsilon: float  # set by each subclass's constructor

    # The float rate and float32 scalars (the update is computed in float32).
    def _prepare(self, lr: float, step: int) -> dict[str, Any]:
        f = np.float32
        t = f(step + 1)
        beta_1, beta_2 = f(self._hyper_value("beta_1", step)), f(self._hyper_value("beta_2", step))
        debias = getattr(self, "debiasing", True)
        return {
            "lr": lr,
            "beta_1": beta_1,
            "beta_2": beta_2,
            "m_scale": f(1) - beta_1**t if debias else f(1),
            "v_scale": f(1) - beta_2**t if debias else f(1),
        }

    def _direction(
        self,
        grad: np.ndarray,
        slots: dict[str, np.ndarray],
        c: dict[str, float],
        vhat: bool = False,
    ) -> np.ndarray:
        """Update the moments (float32) and return ``m_hat / (sqrt(v_hat) + eps)``."""
        work = {k: slots[k].astype(np.float32).reshape(-1) for k in slots}
        g = np.asarray(grad, np.float32).reshape(-1)
        kernels.moments(g, work["m"], work["v"], c["beta_1"], c["beta_2"])
        direction = kernels.adam_direction(
            work["m"],
            work["v"],
            work.get("vhat") if vhat else None,
            c["m_scale"],
            c["v_scale"],
            self.epsilon,
        )
        for name, array in work.items():
            slots[name].reshape(-1)[...] = array.astype(slots[name].dtype)
        return direction


class AdamIpuOptimizer(_AdamFamily):
    """Adam with typed state and explicit debiasing (``AdamIpuOptimizer``).

    ``m = b1 m + (1 - b1) g``; ``v = b2 v + (1 - b2) g²``; ``var -= lr * m_hat /
    (sqrt(v_hat) + epsilon)`` with ``m_hat = m / (1 - b1**t)``, ``v_hat = v / (1 - b2**t)``
    (``debiasing=False``: no division); AMSGrad keeps ``vhat = max(vhat, v_hat)``.
    """

    _config_hyper = ("learning_rate", "decay", "beta_1", "beta_2")
    _config_fields = ("epsilon", "amsgrad", "m_dtype", "v_dtype", "vhat_dtype", "debiasing")

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: Any = 0.9,
        beta_2: Any = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        name: str = "Adam",
        m_dtype: Any = None,
        v_dtype: Any = None,
        vhat_dtype: Any = None,
        debiasing: bool = True,
        optimizer_compute_precisions: Any = ("float32",),
        outline_apply_gradients: bool = False,
        outline_apply_gradients_kwargs: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        self._init_ipu(
            optimizer_compute_precisions, outline_apply_gradients, outline_apply_gradients_kwargs
        )
        self.beta_1, self.beta_2 = beta_1, beta_2
        self.epsilon = float(epsilon or DEFAULT_EPSILON)
        self.amsgrad = bool(amsgrad)
        self.m_dtype, self.v_dtype, self.vhat_dtype = m_dtype, v_dtype, vhat_dtype
        self.debiasing = bool(debiasing)
        self._state_dtypes = {"m": m_dtype, "v": v_dtype, "vhat": vhat_dtype}

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        return 14 if self.amsgrad else 13  # moments 7, direction 5 (6), lr multiply

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [("m", 0.0), ("v", 0.0)] + ([("vhat", 0.0)] if self.amsgrad else [])

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        direction = self._direction(grad, slots, coefficients, vhat=self.amsgrad)
        delta = np.float32(coefficients["lr"]) * direction
        self._subtract(var, delta.reshape(var.shape))


class LAMBIpuOptimizer(_AdamFamily):
    """LAMB (You et al. 2019) as ``LAMBIpuOptimizer``: Adam's direction plus weight decay,
    scaled per variable by the trust ratio ``||w|| / ||update||`` (1 when either is zero;
    ``||w||`` clipped to ``weight_norm_clip``); variables matching
    ``exclude_from_weight_decay`` / ``exclude_from_layer_adaptation`` skip those parts.
    """

    weight_decay_rate = Hyper()
    _config_hyper = ("learning_rate", "weight_decay_rate", "decay", "beta_1", "beta_2")
    _config_fields = ("epsilon", "m_dtype", "v_dtype", "debiasing")
    _slot_order = ("m", "v")

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: Any = 0.9,
        beta_2: Any = 0.999,
        epsilon: float = 1e-6,
        weight_decay_rate: Any = 0.0,
        exclude_from_weight_decay: list[str] | None = None,
        exclude_from_layer_adaptation: list[str] | None = None,
        name: str = "LAMB",
        debiasing: bool = True,
        m_dtype: Any = None,
        v_dtype: Any = None,
        weight_norm_clip: float | None = None,
        optimizer_compute_precisions: Any = ("float32", "float32"),
        outline_apply_gradients: bool = False,
        outline_apply_gradients_kwargs: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, learning_rate, **kwargs)
        if len(tuple(optimizer_compute_precisions)) != 2:
            raise ConfigurationError(
                "Must provide a list of two elements for the optimizer compute precision. The "
                "final stage of the weight update can be done in a different precision to the "
                "initial stage."
            )
        self._init_ipu(
            optimizer_compute_precisions, outline_apply_gradients, outline_apply_gradients_kwargs
        )
        self.beta_1, self.beta_2 = beta_1, beta_2
        self.weight_decay_rate = weight_decay_rate
        self.epsilon = float(epsilon or DEFAULT_EPSILON)
        self.exclude_from_weight_decay = exclude_from_weight_decay
        self.exclude_from_layer_adaptation = exclude_from_layer_adaptation
        self.weight_norm_clip = weight_norm_clip
        self.m_dtype, self.v_dtype = m_dtype, v_dtype
        self.debiasing = bool(debiasing)
        self._state_dtypes = {"m": m_dtype, "v": v_dtype}

    #: moments 7, direction 5, weight decay 2, the two norms 4, the scaled subtract 2.
    update_flops_per_element = 20

    def _matches(self, patterns: list[str] | None, name: str) -> bool:
        return any(re.search(p, name) for p in patterns or [])

    def apply_gradients(self, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        pairs = list(grads_and_vars)
        self._names_by_id = {id(v.value): re.sub(r":\d+$", "", v.name) for _, v in pairs}
        return super().apply_gradients(pairs, *args, **kwargs)

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        name = self._names_by_id.get(id(var), "")
        direction = self._direction(grad, slots, coefficients)
        decay = 0.0
        if not self._matches(self.exclude_from_weight_decay, name):
            decay = self._hyper_value("weight_decay_rate", self.iterations)
        w_norm, u_norm = kernels.add_decay_and_norms(direction, var.reshape(-1), decay)
        ratio = np.float32(1.0)
        if not self._matches(self.exclude_from_layer_adaptation, name):
            if self.weight_norm_clip is not None:
                w_norm = min(w_norm, float(self.weight_norm_clip))
            if w_norm > 0 and u_norm > 0:
                ratio = np.float32(w_norm) / np.float32(u_norm)
        scale = np.float32(coefficients["lr"]) * ratio
        self._subtract(var, (scale * direction).reshape(var.shape))
