"""Optimizer hyperparameters: what a value may be, its value at a step, its float16 cast.

A hyperparameter (learning rate, momentum, ``beta_1`` ...) is a number, a
:class:`~ipusim.keras.optimizers.schedules.LearningRateSchedule` or a callable, as in Keras 2's
``OptimizerV2``; :class:`Hyper` stores it validated, :func:`resolve_hyper` gives its value at a
step and :func:`serialize_hyper` what ``get_config`` lists for it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.errors import InvalidTypeError
from ipusim.keras.optimizers import schedules

#: Keras' fuzz factor, used when ``epsilon`` is None (or 0, as Keras' ``epsilon or 1e-7``).
DEFAULT_EPSILON = 1e-7


def _check_hyper(owner: str, name: str, value: Any) -> Any:
    """Validate a hyperparameter: a real number (stored as float), a schedule or a callable."""
    if isinstance(value, schedules.LearningRateSchedule) or callable(value):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidTypeError(
            f"{owner}: hyperparameter {name!r} must be a number, a learning-rate schedule or a "
            f"callable; received {value!r} of type {type(value).__name__}"
        )
    return float(value)


def _accepts_step(fn: Callable[..., Any]) -> bool:
    """Whether a plain callable takes a positional argument (the step)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )


def half(value: float | np.floating[Any]) -> np.float32:
    """``value`` cast to float16 (as Keras casts hyperparameters to a float16 variable's dtype),
    held as a float32."""
    return np.float32(np.float16(value))


def resolve_hyper(value: Any, step: int) -> float:
    """The numeric value of a hyperparameter at ``step``.

    A :class:`~ipusim.keras.optimizers.schedules.LearningRateSchedule` is called with the step; a
    plain callable is called with the step when it takes an argument and with none otherwise
    (Keras 2 calls callable hyperparameters without arguments).
    """
    if isinstance(value, schedules.LearningRateSchedule):
        return float(value(step))
    if callable(value):
        return float(value(step) if _accepts_step(value) else value())
    return float(value)


class Hyper:
    """Descriptor for a hyperparameter stored in ``obj._hyper`` (settable after construction)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return obj._hyper[self.name]

    def __set__(self, obj: Any, value: Any) -> None:
        obj._hyper[self.name] = _check_hyper(type(obj).__name__, self.name, value)


def serialize_hyper(value: Any, step: int) -> Any:
    """A hyperparameter as ``get_config`` lists it: a schedule as its config, another callable
    as its value at ``step``, a number as it is."""
    if isinstance(value, schedules.LearningRateSchedule):
        return schedules.serialize(value)
    if callable(value):
        return resolve_hyper(value, step)
    return value
