"""Write TensorBoard event files with real TensorFlow for tests/compat/test_summary.py.

Run in the separate TensorFlow environment (tensorflow-cpu, tf-keras and tensorboard; never
dependencies of ipusim)::

    /work/tfvenv/bin/python bench/tf_summary/generate.py

It writes ``bench/tf_summary/fixtures/``:

* ``summary/events.out.tfevents.fixture.v2``: ``tf.summary`` scalars (with and without a description), histograms
  (default and 5 buckets, a constant tensor), a text and two images (uint8 RGB, float
  greyscale), one scalar under ``record_if(False)`` (not written), for the values in
  :data:`CASES` (the test writes the same with ipusim and compares record by record);
* ``keras/train/events.out.tfevents.fixture.v2`` and ``keras/validation/events.out.tfevents.fixture.v2``: what tf-keras' ``TensorBoard``
  callback writes for a 2-epoch fit with validation data, ``update_freq=2`` (verbose 1: tf-keras 2.21 calls
  the batch hooks, where it writes ``batch_*``, only when a callback such as the progress bar
  needs them) and
  ``histogram_freq=1`` (the test compares the tags, steps and kinds ipusim's callback writes).

File names are fixed (TensorFlow's carry the time, host and process id).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

OUT = Path(__file__).resolve().parent / "fixtures"


def cases() -> dict[str, np.ndarray]:
    """The tensors the summaries hold (the test rebuilds them with the same code)."""
    rng = np.random.default_rng(22)
    return {
        "weights": rng.standard_normal(200).astype(np.float32),
        "constant": np.full((3, 4), 2.5, dtype=np.float32),
        "rgb": rng.integers(0, 256, size=(2, 4, 5, 3)).astype(np.uint8),
        "grey": rng.random((1, 3, 2, 1)).astype(np.float32),
    }


def _only_file(folder: Path, target: Path) -> None:
    (events,) = sorted(folder.glob("events.out.tfevents.*"))
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(events, target)


def write_summary(tf, folder: Path) -> None:
    data = cases()
    writer = tf.summary.create_file_writer(str(folder))
    with writer.as_default():
        tf.summary.scalar("loss", 0.5, step=0)
        tf.summary.scalar("loss", 0.25, step=1, description="half of it")
        tf.summary.histogram("weights", data["weights"], step=1)
        tf.summary.histogram("weights5", data["weights"], step=2, buckets=5)
        tf.summary.histogram("constant", data["constant"], step=2)
        tf.summary.text("note", "hello ipusim", step=3)
        tf.summary.image("rgb", data["rgb"], step=4, max_outputs=3)
        tf.summary.image("grey", data["grey"], step=4)
        with tf.summary.record_if(False):
            tf.summary.scalar("hidden", 1.0, step=5)
        writer.flush()
    writer.close()


def write_keras(tf, keras, folder: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    model = keras.Sequential(
        [keras.layers.Dense(3, activation="relu", input_shape=(4,)), keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    callback = keras.callbacks.TensorBoard(
        log_dir=str(folder), histogram_freq=1, update_freq=2, write_graph=False
    )
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        model.fit(
            x,
            y,
            batch_size=8,
            epochs=2,
            validation_data=(x[:8], y[:8]),
            verbose=1,
            callbacks=[callback],
        )


def main() -> int:
    import tensorflow as tf
    import tf_keras as keras

    with tempfile.TemporaryDirectory() as tmp:
        write_summary(tf, Path(tmp) / "summary")
        _only_file(Path(tmp) / "summary", OUT / "summary" / "events.out.tfevents.fixture.v2")
        write_keras(tf, keras, Path(tmp) / "keras")
        for run in ("train", "validation"):
            _only_file(
                Path(tmp) / "keras" / run, OUT / "keras" / run / "events.out.tfevents.fixture.v2"
            )
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
