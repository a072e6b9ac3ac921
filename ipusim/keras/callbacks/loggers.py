"""CSVLogger, BaseLogger, and the callbacks ipusim does not simulate (RemoteMonitor,
SidecarEvaluatorModelExport), as ``tf_keras`` 2.x."""

from __future__ import annotations

import collections.abc
import csv
import io
import os
from typing import Any

import numpy as np

from ipusim._files import write_text_atomic
from ipusim.errors import UnsupportedError
from ipusim.keras.callbacks.callback import Callback, Logs


def _csv_value(value: Any) -> Any:
    """A log value as Keras writes it: strings as is, sequences as ``"[a, b]"``."""
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Iterable) and not (
        isinstance(value, np.ndarray) and value.ndim == 0
    ):
        return f'"[{", ".join(map(str, value))}]"'
    return value


class CSVLogger(Callback):
    """Write one CSV row per epoch: ``epoch`` then every log key (sorted).

    As IPU TensorFlow's Keras (TF 2.x before 2.7): the columns are those of the first epoch's
    logs; a key missing from a later epoch (validation every few epochs, or training stopped) is
    written ``NA``. (Later Keras versions also add a ``val_`` column per key when the first epoch
    has none.) The file is rewritten atomically after every epoch, so it is always complete.

    Args:
        filename: the CSV file.
        separator: the field separator.
        append: keep an existing file's rows (and write no second header).
    """

    def __init__(
        self, filename: str | os.PathLike[str], separator: str = ",", append: bool = False
    ):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.keys: list[str] | None = None
        self.append_header = True
        self._text = ""
        self._writer_ready = False

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self._text = ""
        self.append_header = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename, encoding="utf-8", newline="") as handle:
                self._text = handle.read()
            self.append_header = not self._text.split("\n", 1)[0]
        self._writer_ready = False
        write_text_atomic(self.filename, self._text)

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        buffer = io.StringIO()
        dialect = type("CustomDialect", (csv.excel,), {"delimiter": self.sep})
        writer = csv.DictWriter(buffer, fieldnames=["epoch", *self.keys], dialect=dialect)
        if not self._writer_ready:
            if self.append_header:
                writer.writeheader()
            self._writer_ready = True
        row = {"epoch": epoch}
        row.update((key, _csv_value(logs.get(key, "NA"))) for key in self.keys)
        writer.writerow(row)
        self._text += buffer.getvalue()
        write_text_atomic(self.filename, self._text)

    def on_train_end(self, logs: Logs | None = None) -> None:
        self._writer_ready = False


class BaseLogger(Callback):
    """Average the batch logs over each epoch into the epoch logs (the Keras 1 accumulator).

    For every key of ``params["metrics"]`` seen in the batch logs: the ``size``-weighted mean
    over the epoch, or the last value for ``stateful_metrics``.
    """

    def __init__(self, stateful_metrics: Any = None) -> None:
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])
        self.seen = 0
        self.totals: dict[str, float] = {}

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        self.seen = 0
        self.totals = {}

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        logs = logs or {}
        size = logs.get("size", 0)
        self.seen += size * logs.get("num_steps", 1)
        for key, value in logs.items():
            stateful = key in self.stateful_metrics
            self.totals[key] = value if stateful else self.totals.get(key, 0) + value * size

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        if logs is None:
            return
        for key in self.params.get("metrics", []):
            if key in self.totals:
                total = self.totals[key]
                logs[key] = total if key in self.stateful_metrics else total / self.seen


class RemoteMonitor(Callback):
    """Keras posts each epoch's logs to an HTTP server; ipusim makes no network connections.

    Constructing one is allowed (scripts build callback lists up front); training with it raises
    :class:`~ipusim.errors.UnsupportedError`.
    """

    def __init__(
        self,
        root: str = "http://localhost:9000",
        path: str = "/publish/epoch/end/",
        field: str = "data",
        headers: dict[str, str] | None = None,
        send_as_json: bool = False,
    ) -> None:
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json = headers, send_as_json

    def on_train_begin(self, logs: Logs | None = None) -> None:
        raise UnsupportedError(
            f"RemoteMonitor (posting epoch logs to {self.root}{self.path}) is not simulated by "
            "ipusim: a simulation makes no network connections. Remove it from `callbacks`, or "
            "use CSVLogger / a LambdaCallback to record the logs."
        )


class SidecarEvaluatorModelExport(Callback):
    """Keras' companion of ``tf.keras.utils.SidecarEvaluator`` (a separate evaluator process
    reading training checkpoints): not simulated."""

    def __init__(self, export_filepath: str, checkpoint_filepath: str, **kwargs: Any) -> None:
        raise UnsupportedError(
            "SidecarEvaluatorModelExport is not simulated by ipusim (there is no sidecar "
            "evaluator process); use ModelCheckpoint(save_best_only=True) to keep the best model"
        )
