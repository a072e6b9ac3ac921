"""Measure what moves TensorFlow's 64-step LSTM Adam training run: rounding or definition.

Run in the separate TensorFlow environment (never a dependency of ipusim or of its tests)::

    /work/tfvenv/bin/python bench/tf_parity/lstm_drift.py

It replays the ``training/lstm_adam`` case of ``fixtures/rnn.npz`` (same initial weights,
batches and learning rate) and prints the relative loss difference at step 63 and the worst step
between:

* IPU TensorFlow's Adam (tf_keras ``optimizers.legacy.Adam``, OptimizerV2) in float32 and the
  same in float64: TensorFlow's own float32 rounding drift over the run;
* the legacy Adam and tf_keras' new ``optimizers.Adam``, in float32 and in float64: a difference
  that stays in float64 is one of definition (the new Adam takes ``1 - beta`` in Python double,
  the legacy one in the variable's precision from the float32-rounded beta).

The figures are quoted in tests/numerics/test_rnn_parity.py (the Adam check's docstring).
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from generate_rnn import TRAIN, training_model  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "rnn.npz"
CASE = "training/lstm_adam"


def _losses(legacy: bool, dtype: str) -> np.ndarray:
    """The 64 training losses with the legacy or the new Adam, computed in ``dtype``."""
    keras.backend.clear_session()
    keras.backend.set_floatx(dtype)
    with np.load(FIXTURE) as data:
        a = {k.rpartition("/")[2]: data[k] for k in data.files if k.startswith(CASE + "/")}
    model = training_model(keras)
    model.set_weights([a[f"initial{i}"].astype(dtype) for i in range(len(model.weights))])
    adam = keras.optimizers.legacy.Adam if legacy else keras.optimizers.Adam
    model.compile(adam(learning_rate=0.01), keras.losses.SparseCategoricalCrossentropy(True))
    batch, losses = TRAIN["batch"], []
    for s in range(TRAIN["steps"]):
        part = slice(s * batch, (s + 1) * batch)
        losses.append(float(model.train_on_batch(a["x"][part].astype(dtype), a["y"][part])))
    keras.backend.set_floatx("float32")
    return np.array(losses)


def main() -> None:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    runs = {
        (legacy, d): _losses(legacy, d) for legacy in (True, False) for d in ("float32", "float64")
    }
    pairs = [
        ("legacy float32 vs legacy float64 (rounding)", (True, "float32"), (True, "float64")),
        ("new float32 vs new float64 (rounding)", (False, "float32"), (False, "float64")),
        ("legacy vs new, float32", (True, "float32"), (False, "float32")),
        ("legacy vs new, float64 (definition)", (True, "float64"), (False, "float64")),
    ]
    for label, a, b in pairs:
        rel = np.abs(runs[a] - runs[b]) / np.abs(runs[b])
        print(f"{label}: step 63 {rel[-1]:.2e}, worst {rel.max():.2e} (step {rel.argmax()})")


if __name__ == "__main__":
    main()
