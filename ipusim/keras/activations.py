"""Activation functions by name, each built from graph ops."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn


def linear(x: Any) -> Any:
    return x


def relu(x: Any) -> Any:
    return m.relu(x)


def sigmoid(x: Any) -> Any:
    return m.sigmoid(x)


def tanh(x: Any) -> Any:
    return m.tanh(x)


def gelu(x: Any, approximate: bool = False) -> Any:
    return m.gelu(x, approximate=approximate)


def hard_sigmoid(x: Any) -> Any:
    """Keras 2's piecewise-linear sigmoid ``clip(0.2·x + 0.5, 0, 1)`` (tf_keras
    ``backend.hard_sigmoid``)."""
    return m.clip(m.add(m.multiply(x, 0.2), 0.5), 0.0, 1.0)


def softplus(x: Any) -> Any:
    return m.softplus(x)


def softmax(x: Any, axis: int = -1) -> Any:
    return nn.softmax(x, axis=axis)


def log_softmax(x: Any, axis: int = -1) -> Any:
    return nn.log_softmax(x, axis=axis)


def exponential(x: Any) -> Any:
    return m.exp(x)


def swish(x: Any) -> Any:
    return m.multiply(x, m.sigmoid(x))


silu = swish

_ACTIVATIONS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn
    for fn in (linear, relu, sigmoid, tanh, hard_sigmoid, gelu, softplus, softmax, log_softmax)
}
_ACTIVATIONS.update(exponential=exponential, swish=swish, silu=silu)


def get(identifier: Any) -> Callable[..., Any]:
    """The activation function for a name, a function, or None (= linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _ACTIVATIONS.get(identifier)
        if fn is None:
            close = difflib.get_close_matches(identifier, _ACTIVATIONS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigurationError(
                f"unknown activation {identifier!r}.{hint} Valid names: "
                f"{', '.join(sorted(_ACTIVATIONS))}"
            )
        return fn
    if callable(identifier):
        user_fn: Callable[..., Any] = identifier
        return user_fn
    raise ConfigurationError(
        f"cannot interpret {identifier!r} as an activation; pass a name or a function"
    )


def serialize(activation: Callable[..., Any]) -> str:
    for name, fn in _ACTIVATIONS.items():
        if fn is activation:
            return name
    fn_name: str | None = getattr(activation, "__name__", None)
    if fn_name in _ACTIVATIONS:
        return fn_name
    raise ConfigurationError(
        f"activation {activation!r} has no registered name and cannot be serialized"
    )
