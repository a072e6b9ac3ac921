"""ReduceLROnPlateau, CSVLogger, ModelCheckpoint, BackupAndRestore, BaseLogger and the callbacks
ipusim does not simulate, against schedules and file contents worked out by hand."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import UnsupportedError
from ipusim.keras import callbacks


class FakeOptimizer:
    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = learning_rate


class FakeModel:
    """What these callbacks touch: the optimizer's rate, save / save_weights, stop_training."""

    def __init__(self, learning_rate: float = 0.1) -> None:
        self.optimizer = FakeOptimizer(learning_rate)
        self.stop_training = False
        self.saved: list[tuple[str, str]] = []

    def save(self, filepath: str, overwrite: bool = True, **kwargs) -> None:
        self.saved.append(("model", filepath))

    def save_weights(self, filepath: str, overwrite: bool = True, **kwargs) -> None:
        self.saved.append(("weights", filepath))


def _epochs(callback: callbacks.Callback, model: FakeModel, logs: list[dict]) -> list[dict]:
    callback.set_model(model)
    callback.on_train_begin()
    seen = []
    for epoch, epoch_logs in enumerate(logs):
        callback.on_epoch_begin(epoch)
        epoch_logs = dict(epoch_logs)
        callback.on_epoch_end(epoch, epoch_logs)
        seen.append(epoch_logs)
    callback.on_train_end()
    return seen


# ------------------------------------------------------------------------- ReduceLROnPlateau
def test_reduce_lr_on_plateau_follows_the_hand_worked_schedule() -> None:
    # patience 2, min_delta 0.01, cooldown 1, factor 0.5, min_lr 0.02, starting at 0.1:
    # e0 best 1.0 | e1, e2 no gain of 0.01 -> wait 2 -> 0.05, cooldown | e3 cooldown ends, 0.98
    # best | e4, e5 wait 2 -> 0.025 | e6 cooldown, 0.96 best | e7, e8 -> max(0.0125, 0.02) =
    # 0.02 | e9, e10 wait 2 but the rate is not above min_lr: unchanged.
    losses = [1.0, 0.995, 0.993, 0.98, 0.975, 0.972, 0.96, 0.958, 0.957, 0.956, 0.955]
    model = FakeModel(0.1)
    cb = callbacks.ReduceLROnPlateau(
        monitor="loss", factor=0.5, patience=2, min_delta=0.01, cooldown=1, min_lr=0.02
    )
    seen = _epochs(cb, model, [{"loss": v} for v in losses])
    f32 = [float(np.float32(v)) for v in (0.1, 0.05, 0.025, 0.02)]
    expected = [f32[0]] * 3 + [f32[1]] * 3 + [f32[2]] * 3 + [f32[3]] * 2
    assert [logs["lr"] for logs in seen] == expected
    assert model.optimizer.learning_rate == f32[3]


def test_reduce_lr_on_plateau_max_mode_for_accuracy_and_argument_checks(capsys) -> None:
    model = FakeModel(1.0)
    cb = callbacks.ReduceLROnPlateau(monitor="val_acc", patience=1, factor=0.1, verbose=1)
    _epochs(cb, model, [{"val_acc": 0.5}, {"val_acc": 0.6}, {"val_acc": 0.55}])
    # "acc" in the name: higher is better; only the last epoch fails to improve.
    assert model.optimizer.learning_rate == float(np.float32(0.1))
    assert (
        "Epoch 00003: ReduceLROnPlateau reducing learning rate to 0.1." in capsys.readouterr().out
    )
    with pytest.raises(ValueError, match="factor >= 1.0"):
        callbacks.ReduceLROnPlateau(factor=1.0)


# ---------------------------------------------------------------------------------- CSVLogger
def test_csv_logger_rows_with_na_for_keys_an_epoch_lacks(tmp_path) -> None:
    # As IPU TensorFlow's Keras: columns from the first epoch's logs, no val_ columns added.
    path = tmp_path / "log.csv"
    cb = callbacks.CSVLogger(str(path))
    logs = [{"loss": 0.5, "acc": 0.25}, {"loss": 0.25, "acc": 0.5, "val_loss": 1.0}, {"loss": 2}]
    _epochs(cb, FakeModel(), logs)
    assert path.read_bytes().decode() == (
        "epoch,acc,loss\r\n0,0.25,0.5\r\n1,0.5,0.25\r\n2,NA,2\r\n"
    )


def test_csv_logger_append_separator_and_sequences(tmp_path) -> None:
    path = tmp_path / "log.csv"
    path.write_bytes(b"epoch;loss;val_loss\r\n0;1.0;2.0\r\n")
    cb = callbacks.CSVLogger(str(path), separator=";", append=True)
    _epochs(cb, FakeModel(), [{"loss": 0.5, "val_loss": 0.75, "per": np.array([1, 2])}])
    lines = path.read_bytes().decode().split("\r\n")
    assert lines[:2] == ["epoch;loss;val_loss", "0;1.0;2.0"]
    assert lines[2] == '0;0.5;"""[1, 2]""";0.75'  # keys sorted: loss, per, val_loss


# ---------------------------------------------------------------------------- ModelCheckpoint
def test_model_checkpoint_best_only_saves_on_improvement_with_formatted_names(tmp_path) -> None:
    model = FakeModel()
    pattern = str(tmp_path / "ck" / "m.{epoch:02d}-{val_loss:.2f}.npz")
    cb = callbacks.ModelCheckpoint(pattern, save_best_only=True, save_weights_only=True)
    _epochs(cb, model, [{"val_loss": v} for v in (0.5, 0.6, 0.4, 0.4)])
    assert model.saved == [
        ("weights", str(tmp_path / "ck" / "m.01-0.50.npz")),
        ("weights", str(tmp_path / "ck" / "m.03-0.40.npz")),
    ]
    assert (tmp_path / "ck").is_dir()


def test_model_checkpoint_max_mode_initial_threshold_and_whole_model() -> None:
    model = FakeModel()
    cb = callbacks.ModelCheckpoint(
        "best.npz", monitor="val_accuracy", save_best_only=True, initial_value_threshold=0.55
    )
    _epochs(cb, model, [{"val_accuracy": v} for v in (0.5, 0.6, 0.58, 0.7)])
    assert model.saved == [("model", "best.npz"), ("model", "best.npz")]
    assert cb.best == 0.7


def test_model_checkpoint_save_freq_counts_batches_across_steps_per_execution() -> None:
    # 5 steps per epoch, steps_per_execution 2: the callbacks see batch ends 1, 3 and 4. Keras'
    # counter adds (batch - last batch) or (batch + 1) after a restart: 1, 2 (=3: save, batch
    # 4), 1 | 2 (=3: save, epoch 2 batch 2), 2, 1 (=3: save, epoch 2 batch 5).
    model = FakeModel()
    cb = callbacks.ModelCheckpoint("w-{epoch}-{batch}.npz", save_freq=3, save_weights_only=True)
    cb.set_model(model)
    cb.on_train_begin()
    for epoch in range(2):
        cb.on_epoch_begin(epoch)
        for batch in (1, 3, 4):
            cb.on_train_batch_end(batch, {"loss": 1.0})
        cb.on_epoch_end(epoch, {"loss": 1.0})
    assert [p for _, p in model.saved] == ["w-1-4.npz", "w-2-2.npz", "w-2-5.npz"]
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.ModelCheckpoint("x", save_freq="batch")


def test_model_checkpoint_names_a_missing_log_key() -> None:
    cb = callbacks.ModelCheckpoint("m-{val_auc:.2f}.npz")
    with pytest.raises(KeyError, match="val_auc"):
        _epochs(cb, FakeModel(), [{"loss": 1.0}])


# ------------------------------------------------------------- real models: files and resume
def _model() -> keras.Model:
    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [keras.layers.Dense(6, activation="relu", input_shape=(4,)), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    return model


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5, 0.0], np.float32))[:, None]


def test_checkpoint_files_hold_the_weights_of_their_epoch(tmp_path) -> None:
    x, y = _data()
    model = _model()
    after_epoch = []
    record = callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: after_epoch.append(model.get_weights())
    )
    pattern = str(tmp_path / "w{epoch}.npz")
    ckpt = callbacks.ModelCheckpoint(pattern, save_weights_only=True)
    model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0, callbacks=[ckpt, record])
    probe = _model()
    for epoch in (1, 3):
        probe.load_weights(pattern.format(epoch=epoch))
        for got, want in zip(probe.get_weights(), after_epoch[epoch - 1], strict=True):
            np.testing.assert_array_equal(got, want)


class _Interrupt(callbacks.Callback):
    def __init__(self, at_epoch: int) -> None:
        super().__init__()
        self.at_epoch = at_epoch

    def on_epoch_end(self, epoch: int, logs=None) -> None:
        if epoch == self.at_epoch:
            raise KeyboardInterrupt


def test_backup_and_restore_resumes_where_an_interrupted_fit_stopped(tmp_path) -> None:
    x, y = _data()
    whole = _model()
    whole.fit(x, y, batch_size=8, epochs=4, shuffle=False, verbose=0)
    backup = str(tmp_path / "backup")
    first = _model()
    with pytest.raises(KeyboardInterrupt):
        first.fit(
            x,
            y,
            batch_size=8,
            epochs=4,
            shuffle=False,
            verbose=0,
            callbacks=[callbacks.BackupAndRestore(backup), _Interrupt(1)],
        )
    assert json.loads((tmp_path / "backup" / "state.json").read_text()) == {"epoch": 1}
    resumed = _model()  # a new process would rebuild the model from scratch
    history = resumed.fit(
        x,
        y,
        batch_size=8,
        epochs=4,
        shuffle=False,
        verbose=0,
        callbacks=[callbacks.BackupAndRestore(backup)],
    )
    assert history.epoch == [2, 3]
    for got, want in zip(resumed.get_weights(), whole.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert not os.path.exists(tmp_path / "backup" / "model.npz")  # deleted at the end


# --------------------------------------------------------------------- BaseLogger, unsupported
def test_base_logger_averages_batch_logs_weighted_by_size() -> None:
    cb = callbacks.BaseLogger(stateful_metrics=["acc"])
    cb.set_params({"metrics": ["loss", "acc"]})
    cb.on_epoch_begin(0)
    cb.on_batch_end(0, {"size": 2, "loss": 1.0, "acc": 0.5})
    cb.on_batch_end(1, {"size": 6, "loss": 3.0, "acc": 0.75})
    logs: dict = {}
    cb.on_epoch_end(0, logs)
    assert logs == {"loss": (2 * 1.0 + 6 * 3.0) / 8, "acc": 0.75}


def test_remote_monitor_and_sidecar_export_are_not_simulated() -> None:
    x, y = _data()
    model = _model()
    with pytest.raises(UnsupportedError, match="RemoteMonitor"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[callbacks.RemoteMonitor()])
    with pytest.raises(NotImplementedError, match="SidecarEvaluatorModelExport"):
        callbacks.SidecarEvaluatorModelExport("a", "b")
    with pytest.raises(UnsupportedError, match="save_freq"):
        callbacks.BackupAndRestore("b", save_freq=10)


def test_model_checkpoint_load_weights_on_restart_loads_the_newest_match(tmp_path) -> None:
    x, y = _data()
    model = _model()
    pattern = str(tmp_path / "w.{epoch:02d}.npz")
    model.fit(
        x,
        y,
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[callbacks.ModelCheckpoint(pattern, save_weights_only=True)],
    )
    os.utime(tmp_path / "w.01.npz", (1, 1))  # make epoch 2's file the newest for sure
    trained = model.get_weights()
    fresh = _model()
    seen = []
    restart = callbacks.ModelCheckpoint(
        pattern, save_weights_only=True, load_weights_on_restart=True
    )
    probe = callbacks.LambdaCallback(on_train_begin=lambda logs: seen.append(fresh.get_weights()))
    fresh.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[restart, probe])
    for got, want in zip(seen[0], trained, strict=True):
        np.testing.assert_array_equal(got, want)
