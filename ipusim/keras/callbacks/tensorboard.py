"""The Keras ``TensorBoard`` callback: event files TensorBoard reads, as IPU Keras writes them.

What it writes (graphcore/keras ``keras/callbacks.py`` ``TensorBoard``, Keras 2.6 of IPU
TensorFlow; file layout and tags as tf-keras writes them, checked against its files in
``bench/tf_summary/fixtures/keras``):

* ``<log_dir>/train``: ``epoch_<metric>`` at each epoch (step = epoch), ``epoch_learning_rate``
  when the learning rate is a schedule, with ``histogram_freq`` the histograms
  ``<weight name with ':' as '_'>/histogram`` of every layer's weights every that many epochs
  (and ``/image`` ones with ``write_images``), and with ``update_freq`` ``"batch"`` or N the
  ``batch_<metric>`` running values, step = training steps done, when that count reaches a
  multiple of N. Keras writes these inside the device loop at every step; ipusim's host regains
  control once per ``steps_per_execution``, so it writes one record per execution that crossed
  a multiple, at the execution's last step, with the execution's running values.
* ``<log_dir>/validation``: ``evaluation_<metric>_vs_iterations`` (step = optimizer iterations)
  after each evaluation and ``epoch_<metric>`` of the ``val_`` logs (``val_`` removed).

``wall_time`` is ``time.time()``: the simulated clock where ipusim runs one.

Not simulated, said in one warning when asked for: ``write_graph`` (ipusim has no TensorFlow op
graph; the conceptual Keras graph is written only for models with ``to_json``),
``profile_batch`` (no TensorFlow profiler: the report's trace.json is the execution trace),
``embeddings_freq`` (no projector files).
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np

from ipusim import _summary_values as values
from ipusim._events import EventFileWriter, event, string_tensor_proto, summary_metadata
from ipusim._events import summary_value as _value
from ipusim.errors import ConfigurationError
from ipusim.keras.callbacks.callback import Callback, Logs
from ipusim.keras.optimizers.schedules import LearningRateSchedule

__all__ = ["TensorBoard"]

_LEGACY_KWARGS = {"write_grads", "embeddings_layer_names", "embeddings_data", "batch_size"}


class TensorBoard(Callback):
    """Write TensorBoard logs of training and validation (``tf.keras.callbacks.TensorBoard``).

    Args:
        log_dir: the folder holding the ``train`` and ``validation`` runs.
        histogram_freq: write weight histograms every this many epochs (0: never).
        write_graph: accepted; see the module docstring for what is written.
        write_images: also write the weights as images (with ``histogram_freq``).
        write_steps_per_second: write ``steps_per_second`` (per batch and per epoch).
        update_freq: ``"epoch"``, ``"batch"`` (= 1) or N: how often ``batch_*`` are written.
        profile_batch: accepted (IPU Keras' default 2); not simulated.
        embeddings_freq: accepted; not simulated.
        embeddings_metadata: accepted; not simulated.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] = "logs",
        histogram_freq: int = 0,
        write_graph: bool = True,
        write_images: bool = False,
        write_steps_per_second: bool = False,
        update_freq: str | int = "epoch",
        profile_batch: int | str | tuple[int, int] = 2,
        embeddings_freq: int = 0,
        embeddings_metadata: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        unknown = set(kwargs) - _LEGACY_KWARGS
        if unknown:
            raise ConfigurationError(
                f"Unrecognized arguments in `TensorBoard` Callback: {sorted(unknown)}. "
                f"Supported kwargs are: {sorted(_LEGACY_KWARGS)}"
            )
        if update_freq not in ("epoch", "batch") and not (
            isinstance(update_freq, int) and update_freq > 0
        ):
            raise ConfigurationError(
                f"TensorBoard(update_freq=...): expected 'epoch', 'batch' or a positive "
                f"integer, received {update_freq!r}"
            )
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = int(histogram_freq)
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq: str | int = 1 if update_freq == "batch" else update_freq
        self.profile_batch = profile_batch
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers: dict[str, EventFileWriter] = {}
        self._global_step = 0
        self._epoch_start_step = 0
        self._batch_start = self._epoch_start = 0.0
        self._evaluated_in_epoch = False

    # ------------------------------------------------------------------ writers
    def _writer(self, run: str) -> EventFileWriter:
        if run not in self._writers:
            self._writers[run] = EventFileWriter(os.path.join(self.log_dir, run))
        return self._writers[run]

    def _write(self, run: str, step: int, value: bytes) -> None:
        self._writer(run).add(event(time.time(), int(step), (value,)))

    def _scalar(self, run: str, tag: str, data: Any, step: int) -> None:
        self._write(run, step, values.scalar_value(tag, data))

    def _close(self) -> None:
        for writer in self._writers.values():
            writer.flush()
        self._writers = {}

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        self._writers = {}
        if self.write_graph:
            self._write_model_config()
        self._warn_not_simulated()

    def _write_model_config(self) -> None:
        """Keras' conceptual graph (``keras`` at step 0, ``graph_keras_model`` plugin), for
        models that serialise to JSON; Keras likewise skips models that do not."""
        to_json = getattr(self.model, "to_json", None)
        if to_json is None:
            return
        meta = summary_metadata("graph_keras_model", content=b"1")
        self._write("train", 0, _value("keras", string_tensor_proto(to_json().encode()), meta))

    def _warn_not_simulated(self) -> None:
        missing = []
        if self.write_graph:
            missing.append("write_graph (no TensorFlow op graph exists in ipusim)")
        if self.profile_batch not in (0, "0", (0, 0), None):
            missing.append(
                "profile_batch (no TensorFlow profiler; the report's trace.json is the "
                "simulated execution trace)"
            )
        if self.embeddings_freq:
            missing.append("embeddings_freq (no projector files)")
        if missing:
            warnings.warn(
                "TensorBoard callback: not simulated by ipusim, nothing written for: "
                + "; ".join(missing)
                + ". Scalars and histograms are written as Keras writes them.",
                UserWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ hooks
    def _implements_train_batch_hooks(self) -> bool:
        return self.update_freq != "epoch" or self.write_steps_per_second

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self._global_step = self._epoch_start_step = 0

    def on_train_end(self, logs: Logs | None = None) -> None:
        self._close()

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        self._epoch_start_step = self._global_step
        self._epoch_start = time.time()
        self._evaluated_in_epoch = False

    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        self._batch_start = time.time()

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        previous, self._global_step = self._global_step, self._epoch_start_step + batch + 1
        if self.write_steps_per_second:
            seconds = time.time() - self._batch_start
            rate = (self._global_step - previous) / seconds if seconds > 0 else float("inf")
            self._scalar("train", "batch_steps_per_second", rate, self._global_step)
        freq = self.update_freq
        if isinstance(freq, int) and self._global_step // freq > previous // freq:
            for name, value in (logs or {}).items():
                if np.ndim(value) == 0:
                    self._scalar("train", "batch_" + name, value, self._global_step)

    def on_test_begin(self, logs: Logs | None = None) -> None:
        self._evaluated_in_epoch = True

    def on_test_end(self, logs: Logs | None = None) -> None:
        self._write_evaluation(logs or {})

    def _write_evaluation(self, logs: dict[str, Any]) -> None:
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        if iterations is None:
            return
        for name, value in logs.items():
            tag = f"evaluation_{name}_vs_iterations"
            self._scalar("validation", tag, value, int(np.asarray(iterations)))

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = dict(logs or {})
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if val and not self._evaluated_in_epoch:  # fit's validation passes no callbacks
            self._write_evaluation(val)
        self._add_learning_rate(train)
        if self.write_steps_per_second:
            seconds = time.time() - self._epoch_start
            steps = self._global_step - self._epoch_start_step
            train["steps_per_second"] = steps / seconds if seconds > 0 else float("inf")
        for name, value in train.items():
            self._scalar("train", "epoch_" + name, value, epoch)
        for name, value in val.items():
            self._scalar("validation", "epoch_" + name, value, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)
        for writer in self._writers.values():
            writer.flush()

    def _add_learning_rate(self, train: dict[str, Any]) -> None:
        optimizer = getattr(self.model, "optimizer", None)
        rate = getattr(optimizer, "lr", None)
        if isinstance(rate, LearningRateSchedule):
            train["learning_rate"] = float(rate(getattr(optimizer, "iterations", 0)))

    def _log_weights(self, epoch: int) -> None:
        for layer in getattr(self.model, "layers", []):
            for weight in layer.weights:
                name = weight.name.replace(":", "_")
                data = np.asarray(weight.numpy() if hasattr(weight, "numpy") else weight)
                self._write("train", epoch, values.histogram_value(name + "/histogram", data))
                if self.write_images:
                    image = _weight_image(data)
                    if image is not None:
                        self._write("train", epoch, values.image_value(name + "/image", image))


def _weight_image(weight: np.ndarray) -> np.ndarray | None:
    """A weight as Keras shows it (``_log_weight_as_image``): a bias as one row, a kernel
    [in, out] as an image with its longer side across, a conv kernel as one image per filter;
    None when it has no such view."""
    w = np.squeeze(weight)
    if w.ndim == 1:
        w = w.reshape(1, w.shape[0], 1, 1)
    elif w.ndim == 2:
        if w.shape[0] > w.shape[1]:
            w = w.T
        w = w.reshape(1, w.shape[0], w.shape[1], 1)
    elif w.ndim == 3:
        w = np.transpose(w, (2, 0, 1))
        w = w.reshape(w.shape[0], w.shape[1], w.shape[2], 1)
    if w.ndim == 4 and w.shape[-1] in (1, 3, 4):
        return w
    return None
