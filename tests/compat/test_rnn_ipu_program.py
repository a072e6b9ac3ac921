"""A recurrent IPU TensorFlow 2 program, written as one is, run unmodified under ``ipusim run``.

The script imports ``tensorflow.python.ipu``, builds a functional model of ``tf.keras.layers.LSTM``
and ``ipu_tensorflow_addons.keras.layers.LSTM`` (PopnnLSTM) in an IPUStrategy, and fits it. The
test checks the model learns and that the trace shows the serialised loop: every time step's gate
compute of each layer, forwards in order, then backwards in reverse order.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from ipusim.compat import keras
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

STEPS = 7

SCRIPT = textwrap.dedent(
    f"""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python import ipu
    from ipu_tensorflow_addons.keras import layers as ipu_layers

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, {STEPS}, 4)).astype(np.float32)
    y = (x[:, :, 0].mean(axis=1) > 0).astype(np.int32)

    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        inputs = tf.keras.Input(({STEPS}, 4), batch_size=16)
        h = tf.keras.layers.LSTM(8, return_sequences=True, name="keras")(inputs)
        h = ipu_layers.LSTM(8, name="popnn")(h)
        outputs = tf.keras.layers.Dense(2)(h)
        model = tf.keras.Model(inputs, outputs)
        model.compile(
            optimizer=tf.keras.optimizers.Adam(0.01),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=4,
        )
        history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    print("POPNN", type(model.layers[2]).__name__)
    print("LOSSES", " ".join(f"{{v:.4f}}" for v in history.history["loss"]))
    """
)


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


def _first_step_cells(trace: dict) -> list[str]:
    """Names of the gate computes of every time step in the first training step, in time order."""
    cells = [
        (e["ts"], e["name"])
        for e in trace["traceEvents"]
        if e.get("ph") == "X"
        and e.get("cat") == "compute"
        and e["args"].get("step") == 0
        and e["args"].get("op") in ("lstm_cell", "lstm_cell_grad")
    ]
    return [name for _, name in sorted(cells)]


def test_recurrent_ipu_program_trains_and_traces_every_time_step(tmp_path, capsys):
    script = tmp_path / "rnn_program.py"
    script.write_text(SCRIPT)
    result = run_script(script, output=tmp_path / "out", quiet=True)
    assert result.exit_code == 0
    out = capsys.readouterr().out
    assert "POPNN PopnnLSTM" in out
    losses = [float(v) for v in out.split("LOSSES")[1].split()]
    assert losses[-1] < 0.7 * losses[0]  # it learns
    trace = json.loads((Path(result.reports[0]) / "trace.json").read_text())
    names = _first_step_cells(trace)
    for layer in ("keras", "popnn"):
        fwd = [n for n in names if re.fullmatch(rf"{layer}/lstm_cell_\d+", n)]
        bwd = [n for n in names if re.fullmatch(rf"{layer}/lstm_cell_grad_\d+", n)]
        assert len(fwd) == STEPS and len(bwd) == STEPS
        ids = [int(n.rsplit("_", 1)[1]) for n in fwd]
        assert ids == sorted(ids)  # forwards in time order
    # The first layer's forward loop ends before the second's begins; backwards the second
    # layer's loop runs before the first's.
    assert _where(names, r"keras/lstm_cell_\d+")[-1] < _where(names, r"popnn/lstm_cell_\d+")[0]
    assert (
        _where(names, r"popnn/lstm_cell_grad_\d+")[-1]
        < _where(names, r"keras/lstm_cell_grad_\d+")[0]
    )


def _where(names: list[str], pattern: str) -> list[int]:
    return [i for i, n in enumerate(names) if re.fullmatch(pattern, n)]


def test_ipu_layer_modules_name_the_popnn_layers_lstm_and_gru():
    """SDK 2.x ``ipu.keras.layers`` and SDK 3.x ``ipu_tensorflow_addons.keras.layers`` both call
    PopnnLSTM / PopnnGRU ``LSTM`` / ``GRU``; ``tf.keras.layers.LSTM`` stays Keras'."""
    from ipusim.compat import ipu_addons_layers
    from ipusim.compat.ipu.keras import layers as ipu_keras_layers
    from ipusim.compat.runner import resolve

    for module in (ipu_addons_layers, ipu_keras_layers):
        assert module.LSTM is keras.layers.PopnnLSTM and module.GRU is keras.layers.PopnnGRU
        assert module.Dense is keras.layers.Dense  # the rest are the Keras layers
    assert keras.layers.LSTM is not keras.layers.PopnnLSTM
    assert resolve("ipu_tensorflow_addons.keras.layers") == "ipusim.compat.ipu_addons_layers"
