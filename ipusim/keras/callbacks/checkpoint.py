"""ModelCheckpoint and BackupAndRestore, as IPU TensorFlow's Keras (TF 2.x) has them, plus the
later Keras additions that do not change that behaviour (``{batch}`` in ``filepath``,
``initial_value_threshold``, ``BackupAndRestore`` outside ``experimental``).

Files are written with ``model.save`` / ``model.save_weights`` (atomic ``.npz`` files: a reader
never sees a half-written checkpoint), at the exact path the formatted ``filepath`` gives.
"""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any

import numpy as np

from ipusim._files import write_text_atomic
from ipusim.errors import (
    ConfigurationError,
    FileAccessError,
    InvalidTypeError,
    KeyNotFoundError,
    UnsupportedError,
)
from ipusim.keras.callbacks.callback import Callback, Logs, checked_mode

logger = logging.getLogger("ipusim")


def monitor_op(mode: str, monitor: str, who: str) -> tuple[Any, float]:
    """The comparison and starting best for ``mode`` (``"auto"``: max for accuracies)."""
    mode = checked_mode(mode, who)
    maximise = mode == "max" or (
        mode == "auto" and ("acc" in monitor or monitor.startswith("fmeasure"))
    )
    return (np.greater, -np.inf) if maximise else (np.less, np.inf)


def latest_matching_file(pattern: str) -> str | None:
    """The most recently modified file whose name matches ``pattern`` (its ``{...}`` fields
    standing for anything), the largest name among equally recent ones; None if none matches.
    """
    folder = os.path.dirname(pattern)
    # As Keras: the name itself is the regular expression, its fields replaced by ".*".
    regex = re.compile("^" + re.sub(r"{.*}", r".*", os.path.basename(pattern)) + "$")
    if not os.path.isdir(folder or "."):
        return None
    candidates = [
        os.path.join(folder, name) for name in os.listdir(folder or ".") if regex.match(name)
    ]
    if not candidates:
        return None
    newest = max(os.path.getmtime(path) for path in candidates)
    return max(path for path in candidates if os.path.getmtime(path) == newest)


class ModelCheckpoint(Callback):
    """Save the model (or its weights) every epoch or every ``save_freq`` batches.

    Args:
        filepath: path, formatted with ``epoch`` (1-based), ``batch`` (1-based, batch saves
            only) and the logs, e.g. ``"ckpt/weights.{epoch:02d}-{val_loss:.2f}.npz"``.
        monitor: key of the logs compared when ``save_best_only``.
        verbose: 1 prints each save.
        save_best_only: save only when ``monitor`` improves on the best so far (one file is
            overwritten when ``filepath`` has no placeholders).
        save_weights_only: ``model.save_weights`` instead of ``model.save``.
        mode: ``"auto"``, ``"min"`` or ``"max"`` for the comparison.
        save_freq: ``"epoch"`` or a number of batches (counted at the batch ends the callbacks
            see: one per ``steps_per_execution`` steps on the IPU).
        options: accepted for compatibility (TensorFlow's save options have no equivalent).
        initial_value_threshold: a starting best value that a save must beat.
        **kwargs: ``period`` (legacy: save every N epochs) and ``load_weights_on_restart``
            (legacy: load the newest file matching ``filepath`` when training starts).
    """

    def __init__(
        self,
        filepath: str | os.PathLike[str],
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: Any = "epoch",
        options: Any = None,
        initial_value_threshold: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.monitor = monitor
        self.verbose = verbose
        self.filepath = os.fspath(filepath)
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self._options = options
        self.period = kwargs.pop("period", 1)
        if self.period != 1:
            logger.warning("`period` argument is deprecated. Please use `save_freq`.")
        self.load_weights_on_restart = bool(kwargs.pop("load_weights_on_restart", False))
        if self.load_weights_on_restart:
            logger.warning(
                "`load_weights_on_restart` argument is deprecated. Please use "
                "`model.load_weights()` for loading weights before the start of `model.fit()`."
            )
        if kwargs:
            raise InvalidTypeError(
                f"ModelCheckpoint: unexpected keyword arguments {sorted(kwargs)}"
            )
        self.epochs_since_last_save = 0
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = 0
        self._current_epoch = 0
        self.monitor_op, best = monitor_op(mode, monitor, "ModelCheckpoint")
        self.best = initial_value_threshold if initial_value_threshold is not None else best
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ConfigurationError(
                f'Unrecognized save_freq: {save_freq!r}; use "epoch" or a positive number of '
                "batches"
            )

    def on_train_begin(self, logs: Logs | None = None) -> None:
        if not self.load_weights_on_restart:
            return
        latest = latest_matching_file(self.filepath)
        if latest is not None:
            self.model.load_weights(latest)

    def _implements_train_batch_hooks(self) -> bool:
        # As Keras: batch hooks only when saving every N batches.
        return bool(self.save_freq != "epoch")

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        if self._should_save_on_batch(batch):
            self._save_model(self._current_epoch, batch, logs)

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        self._current_epoch = epoch

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        self.epochs_since_last_save += 1
        if self.save_freq == "epoch":
            self._save_model(epoch, None, logs)

    def _should_save_on_batch(self, batch: int) -> bool:
        # Batch indices jump by steps_per_execution and restart each epoch: count what passed.
        if self.save_freq == "epoch":
            return False
        added = batch + 1 if batch <= self._last_batch_seen else batch - self._last_batch_seen
        self._batches_seen_since_last_saving += added
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _save_model(self, epoch: int, batch: int | None, logs: Logs | None) -> None:
        logs = dict(logs or {})
        if not (isinstance(self.save_freq, int) or self.epochs_since_last_save >= self.period):
            return
        self.epochs_since_last_save = 0
        filepath = self._get_file_path(epoch, batch, logs)
        if os.path.dirname(filepath):
            os.makedirs(os.path.dirname(filepath), exist_ok=True)
        if os.path.isdir(filepath):
            raise FileAccessError(
                "Please specify a non-directory filepath for ModelCheckpoint. Filepath used is "
                f"an existing directory: {filepath}"
            )
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1:05d}: saving model to {filepath}")
            self._write(filepath)
            return
        current = logs.get(self.monitor)
        if current is None:
            logger.warning("Can save best model only with %s available, skipping.", self.monitor)
            return
        if self.monitor_op(current, self.best):
            if self.verbose > 0:
                print(
                    f"\nEpoch {epoch + 1:05d}: {self.monitor} improved from {self.best:.5f} to "
                    f"{current:.5f}, saving model to {filepath}"
                )
            self.best = current
            self._write(filepath)
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1:05d}: {self.monitor} did not improve from {self.best:.5f}")

    def _write(self, filepath: str) -> None:
        save = self.model.save_weights if self.save_weights_only else self.model.save
        save(filepath, overwrite=True)

    def _get_file_path(self, epoch: int, batch: int | None, logs: Logs) -> str:
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as exc:
            raise KeyNotFoundError(
                f'Failed to format this callback filepath: "{self.filepath}". Reason: {exc}; '
                f"the logs hold {sorted(logs)}"
            ) from None


class BackupAndRestore(Callback):
    """Back up the model and optimizer state every epoch; a rerun of ``fit`` resumes from it.

    At the start of training an existing backup in ``backup_dir`` is loaded (weights, optimizer
    step count and slots) and ``fit`` continues from the epoch after the backed-up one; at the
    end the backup is deleted (``delete_checkpoint``). Files: ``backup_dir/model.npz`` (as
    ``model.save``) and ``backup_dir/state.json`` (the epoch), both written atomically.

    Args:
        backup_dir: folder for the backup (not shared with other callbacks).
        save_freq: ``"epoch"`` (a number of batches is not simulated).
        delete_checkpoint: delete the backup when training ends normally.
        save_before_preemption: not simulated (there is no preemption signal); must be False.
    """

    def __init__(
        self,
        backup_dir: str | os.PathLike[str],
        save_freq: Any = "epoch",
        delete_checkpoint: bool = True,
        save_before_preemption: bool = False,
    ) -> None:
        super().__init__()
        if not backup_dir:
            raise ConfigurationError("Empty `backup_dir` argument passed")
        if save_before_preemption:
            raise UnsupportedError(
                "BackupAndRestore(save_before_preemption=True) is not simulated by ipusim: a "
                "simulated run is never preempted; use save_freq='epoch' or a batch count"
            )
        if save_freq != "epoch":
            raise UnsupportedError(
                f"BackupAndRestore(save_freq={save_freq!r}) is not simulated by ipusim: backups "
                "are taken at epoch ends only (resuming inside an epoch is not modelled); use "
                "save_freq='epoch'"
            )
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self._model_file = os.path.join(self.backup_dir, "model.npz")
        self._state_file = os.path.join(self.backup_dir, "state.json")

    def on_train_begin(self, logs: Logs | None = None) -> None:
        if not os.path.isfile(self._state_file) or not os.path.isfile(self._model_file):
            return
        from ipusim.keras.engine.saving import restore_training_state

        with open(self._state_file, encoding="utf-8") as handle:
            state = json.load(handle)
        restore_training_state(self.model, self._model_file)
        # fit() starts from this epoch (as Keras' initial-epoch counter in the checkpoint).
        self.model._backup_initial_epoch = int(state["epoch"]) + 1

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        os.makedirs(self.backup_dir, exist_ok=True)
        self.model.save(self._model_file, overwrite=True, include_optimizer=True)
        write_text_atomic(self._state_file, json.dumps({"epoch": epoch}))

    def on_train_end(self, logs: Logs | None = None) -> None:
        if self.delete_checkpoint:
            for path in (self._state_file, self._model_file):
                if os.path.exists(path):
                    os.remove(path)
