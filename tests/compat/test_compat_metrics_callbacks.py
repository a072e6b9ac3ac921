"""An IPU TensorFlow 2 program using Keras metrics (AUC, Precision, Recall, BinaryIoU) and callbacks
(CSVLogger, ModelCheckpoint, ReduceLROnPlateau), run unmodified under ``ipusim run``.

The expectations are independent of ipusim: precision, recall and a rank AUC computed with NumPy
from the predictions the script prints, the learning-rate schedule worked out by hand, the CSV
rows equal to the history the script prints, one checkpoint per epoch named from its loss.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import textwrap

import numpy as np
import pytest

from ipusim.compat import keras
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

SCRIPT = textwrap.dedent(
    """
    import json

    import numpy as np
    import tensorflow as tf
    from tensorflow.python import ipu

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 4)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] + 0.3 * rng.standard_normal(128) > 0).astype(np.float32)[:, None]

    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        model = tf.keras.Sequential(
            [
                tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                tf.keras.layers.Dense(1, activation="sigmoid"),
            ]
        )
        model.compile(
            optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
            loss=tf.keras.losses.BinaryCrossentropy(),
            metrics=[
                tf.keras.metrics.AUC(),
                tf.keras.metrics.Precision(),
                tf.keras.metrics.Recall(),
                tf.keras.metrics.BinaryIoU(name="iou"),
            ],
            steps_per_execution=4,
        )
        callbacks = [
            tf.keras.callbacks.CSVLogger("train.csv"),
            tf.keras.callbacks.ModelCheckpoint(
                "ckpt/weights.{epoch:02d}-{loss:.3f}.h5", save_weights_only=True, monitor="loss"
            ),
            tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=1.0),
        ]
        history = model.fit(x, y, batch_size=16, epochs=3, callbacks=callbacks, verbose=0)
        result = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
        predictions = model.predict(x, batch_size=16)
        final = [w.tolist() for w in model.get_weights()]

    print("HISTORY", json.dumps(history.history))
    print("EVAL", json.dumps(result))
    print("LR", float(model.optimizer.learning_rate))
    print("DATA", json.dumps({"y": y[:, 0].tolist(), "p": predictions[:, 0].tolist(), "w": final}))
    """
)


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """Run the script once in a fresh folder; its printed lines (JSON) and the folder."""
    folder = tmp_path_factory.mktemp("metrics_callbacks")
    script = folder / "ipu_metrics_callbacks.py"
    script.write_text(SCRIPT)
    out = io.StringIO()
    cwd = os.getcwd()
    reset_ipu_configuration()
    keras.backend.clear_session()  # names as in a fresh process ("auc", not "auc_7")
    try:
        os.chdir(folder)
        with contextlib.redirect_stdout(out):
            result = run_script(script, output=folder / "reports", quiet=True)
    finally:
        os.chdir(cwd)
        reset_ipu_configuration()
    assert result.exit_code == 0
    lines = dict(line.split(" ", 1) for line in out.getvalue().splitlines() if " " in line)
    return {
        "folder": folder,
        "history": json.loads(lines["HISTORY"]),
        "eval": json.loads(lines["EVAL"]),
        "lr": float(lines["LR"]),
        "data": json.loads(lines["DATA"]),
    }


def _rank_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Exact ROC AUC: the probability a positive outscores a negative (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (pos.size * neg.size))


def test_evaluate_metrics_match_numpy_on_the_predictions(run) -> None:
    y = np.asarray(run["data"]["y"])
    p = np.asarray(run["data"]["p"], dtype=np.float32)
    predicted = p > 0.5
    tp = np.sum(predicted & (y == 1))
    assert run["eval"]["precision"] == pytest.approx(tp / predicted.sum(), rel=1e-6)
    assert run["eval"]["recall"] == pytest.approx(tp / (y == 1).sum(), rel=1e-6)
    # 200 thresholds approximate the exact AUC to well within 0.01 on 128 samples.
    assert abs(run["eval"]["auc"] - _rank_auc(y, p)) < 0.01
    # BinaryIoU: mean over classes 0 and 1 of |pred == c and y == c| / |pred == c or y == c|.
    hard = (p >= 0.5).astype(int)
    ious = [np.sum((hard == c) & (y == c)) / np.sum((hard == c) | (y == c)) for c in (0, 1)]
    assert run["eval"]["iou"] == pytest.approx(np.mean(ious), rel=1e-6)


def test_reduce_lr_on_plateau_halves_the_rate_every_epoch_without_a_1_0_improvement(run) -> None:
    # patience=1, min_delta=1.0: epoch 1 sets the best; epochs 2 and 3 never improve by 1.0, so
    # each ends with a halving. The logs hold the rate the epoch ran with (float32, as Keras).
    lrs = [float(np.float32(v)) for v in (0.05, 0.05, 0.025)]
    assert run["history"]["lr"] == lrs
    assert run["lr"] == float(np.float32(0.0125))


def test_csv_logger_writes_one_row_per_epoch_equal_to_the_history(run) -> None:
    with open(run["folder"] / "train.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    names = ["auc", "iou", "loss", "precision", "recall"]
    assert list(rows[0]) == ["epoch", *names]  # IPU TensorFlow's Keras adds no val_ columns
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    for name in names:
        assert [float(r[name]) for r in rows] == run["history"][name]


def test_model_checkpoint_saves_each_epoch_under_its_formatted_name(run) -> None:
    losses = run["history"]["loss"]
    expected = sorted(f"weights.{e + 1:02d}-{loss:.3f}.h5" for e, loss in enumerate(losses))
    assert sorted(p.name for p in (run["folder"] / "ckpt").iterdir()) == expected
    model = keras.Sequential(
        [keras.layers.Dense(8, activation="relu", input_shape=(4,)), keras.layers.Dense(1)]
    )
    model.load_weights(str(run["folder"] / "ckpt" / expected[-1]))
    for got, want in zip(model.get_weights(), run["data"]["w"], strict=True):
        np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float32))
