"""The :class:`Callback` base class: every hook of ``fit``, ``evaluate`` and ``predict``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

Logs = dict[str, Any]

logger = logging.getLogger("ipusim")

_Hook = TypeVar("_Hook", bound=Callable[..., Any])


def checked_mode(mode: str, who: str) -> str:
    """A monitoring callback's ``mode``: itself if ``"auto"``, ``"min"`` or ``"max"``, else
    ``"auto"`` after Keras' warning (``who``: the callback, as Keras names it there)."""
    if mode not in ("auto", "min", "max"):
        logger.warning("%s mode %s is unknown, fallback to auto mode.", who, mode)
        return "auto"
    return mode


def monitored(logs: Logs, monitor: str, condition: str) -> Any:
    """``logs[monitor]``, or None with Keras' warning (``condition``: "Early stopping" ...)."""
    value = logs.get(monitor)
    if value is None:
        logger.warning(
            "%s conditioned on metric `%s` which is not available. Available metrics are: %s",
            condition,
            monitor,
            ",".join(logs.keys()),
        )
    return value


def _default(method: _Hook) -> _Hook:
    """Mark a base-class hook so CallbackList can tell whether a subclass overrides it."""
    method._is_default = True  # type: ignore[attr-defined]
    return method


def _is_default(method: Callable[..., Any]) -> bool:
    return getattr(method, "_is_default", False)


class Callback:
    """Base class: override the hooks you need.

    Attributes:
        model: the model being trained (set by :meth:`set_model`).
        params: ``{"verbose", "epochs", "steps"}`` (set by :meth:`set_params`).
    """

    def __init__(self) -> None:
        self.validation_data = None
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def set_model(self, model: Any) -> None:
        self.model = model

    @_default
    def on_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Legacy alias of :meth:`on_train_batch_begin` (which calls it by default)."""

    @_default
    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Legacy alias of :meth:`on_train_batch_end` (which calls it by default)."""

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Start of epoch ``epoch`` (0-based), training only."""

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """End of an epoch; ``logs`` holds the epoch's metrics (and ``val_`` ones)."""

    @_default
    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Start of a training step; calls :meth:`on_batch_begin` for backwards compatibility."""
        self.on_batch_begin(batch, logs=logs)

    @_default
    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """End of a training step (running metrics in ``logs``); calls :meth:`on_batch_end`."""
        self.on_batch_end(batch, logs=logs)

    @_default
    def on_test_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Start of an evaluate/validation step."""

    @_default
    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """End of an evaluate/validation step."""

    @_default
    def on_predict_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Start of a predict step."""

    @_default
    def on_predict_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """End of a predict step; ``logs["outputs"]`` holds the batch's outputs."""

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Start of ``fit``."""

    def on_train_end(self, logs: Logs | None = None) -> None:
        """End of ``fit``; ``logs`` are the last epoch's."""

    def on_test_begin(self, logs: Logs | None = None) -> None:
        """Start of ``evaluate`` (or of validation inside ``fit``)."""

    def on_test_end(self, logs: Logs | None = None) -> None:
        """End of ``evaluate``; ``logs`` are the final metrics."""

    def on_predict_begin(self, logs: Logs | None = None) -> None:
        """Start of ``predict``."""

    def on_predict_end(self, logs: Logs | None = None) -> None:
        """End of ``predict``."""

    def _overrides(self, *hooks: str) -> bool:
        """Whether a subclass overrides any of the hooks named ``hooks``."""
        return not all(_is_default(getattr(self, hook)) for hook in hooks)

    def _implements_train_batch_hooks(self) -> bool:
        hooks = ("on_batch_begin", "on_batch_end", "on_train_batch_begin", "on_train_batch_end")
        return self._overrides(*hooks)

    def _implements_test_batch_hooks(self) -> bool:
        return self._overrides("on_test_batch_begin", "on_test_batch_end")

    def _implements_predict_batch_hooks(self) -> bool:
        return self._overrides("on_predict_batch_begin", "on_predict_batch_end")
