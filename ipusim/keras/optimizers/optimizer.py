"""The optimizer base class: Keras 2 ``OptimizerV2`` semantics on ipusim variables.

``apply_gradients`` takes NumPy gradients and :class:`~ipusim.graph.variable.Variable` objects and
updates each variable in place with one fused Numba kernel (:mod:`ipusim.kernels.optim`). As in
TensorFlow 2.4–2.6:

* gradient transforms run in the order ``clipvalue`` → ``clipnorm`` (per tensor) →
  ``global_clipnorm``; ``clipnorm`` and ``global_clipnorm`` are mutually exclusive;
* the learning rate is ``learning_rate(step)`` for a schedule (``step`` = ``iterations`` before the
  update) divided by ``1 + decay * step`` when the legacy ``decay`` is set;
* slots are created lazily, slot by slot for every variable of the call (Keras' creation order),
  and ``variables()`` is ``[iterations] + slots`` in creation order;
* ``iterations`` is incremented once per ``apply_gradients`` call that updates something.

Half precision (``docs/numerics.md``): float16 variables get float16 slots and float16
hyperparameters and are updated by :mod:`ipusim.kernels.half_optim`, one binary16 rounding per
operation, as TensorFlow's update ops compute in the variable's dtype. When the run computes
float32 as half (``ipusim.precision`` fp16.16 / fp16.32), float32 variables are updated in
float32 with float32 slots and the new value is rounded to half (stochastically with ``esr``): the
weights live in half precision, the optimizer state in single precision, as the timing model
charges them.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import math
import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError, KeyNotFoundError, UnsupportedError
from ipusim.graph.numerics import FloatingPointTrap, Numerics, current_numerics
from ipusim.graph.ops import update as update_ops
from ipusim.graph.variable import Variable
from ipusim.keras.optimizers import schedules
from ipusim.keras.optimizers.hyper import Hyper, half, resolve_hyper, serialize_hyper
from ipusim.kernels import optim as optim_kernels
from ipusim.kernels.half import round_to_half, stream_key
from ipusim.kernels.half_optim import HalfUpdate

logger = logging.getLogger("ipusim")

#: Keyword arguments every optimizer accepts besides its own constructor arguments.
ALLOWED_KWARGS: tuple[str, ...] = ("clipnorm", "clipvalue", "global_clipnorm", "lr", "decay")


class Optimizer:
    """Base class of every optimizer (Keras 2 ``OptimizerV2``).

    Subclasses define ``_apply_dense(grad, var, slots, coefficients)`` (one kernel call) and
    ``_prepare_half`` (float16 scalars), plus ``update_flops_per_element`` for the timing model
    (``slots_per_variable`` counts their slots). Their slots, per-step scalars, float16
    kernel and ``get_config`` come from class tables (``_slot_order``, ``_step_hyper``,
    ``_half_kernel``, ``_config_hyper``, ``_config_fields``) unless they override
    ``_slot_specs()``, ``_prepare(lr, step)``, ``_apply_half`` or ``get_config()``.

    Args:
        name: prefix of slot-variable names (``"Adam/dense/kernel/m:0"``).
        learning_rate: a float, a ``LearningRateSchedule`` or a callable (see
            :func:`~ipusim.keras.optimizers.hyper.resolve_hyper`).
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm`` (each ≥ 0), ``lr`` (legacy alias
            of ``learning_rate``, takes precedence) and ``decay`` (legacy inverse-time decay).

    Raises:
        TypeError: for an unknown keyword argument.
        ValueError: for a negative keyword argument or both ``clipnorm`` and ``global_clipnorm``.
    """

    learning_rate = Hyper()
    decay = Hyper()

    #: Arithmetic operations per variable element in one update (overridden by subclasses).
    update_flops_per_element: int = 0
    #: What :meth:`get_config` lists after the base keys: hyperparameters (serialized: a
    #: schedule as its config) and plain attributes, in Keras' order.
    _config_hyper: tuple[str, ...] = ()
    _config_fields: tuple[str, ...] = ()
    #: Slot names in creation order (the default :meth:`_slot_specs` creates them at zero) and
    #: in the order the default :meth:`_apply_half` passes them to ``_half_kernel``.
    _slot_order: tuple[str, ...] = ()
    #: Hyperparameters the default :meth:`_prepare` resolves at the step, besides the rate.
    _step_hyper: tuple[str, ...] = ()
    #: The float16 kernel of the default :meth:`_apply_half` (a function or a name of
    #: :mod:`ipusim.kernels.half_optim`), given ``[var, grad, *slots]`` and the values of
    #: :meth:`_prepare_half` in order; None: float16 variables are not supported.
    _half_kernel: Any = None
    #: Set (True) by the LossScaleOptimizer wrapping this optimizer; absent otherwise.
    _is_wrapped_by_loss_scale_optimizer: bool

    def __init__(self, name: str, learning_rate: Any = 0.001, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            if key not in ALLOWED_KWARGS:
                self._raise_unknown_kwarg(key)
            if value is None or callable(value):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                raise InvalidTypeError(
                    f"{type(self).__name__}: {key} must be a number, received {value!r}"
                )
            if value < 0:
                raise ConfigurationError(
                    f"{type(self).__name__}: expected {key} >= 0, received {value!r}"
                )
        if not isinstance(name, str) or not name:
            raise ConfigurationError(
                f"optimizer name must be a non-empty string, received {name!r}"
            )
        self._name = name
        self._hyper: dict[str, Any] = {}
        self._slots: dict[str, dict[str, Variable]] = {}
        self._slot_names: list[str] = []
        self._weights: list[Variable] = []
        self._iterations = Variable(np.zeros((), dtype=np.int64), f"{name}/iter:0", False)
        self.learning_rate = kwargs.get("lr", learning_rate)
        self.decay = kwargs.get("decay", 0.0) or 0.0
        self.clipnorm: float | None = kwargs.get("clipnorm")
        self.clipvalue: float | None = kwargs.get("clipvalue")
        self.global_clipnorm: float | None = kwargs.get("global_clipnorm")
        if self.clipnorm is not None and self.global_clipnorm is not None:
            raise ConfigurationError(
                f"{type(self).__name__}: cannot accept both clipnorm ({self.clipnorm}) and "
                f"global_clipnorm ({self.global_clipnorm}); pass only one of them"
            )

    # --- public API ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def lr(self) -> Any:
        """Legacy alias of :attr:`learning_rate`."""
        return self.learning_rate

    @lr.setter
    def lr(self, value: Any) -> None:
        self.learning_rate = value

    @property
    def iterations(self) -> int:
        """Number of updates applied so far."""
        return int(self._iterations.value)

    @iterations.setter
    def iterations(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ConfigurationError(f"iterations must be a non-negative int, received {value!r}")
        self._iterations.value[...] = value

    @property
    def weights(self) -> list[Variable]:
        """``[iterations] + slots`` in creation order (same as :meth:`variables`)."""
        return [self._iterations, *self._weights]

    def variables(self) -> list[Variable]:
        """``[iterations] + slots`` in creation order."""
        return self.weights

    def get_weights(self) -> list[np.ndarray]:
        """Copies of :meth:`variables`' values."""
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights: list[np.ndarray]) -> None:
        """Set ``[iterations] + slots`` from arrays (e.g. another optimizer's ``get_weights()``).

        Raises:
            ValueError: if the number of arrays or any shape differs from :meth:`variables`.
        """
        params = self.weights
        if len(params) != len(weights):
            raise ConfigurationError(
                f"You called set_weights(weights) on optimizer {self._name} with a weight list of "
                f"length {len(weights)}, but the optimizer was expecting {len(params)} weights "
                "([iterations] + slots; slots exist only after the first apply_gradients)"
            )
        for param, value in zip(params, weights, strict=True):
            param.assign(value)

    def get_slot_names(self) -> list[str]:
        """Names of the slots created so far, in creation order (``["m", "v"]`` for Adam)."""
        return list(self._slot_names)

    def get_slot(self, var: Variable, slot_name: str) -> Variable:
        """The slot variable ``slot_name`` of ``var``.

        Raises:
            KeyError: naming the variable and the slots it has.
        """
        slots = self._slots.get(var.name, {})
        if slot_name not in slots:
            raise KeyNotFoundError(
                f"optimizer {self._name} has no slot {slot_name!r} for variable {var.name!r}; "
                f"its slots: {sorted(slots)}"
            )
        return slots[slot_name]

    def get_gradients(self, loss: Any, params: Any) -> list[Any]:
        """Gradients of ``loss`` computed in graph code w.r.t. ``params`` (see
        :func:`ipusim.keras.optimizers.tf_optimizer.loss_gradients`)."""
        from ipusim.keras.optimizers.tf_optimizer import loss_gradients

        return loss_gradients(loss, params)

    def apply_gradients(
        self,
        grads_and_vars: Iterable[tuple[np.ndarray | None, Variable]],
        name: str | None = None,
        experimental_aggregate_gradients: bool = True,
    ) -> Any:
        """Update each variable in place from its gradient, then increment :attr:`iterations`.

        Args:
            grads_and_vars: ``(gradient, variable)`` pairs; a ``None`` gradient skips the variable
                (with a warning). Gradients are converted to the variable's dtype. Traced
                gradients (graph Symbols, in a ``tf.function``) add the update to the graph being
                traced instead (:func:`ipusim.graph.ops.update.trace_apply`); it runs at every
                execution of that graph.
            name: ignored (Keras API compatibility).
            experimental_aggregate_gradients: ignored (gradients arrive already aggregated).

        Returns:
            The new value of :attr:`iterations`, or None when ``grads_and_vars`` is empty (with
            traced gradients: the update's operation).

        Raises:
            ValueError: if every gradient is None, or a gradient's shape differs from its
                variable's, or a variable appears twice.
            TypeError: if a variable is not an ipusim Variable or not float32/float64.
        """
        del name, experimental_aggregate_gradients
        grads_and_vars = list(grads_and_vars)
        if update_ops.has_traced_gradient(grads_and_vars):  # traced code: a node of its graph
            traced: list[tuple[object, object]] = list(grads_and_vars)
            return update_ops.trace_apply(self, traced)
        pairs = self._filter_grads(grads_and_vars)
        if not pairs:
            return None
        grads = [self._check_gradient(g, v) for g, v in pairs]
        var_list = [v for _, v in pairs]
        grads = self._transform_gradients(grads)
        self._create_slots(var_list)
        step = self.iterations
        lr = self._decayed_lr(step)
        coefficients = self._prepare(lr, step)
        numerics = current_numerics()
        half_coefficients = None
        overflows: list[str] = []
        for index, (grad, var) in enumerate(zip(grads, var_list, strict=True)):
            slots = {k: s.value for k, s in self._slots.get(var.name, {}).items()}
            key = stream_key(numerics.seed, zlib.crc32(self._name.encode()), step, index)
            if var.value.dtype == np.float16:
                if half_coefficients is None:
                    half_coefficients = self._prepare_half(lr, step)
                update = HalfUpdate(
                    numerics.stochastic_rounding_updates, key, numerics.nan_on_overflow
                )
                self._apply_half(update, grad, var.value, slots, half_coefficients)
                count = update.overflows
            else:
                count = self._apply_wide(grad, var.value, slots, coefficients, numerics, key)
            if count:
                overflows.append(var.name)
        self._iterations.value[...] += 1
        if overflows and numerics.trap_overflow:
            raise FloatingPointTrap(
                "oflo",
                f"the {type(self).__name__} weight update",
                f"the update of {overflows} overflowed the half-precision range",
            )
        return self.iterations

    def _apply_wide(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
        numerics: Numerics,
        key: int,
    ) -> int:
        """Update a float32/float64 variable; under fp16.x precision a float32 weight lives in
        half precision (rounded before and after). Returns the elements that overflowed."""
        emulated = numerics.emulate_half and var.dtype == np.float32
        if emulated:
            round_to_half(var, out=var)
        self._apply_dense(grad, var, slots, coefficients)
        if not emulated:
            return 0
        _, count = round_to_half(
            var,
            stochastic=numerics.stochastic_rounding_updates,
            key=key,
            nan_on_overflow=numerics.nan_on_overflow,
            out=var,
        )
        return int(count)

    def get_config(self) -> dict[str, Any]:
        """Constructor arguments (Keras 2 keys) that :meth:`from_config` accepts: the base
        entries (:meth:`_base_config`), then ``_config_hyper`` and ``_config_fields``."""
        config = self._base_config()
        config.update(self._serialize_hyperparameters(*self._config_hyper))
        config.update({field: getattr(self, field) for field in self._config_fields})
        return config

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Optimizer:
        """Instantiate from :meth:`get_config` output (``lr`` and schedule dicts accepted)."""
        config = dict(config)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(
                config["learning_rate"], custom_objects=custom_objects
            )
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self._name!r} iterations={self.iterations}>"

    # --- subclass hooks --------------------------------------------------------------------------

    @property
    def slots_per_variable(self) -> int:
        """Slots the timing model budgets per variable: those :meth:`_slot_specs` lists."""
        return len(self._slot_specs())

    def _base_config(self) -> dict[str, Any]:
        """The first entries of :meth:`get_config`: the name and the clipping arguments set."""
        config: dict[str, Any] = {"name": self._name}
        for key in ("clipnorm", "clipvalue", "global_clipnorm"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        return config

    def _slot_specs(self) -> list[tuple[str, float]]:
        """``(slot_name, initial_value)`` in Keras' creation order."""
        return [(name, 0.0) for name in self._slot_order]

    def _prepare(self, lr: float, step: int) -> dict[str, float]:
        """Scalars for this step's kernels: the decayed learning rate, the step and the
        ``_step_hyper`` hyperparameters' values at the step."""
        return {"lr": lr, "step": step, **self._hyper_values(step, *self._step_hyper)}

    def _apply_dense(
        self,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, float],
    ) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _apply_dense")

    def _prepare_half(self, lr: float, step: int) -> dict[str, np.float32]:
        """Per-step scalars for float16 variables: hyperparameters cast to float16 and anything
        derived from them computed in float16 arithmetic (Keras' ``_prepare_local`` in the
        variable's dtype)."""
        return {"lr": half(lr)}

    def _apply_half(
        self,
        update: HalfUpdate,
        grad: np.ndarray,
        var: np.ndarray,
        slots: dict[str, np.ndarray],
        coefficients: dict[str, np.float32],
    ) -> None:
        """Update a float16 variable in place (see :mod:`ipusim.kernels.half_optim`)."""
        if self._half_kernel is None:
            raise UnsupportedError(
                f"{type(self).__name__} cannot update float16 variables yet; keep the variables "
                "float32 (for example with the 'mixed_float16' policy)"
            )
        arrays = [var, grad, *(slots[name] for name in self._slot_order)]
        update.run(self._half_kernel, arrays, *coefficients.values())

    # --- helpers ---------------------------------------------------------------------------------

    def _serialize_hyperparameters(self, *names: str) -> dict[str, Any]:
        """The hyperparameters ``names``, in order, as ``get_config`` lists them."""
        return {name: serialize_hyper(self._hyper[name], self.iterations) for name in names}

    def _half_decays(self, step: int, *names: str) -> dict[str, np.float32]:
        """Each hyperparameter of ``names`` at ``step`` cast to float16, then ``one_minus_<name>``
        computed in float16 (as Keras' ``1 - rho`` in a float16 variable's dtype)."""
        values: dict[str, np.float32] = {}
        for name in names:
            value = np.float16(self._hyper_value(name, step))
            values[name] = np.float32(value)
            values[f"one_minus_{name}"] = np.float32(np.float16(1.0) - value)
        return values

    def _hyper_value(self, name: str, step: int) -> float:
        return resolve_hyper(self._hyper[name], step)

    def _hyper_values(self, step: int, *names: str) -> dict[str, float]:
        """``{name: _hyper_value(name, step)}`` for ``names``, in order (for ``_prepare``)."""
        return {name: self._hyper_value(name, step) for name in names}

    def _decayed_lr(self, step: int) -> float:
        lr = self._hyper_value("learning_rate", step)
        decay = self._hyper_value("decay", step)
        if decay > 0.0:
            lr = lr / (1.0 + decay * step)
        return lr

    def _raise_unknown_kwarg(self, key: str) -> None:
        own = [
            p
            for p in inspect.signature(type(self).__init__).parameters
            if p not in ("self", "kwargs")
        ]
        valid = own + [k for k in ALLOWED_KWARGS if k not in own]
        close = difflib.get_close_matches(key, valid, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InvalidTypeError(
            f"Unexpected keyword argument passed to optimizer {type(self).__name__}: {key!r}. "
            f"Valid arguments: {', '.join(valid)}.{hint}"
        )

    def _filter_grads(self, grads_and_vars: Iterable[Any]) -> list[tuple[Any, Variable]]:
        pairs: list[tuple[Any, Variable]] = []
        for item in grads_and_vars:
            try:
                grad, var = item
            except (TypeError, ValueError):
                raise InvalidTypeError(
                    f"apply_gradients expects (gradient, variable) pairs, received {item!r}"
                ) from None
            if not getattr(var, "_is_ipusim_variable", False):
                raise InvalidTypeError(
                    "apply_gradients expects ipusim Variables as the second element of each "
                    f"pair, received {type(var).__name__}: {var!r}"
                )
            pairs.append((grad, var))
        if not pairs:
            return []
        filtered = [(g, v) for g, v in pairs if g is not None]
        if not filtered:
            raise ConfigurationError(
                f"No gradients provided for any variable: {[v.name for _, v in pairs]}"
            )
        missing = [v.name for g, v in pairs if g is None]
        if missing:
            logger.warning(
                "Gradients do not exist for variables %s when minimizing the loss.", missing
            )
        names = [v.name for _, v in filtered]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(
                f"apply_gradients received more than one gradient for variables {duplicates}; "
                "sum them first"
            )
        return filtered

    def _check_gradient(self, grad: Any, var: Variable) -> np.ndarray:
        value = var.value
        if value.dtype.name not in (*optim_kernels.UPDATE_DTYPES, "float16"):
            raise InvalidTypeError(
                f"{type(self).__name__} cannot update variable {var.name!r} of dtype "
                f"{value.dtype.name}; optimizers update float16, float32 or float64 variables"
            )
        array = np.asarray(grad)
        if array.shape != value.shape:
            raise ConfigurationError(
                f"gradient for variable {var.name!r} has shape {array.shape}, but the variable "
                f"has shape {value.shape}; pass a gradient of the variable's shape"
            )
        return np.ascontiguousarray(array, dtype=value.dtype)

    def _transform_gradients(self, grads: list[np.ndarray]) -> list[np.ndarray]:
        if any(g.dtype == np.float16 for g in grads) and (
            self.clipvalue is not None
            or self.clipnorm is not None
            or self.global_clipnorm is not None
        ):
            # Clip in float32 and round back: the clipping kernels have no float16 path.
            wide = self._transform_gradients([g.astype(np.float32) for g in grads])
            return [w.astype(g.dtype) for w, g in zip(wide, grads)]
        if self.clipvalue is not None:
            grads = [optim_kernels.clip_by_value(g, float(self.clipvalue)) for g in grads]
        if self.clipnorm is not None:
            clip = float(self.clipnorm)
            clipped = []
            for g in grads:
                norm = math.sqrt(optim_kernels.l2_norm_squared(g))
                factor = clip / max(norm, clip) if not math.isnan(norm) else math.nan
                clipped.append(g if factor == 1.0 else optim_kernels.scale(g, factor))
            grads = clipped
        if self.global_clipnorm is not None:
            clip = float(self.global_clipnorm)
            global_norm = math.sqrt(sum(optim_kernels.l2_norm_squared(g) for g in grads))
            if not math.isfinite(global_norm):
                factor = math.nan  # as tf.clip_by_global_norm: a non-finite norm poisons all
            elif global_norm == 0.0:
                factor = 1.0
            else:
                factor = clip * min(1.0 / global_norm, 1.0 / clip)
            if factor != 1.0:
                grads = [optim_kernels.scale(g, factor) for g in grads]
        return grads

    def _create_slots(self, var_list: list[Variable]) -> None:
        for slot_name, initial in self._slot_specs():
            for var in var_list:
                self._add_slot(var, slot_name, initial)

    def _add_slot(
        self,
        var: Variable,
        slot_name: str,
        initial: float,
        shape: tuple[int, ...] | None = None,
        dtype: Any = None,
    ) -> Variable:
        """The slot ``slot_name`` of ``var``, created filled with ``initial``, of ``var``'s shape
        and dtype unless ``shape`` (Adafactor's factored moments) or ``dtype`` (the IPU
        optimizers' typed state) is given."""
        shape = var.shape if shape is None else shape
        if slot_name not in self._slot_names:
            self._slot_names.append(slot_name)
        slot_dict = self._slots.setdefault(var.name, {})
        slot = slot_dict.get(slot_name)
        if slot is not None:
            if slot.shape != shape:
                raise ConfigurationError(
                    f"optimizer {self._name} already has a slot {slot_name!r} of shape "
                    f"{slot.shape} for a variable named {var.name!r}, which now has shape "
                    f"{shape}; variable names must be unique"
                )
            return slot
        base = var.name[:-2] if var.name.endswith(":0") else var.name
        value = np.full(shape, initial, dtype=var.value.dtype if dtype is None else dtype)
        slot = Variable(value, f"{self._name}/{base}/{slot_name}:0", trainable=False)
        slot_dict[slot_name] = slot
        self._weights.append(slot)
        return slot
