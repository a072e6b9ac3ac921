"""Callbacks, as ``tf.keras.callbacks`` in TensorFlow 2.4–2.6.

A callback sees a model through four things only: ``model.stop_training`` (set to stop ``fit``),
``model.get_weights()`` / ``model.set_weights()`` (EarlyStopping's ``restore_best_weights``) and
``model.name``; :class:`ProgbarLogger` also reads ``model.metrics`` when present (their names are
shown as given instead of averaged). :class:`LearningRateScheduler` reads and sets
``model.optimizer.learning_rate``.

``fit`` calls, in order: ``on_train_begin``; per epoch ``on_epoch_begin``, per step
``on_train_batch_begin`` / ``on_train_batch_end`` (once per ``steps_per_execution``),
``on_epoch_end``; then ``on_train_end``. ``evaluate`` and ``predict`` use the ``test`` and
``predict`` hooks the same way.
"""

from ipusim.keras.callbacks import experimental
from ipusim.keras.callbacks.builtin import (
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    TerminateOnNaN,
)
from ipusim.keras.callbacks.callback import Callback
from ipusim.keras.callbacks.callback_list import CallbackList
from ipusim.keras.callbacks.checkpoint import BackupAndRestore, ModelCheckpoint
from ipusim.keras.callbacks.loggers import (
    BaseLogger,
    CSVLogger,
    RemoteMonitor,
    SidecarEvaluatorModelExport,
)
from ipusim.keras.callbacks.plateau import ReduceLROnPlateau
from ipusim.keras.callbacks.progbar_logger import ProgbarLogger
from ipusim.keras.callbacks.tensorboard import TensorBoard

__all__ = [
    "experimental",
    "BackupAndRestore",
    "BaseLogger",
    "CSVLogger",
    "Callback",
    "CallbackList",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "RemoteMonitor",
    "SidecarEvaluatorModelExport",
    "TensorBoard",
    "TerminateOnNaN",
]
