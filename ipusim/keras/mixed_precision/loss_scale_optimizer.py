"""``LossScaleOptimizer``: static and dynamic loss scaling around another optimizer.

As ``tf.keras.mixed_precision.LossScaleOptimizer`` (tf.keras 2.4+): ``fit`` multiplies the loss by
the current scale before the backward pass and multiplies each gradient by ``1 / scale`` (cast to
the gradient's dtype) after it, both inside the traced step, so half-precision gradients see the
scaled values. A dynamic scale starts at ``2**15``; a step whose gradients hold an infinity or a
NaN is skipped and halves the scale (never below 1); ``dynamic_growth_steps`` finite steps in a row
double it. A fixed scale (``dynamic=False``) always applies the gradients.

On the IPU an fp16 overflow only becomes an infinity or a NaN when ``nanoo`` is on: with the
default (saturation) the dynamic scale cannot see it (``docs/numerics.md``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.variable import Variable
from ipusim.keras.optimizers.accumulation import OptimizerWrapper
from ipusim.keras.optimizers.optimizer import Optimizer

_DEFAULT_INITIAL_SCALE = 2.0**15
_DEFAULT_GROWTH_STEPS = 2000
_MULTIPLIER = 2.0


class LossScaleOptimizer(OptimizerWrapper):
    """An optimizer that scales the loss and unscales the gradients, skipping non-finite steps.

    Args:
        inner_optimizer: the optimizer that applies the (unscaled) gradients.
        dynamic: adjust the scale (True) or keep ``initial_scale`` fixed.
        initial_scale: the starting scale; default ``2**15`` when dynamic, required otherwise.
        dynamic_growth_steps: finite steps before the scale doubles (default 2000); only
            with ``dynamic``.

    Raises:
        TypeError: ``inner_optimizer`` is not an ipusim Keras optimizer or is already a
            LossScaleOptimizer; ``dynamic`` is not a bool.
        ValueError: an inner optimizer already wrapped, a missing fixed scale, growth steps
            with a fixed scale, or a scale that is not a positive finite number.
    """

    def __init__(
        self,
        inner_optimizer: Optimizer,
        dynamic: bool = True,
        initial_scale: float | None = None,
        dynamic_growth_steps: int | None = None,
    ) -> None:
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise InvalidTypeError(
                "LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: "
                f"{inner_optimizer!r}"
            )
        if not isinstance(inner_optimizer, Optimizer):
            raise InvalidTypeError(
                '"inner_optimizer" must be a keras.optimizers.Optimizer, but got: '
                f"{inner_optimizer!r}"
            )
        if not isinstance(dynamic, bool):
            raise InvalidTypeError(
                f'"dynamic" argument to LossScaleOptimizer must be a bool, but got: {dynamic!r}'
            )
        if getattr(inner_optimizer, "_is_wrapped_by_loss_scale_optimizer", False):
            raise ConfigurationError(
                '"inner_optimizer" is already wrapped by a LossScaleOptimizer; an optimizer can '
                "be wrapped by one LossScaleOptimizer only"
            )
        growth = dynamic_growth_steps
        if dynamic:
            initial_scale = _DEFAULT_INITIAL_SCALE if initial_scale is None else initial_scale
            growth = _DEFAULT_GROWTH_STEPS if growth is None else growth
            if isinstance(growth, bool) or not isinstance(growth, int) or growth < 1:
                raise ConfigurationError(
                    f'"dynamic_growth_steps" must be a positive int, but got: {growth!r}'
                )
        elif initial_scale is None:
            raise ConfigurationError('"initial_scale" must be specified if "dynamic" is False')
        elif growth is not None:
            raise ConfigurationError(
                f'"dynamic_growth_steps" must be None if "dynamic" is False, but got: {growth!r}'
            )
        scale = float(initial_scale)
        if not math.isfinite(scale) or scale <= 0.0:
            raise ConfigurationError(
                f'"initial_scale" must be a positive finite number, got {scale!r}'
            )
        inner_optimizer._is_wrapped_by_loss_scale_optimizer = True
        self._wrap(inner_optimizer, inner_optimizer._name)  # the inner optimizer's name
        self._dynamic = dynamic
        self._initial_scale = scale
        self._growth_steps = growth
        self._counter = 0
        self.loss_scale_variable = Variable(
            np.array(scale, dtype=np.float32), "current_loss_scale:0", trainable=False
        )

    # ------------------------------------------------------------------ loss-scale state
    @property
    def dynamic(self) -> bool:
        """Whether the scale adjusts itself."""
        return self._dynamic

    @property
    def loss_scale(self) -> float:
        """The current loss scale."""
        return float(self.loss_scale_variable.value)

    @property
    def initial_scale(self) -> float:
        return self._initial_scale

    @property
    def dynamic_growth_steps(self) -> int | None:
        return self._growth_steps

    @property
    def dynamic_counter(self) -> int | None:
        """Finite steps since the scale last changed (None for a fixed scale)."""
        return self._counter if self._dynamic else None

    def get_unscaled_gradients(self, grads: list[Any]) -> list[Any]:
        """Each gradient times ``1 / loss_scale``, the factor cast to the gradient's dtype."""
        inverse = np.float32(1.0) / np.float32(self.loss_scale)
        return [
            None if g is None else np.asarray(g) * np.asarray(g).dtype.type(inverse) for g in grads
        ]

    # ------------------------------------------------------------------ optimizer API
    def set_weights(self, weights: list[np.ndarray]) -> None:
        self._opt.set_weights(weights)

    def apply_gradients(
        self,
        grads_and_vars: Any,
        name: str | None = None,
        experimental_aggregate_gradients: bool = True,
    ) -> int | None:
        """Apply the gradients unless one is non-finite (dynamic scale), then update the scale."""
        pairs = list(grads_and_vars)
        if not self._dynamic:
            applied: int | None = self._opt.apply_gradients(pairs)
            return applied
        finite = all(
            np.isfinite(np.asarray(g, dtype=np.float32)).all() for g, _ in pairs if g is not None
        )
        scale = self.loss_scale
        if not finite:
            self._counter = 0
            self.loss_scale_variable.assign(np.float32(max(scale / _MULTIPLIER, 1.0)))
            return None
        result: int | None = self._opt.apply_gradients(pairs)
        assert self._growth_steps is not None  # a dynamic scale always has growth steps
        if self._counter + 1 >= self._growth_steps:
            grown = scale * _MULTIPLIER
            if math.isfinite(np.float32(grown)):
                self.loss_scale_variable.assign(np.float32(grown))
            self._counter = 0
        else:
            self._counter += 1
        return result

    def get_config(self) -> dict[str, Any]:
        from ipusim.keras import optimizers

        return {
            "inner_optimizer": optimizers.serialize(self._opt),
            "dynamic": self._dynamic,
            "initial_scale": self._initial_scale,
            "dynamic_growth_steps": self._growth_steps,
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> LossScaleOptimizer:
        from ipusim.keras import optimizers

        config = dict(config)
        inner = optimizers.deserialize(config.pop("inner_optimizer"), custom_objects)
        return cls(inner, **config)

    def __repr__(self) -> str:
        kind = "dynamic" if self._dynamic else "fixed"
        return f"<LossScaleOptimizer {kind} scale={self.loss_scale} inner={self._opt!r}>"
