"""ReduceLROnPlateau: lower the learning rate when a monitored quantity stops improving."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.keras.callbacks.callback import Callback, Logs, checked_mode, monitored

logger = logging.getLogger("ipusim")


def float_learning_rate(model: Any, who: str) -> float:
    """The model optimizer's learning rate as a float (Keras keeps it in a float32 variable).

    Raises:
        ValueError: when the model has no optimizer with a ``learning_rate`` or the rate is a
            schedule (which a callback cannot set).
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ConfigurationError(f'{who}: the model\'s optimizer must have a "lr" attribute')
    rate = optimizer.learning_rate
    if not isinstance(rate, int | float | np.floating | np.integer):
        raise InvalidTypeError(
            f"{who} needs a float learning rate to read and set, but the optimizer's "
            f"learning_rate is {rate!r}; pass a float learning rate to the optimizer (a "
            "LearningRateSchedule already sets the rate every step)"
        )
    return float(np.float32(rate))


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` after ``patience`` epochs without improvement.

    The rule of IPU TensorFlow's Keras (unchanged in ``tf_keras`` 2.x): an epoch improves when the monitored value beats the best by
    more than ``min_delta``; otherwise, outside a cooldown, ``wait`` grows and at ``patience`` the
    rate becomes ``max(lr * factor, min_lr)`` (only if ``lr > min_lr``), followed by ``cooldown``
    epochs in which ``wait`` stays 0. The rate is kept in float32, as Keras' variable, and every
    epoch's logs get it as ``"lr"``.

    Args:
        monitor: key of the epoch logs to watch.
        factor: multiplier (< 1).
        patience: epochs without improvement before reducing.
        verbose: 1 prints each reduction.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (``"max"`` when the name contains ``"acc"``).
        min_delta: smallest change that counts as an improvement.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: lower bound of the rate.
        **kwargs: ``epsilon`` (legacy name of ``min_delta``).
    """

    #: ``monitor_op(current, best)``: whether ``current`` beats ``best`` by more than min_delta.
    monitor_op: Callable[[float, float], np.bool_]

    def __init__(
        self,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 0,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.monitor = monitor
        if factor >= 1.0:
            raise ConfigurationError(
                f"ReduceLROnPlateau does not support a factor >= 1.0. Got {factor}; pass a "
                "factor below 1 (e.g. 0.1)"
            )
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
            logger.warning("`epsilon` argument is deprecated and will be removed, use `min_delta`.")
        if kwargs:
            raise InvalidTypeError(
                f"ReduceLROnPlateau: unexpected keyword arguments {sorted(kwargs)}"
            )
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = min_delta
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.mode = mode
        self._reset()

    def _reset(self) -> None:
        self.mode = checked_mode(self.mode, "Learning rate reduction")
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self._reset()

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = logs if logs is not None else {}
        logs["lr"] = float_learning_rate(self.model, "ReduceLROnPlateau")
        current = monitored(logs, self.monitor, "Learning rate reduction is")
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                self._reduce(epoch)

    def _reduce(self, epoch: int) -> None:
        old_lr = np.float32(float_learning_rate(self.model, "ReduceLROnPlateau"))
        if old_lr > np.float32(self.min_lr):
            new_lr = max(float(np.float32(old_lr * np.float32(self.factor))), float(self.min_lr))
            new_lr = float(np.float32(new_lr))
            self.model.optimizer.learning_rate = new_lr
            if self.verbose > 0:
                print(
                    f"\nEpoch {epoch + 1:05d}: ReduceLROnPlateau reducing learning rate to "
                    f"{np.float32(new_lr)!s}."
                )
            self.cooldown_counter = self.cooldown
            self.wait = 0
