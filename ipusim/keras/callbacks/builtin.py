"""History, LambdaCallback, EarlyStopping, TerminateOnNaN and LearningRateScheduler (TF 2.4–2.6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras.callbacks.callback import Callback, Logs, checked_mode, monitored


class History(Callback):
    """Records every epoch's logs: ``history[name]`` lists, ``epoch`` indices. ``fit`` returns it."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[Any]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self


class LambdaCallback(Callback):
    """A callback built from functions.

    ``on_epoch_begin/end(epoch, logs)``, ``on_batch_begin/end(batch, logs)`` (training batches)
    and ``on_train_begin/end(logs)``; any other hook can be given by its name in ``**kwargs``
    (e.g. ``on_test_batch_end=lambda batch, logs: ...``), as in Keras.
    """

    # The hooks are the functions given, set on the instance (any callable the hooks' caller can
    # call with the hook's arguments).
    on_epoch_begin: Callable[..., Any]
    on_epoch_end: Callable[..., Any]
    on_batch_begin: Callable[..., Any]
    on_batch_end: Callable[..., Any]
    on_train_begin: Callable[..., Any]
    on_train_end: Callable[..., Any]

    def __init__(
        self,
        on_epoch_begin: Callable[..., Any] | None = None,
        on_epoch_end: Callable[..., Any] | None = None,
        on_batch_begin: Callable[..., Any] | None = None,
        on_batch_end: Callable[..., Any] | None = None,
        on_train_begin: Callable[..., Any] | None = None,
        on_train_end: Callable[..., Any] | None = None,
        **kwargs: Callable[..., Any],
    ) -> None:
        super().__init__()
        self.__dict__.update(kwargs)
        self.on_epoch_begin = on_epoch_begin or (lambda epoch, logs: None)
        self.on_epoch_end = on_epoch_end or (lambda epoch, logs: None)
        self.on_batch_begin = on_batch_begin or (lambda batch, logs: None)
        self.on_batch_end = on_batch_end or (lambda batch, logs: None)
        self.on_train_begin = on_train_begin or (lambda logs: None)
        self.on_train_end = on_train_end or (lambda logs: None)


class EarlyStopping(Callback):
    """Stop training when a monitored quantity stops improving (TensorFlow 2.6 rules).

    Each epoch with a monitored value: ``wait += 1``; an improvement (``value - min_delta``
    better than the best so far) records the best and resets ``wait`` to 0 unless a ``baseline``
    is set and not beaten; when ``wait >= patience`` training stops, restoring the best weights
    first if ``restore_best_weights`` (weights are only restored when stopping early). Note that,
    as in TensorFlow 2.4–2.6, ``patience=0`` stops after the first monitored epoch.

    Args:
        monitor: key of the epoch logs to watch.
        min_delta: smallest change that counts as an improvement (its sign is ignored).
        patience: epochs without improvement before stopping.
        verbose: 1 prints when restoring weights and, at the end, the epoch it stopped at.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (``"max"`` when the name contains ``"acc"``).
        baseline: value the monitored quantity must beat for ``wait`` to reset.
        restore_best_weights: restore the best epoch's weights when stopping.
        start_from_epoch: epochs to wait before monitoring (a Keras 2.11 addition; 0 = TF 2.6).
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.best_weights: list[np.ndarray] | None = None
        mode = checked_mode(mode, "EarlyStopping")
        if mode == "min" or (mode == "auto" and "acc" not in monitor):
            self.monitor_op: np.ufunc = np.less
            self.min_delta *= -1
        else:
            self.monitor_op = np.greater
        self.best = np.inf if self.monitor_op is np.less else -np.inf

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_weights = None

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # So that there is something to restore even if no epoch ever improves.
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print("Restoring model weights from the end of the best epoch.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs: Logs | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1:05d}: early stopping")

    def get_monitor_value(self, logs: Logs | None) -> Any:
        """``logs[monitor]``, or None with a warning listing the available keys."""
        return monitored(logs or {}, self.monitor, "Early stopping")

    def _is_improvement(self, value: Any, reference: Any) -> bool:
        return bool(self.monitor_op(value - self.min_delta, reference))


class TerminateOnNaN(Callback):
    """Stop training as soon as a training step reports a NaN or infinite ``loss``."""

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            print(f"Batch {int(batch)}: Invalid loss, terminating training")
            self.model.stop_training = True


class LearningRateScheduler(Callback):
    """Set ``model.optimizer.learning_rate = schedule(epoch, lr)`` at the start of every epoch.

    ``schedule`` may also take the epoch only (the older Keras form). The epoch's rate is added to
    the epoch logs as ``"lr"``.
    """

    def __init__(self, schedule: Callable[..., Any], verbose: int = 0) -> None:
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "learning_rate"):
            raise ConfigurationError(
                'LearningRateScheduler: the model\'s optimizer must have a "lr" attribute'
            )
        try:
            lr = self.schedule(epoch, float(optimizer.learning_rate))
        except TypeError:
            lr = self.schedule(epoch)
        if not isinstance(lr, float | np.floating):
            raise ConfigurationError(
                f'LearningRateScheduler: the output of the "schedule" function should be float, '
                f"received {lr!r}"
            )
        optimizer.learning_rate = float(lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1:05d}: LearningRateScheduler setting learning rate to {lr}.")

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        if logs is not None:
            logs["lr"] = float(self.model.optimizer.learning_rate)
