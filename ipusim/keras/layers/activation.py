"""Activation layers with parameters: LeakyReLU, PReLU, ELU, ThresholdedReLU (tf.keras 2).

Each is composed of elementwise graph ops (relu, exp, maximum, multiply), so forward, gradient
and cost come from those ops: a leaky ReLU costs the two elementwise passes it is written as.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as s
from ipusim.keras import initializers
from ipusim.keras.layers.core import SameShapeLayer


def _number(layer: str, arg: str, value: Any, minimum: float | None = None) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(
            f"{layer}: `{arg}` must be a number, received {value!r}; pass e.g. {arg}=0.3"
        )
    if minimum is not None and value < minimum:
        raise ConfigurationError(f"{layer}: `{arg}` must be >= {minimum}, received {value!r}")
    return float(value)


def leaky(x: Any, alpha: float) -> Any:
    """``x`` where x > 0, else ``alpha * x``, as the larger (alpha <= 1) or smaller (alpha > 1)
    of ``alpha * x`` and ``x``: exact, and at x = 0 the tie sends ``alpha * dy`` back, as
    TensorFlow's LeakyReluGrad does."""
    scaled = m.multiply(x, alpha)
    return m.maximum(scaled, x) if alpha <= 1 else m.minimum(scaled, x)


def step_mask(x: Any, threshold: float, mode: str) -> Any:
    """A float tensor of ``x``'s shape: 1 where ``x <mode> threshold`` (gt, ge, lt, le), else 0.

    No gradient flows through the mask (it is piecewise constant).
    """
    return m.stop_gradient(m.masked_grad(s.broadcast_like(1.0, x), x, float(threshold), mode))


class LeakyReLU(SameShapeLayer):
    """``x`` for x > 0, ``alpha * x`` otherwise (``alpha`` default 0.3, as tf.keras 2)."""

    def __init__(self, alpha: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = _number("LeakyReLU", "alpha", alpha)

    def call(self, inputs: Any) -> Any:
        return leaky(inputs, self.alpha)

    _config_names = "alpha"


class ELU(SameShapeLayer):
    """``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise (``alpha`` default 1.0)."""

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = _number("ELU", "alpha", alpha)

    def call(self, inputs: Any) -> Any:
        negative_part = m.subtract(m.exp(m.minimum(inputs, 0.0)), 1.0)
        return m.add(m.relu(inputs), m.multiply(negative_part, self.alpha))

    _config_names = "alpha"


class ThresholdedReLU(SameShapeLayer):
    """``x`` where x > ``theta``, else 0 (``theta`` default 1.0, non-negative)."""

    def __init__(self, theta: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.theta = _number("ThresholdedReLU", "theta", theta, minimum=0.0)

    def call(self, inputs: Any) -> Any:
        return m.multiply(inputs, step_mask(inputs, self.theta, "gt"))

    _config_names = "theta"


class PReLU(SameShapeLayer):
    """Leaky ReLU with a learned slope per element: ``relu(x) - alpha * relu(-x)``.

    Args:
        alpha_initializer: initializer of the slopes (default zeros).
        shared_axes: axes (1-based, excluding the batch) along which one slope is shared,
            e.g. ``[1, 2]`` for one slope per channel of an image.
    """

    def __init__(
        self,
        alpha_initializer: Any = "zeros",
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if alpha_regularizer is not None or alpha_constraint is not None:
            raise UnsupportedError(
                "PReLU: alpha_regularizer and alpha_constraint are not simulated by ipusim; "
                "remove them (the slopes then train without a penalty or constraint)"
            )
        self.alpha_initializer = initializers.get(alpha_initializer)
        axes = shared_axes if isinstance(shared_axes, list | tuple) else [shared_axes]
        self.shared_axes = None if shared_axes is None else [int(a) for a in axes]

    def build(self, input_shape: Any) -> None:
        param_shape = list(input_shape[1:])
        for axis in self.shared_axes or []:
            if not 1 <= axis <= len(param_shape):
                raise ConfigurationError(
                    f"PReLU: shared_axes entry {axis} is not an axis of an input of shape "
                    f"{tuple(input_shape)} (axes are 1-based, the batch axis excluded)"
                )
            param_shape[axis - 1] = 1
        if any(d is None for d in param_shape):
            raise ConfigurationError(
                f"PReLU needs every non-shared input axis known, received {tuple(input_shape)}; "
                "share the unknown axes with `shared_axes`"
            )
        self.alpha = self.add_weight(
            "alpha", tuple(param_shape), initializer=self.alpha_initializer
        )
        self.built = True

    def call(self, inputs: Any) -> Any:
        negative_part = m.multiply(self.alpha, m.relu(m.negative(inputs)))
        return m.subtract(m.relu(inputs), negative_part)

    _config_names = "alpha_initializer shared_axes"
