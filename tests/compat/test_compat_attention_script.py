"""An IPU TensorFlow 2 program with MultiHeadAttention, LeakyReLU and GroupNormalization, written
as one is for the IPU (``import tensorflow as tf``, ``from tensorflow.python import ipu``,
IPUStrategy, fit), run unmodified under ``ipusim run``."""

from __future__ import annotations

import json
import textwrap

import pytest

from ipusim.compat import keras
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import tensorflow as tf
    from tensorflow.python import ipu

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 8, 16)).astype(np.float32)
    # Label: whether the first token's features sum above 0; attention must carry it.
    y = (x[:, 0, :].sum(axis=1) > 0).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16, drop_remainder=True).repeat()

    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        inputs = tf.keras.Input(shape=(8, 16), batch_size=16)
        h = tf.keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(inputs, inputs)
        h = tf.keras.layers.LeakyReLU(alpha=0.2)(h + inputs)
        h = tf.keras.layers.GroupNormalization(groups=4)(h)
        h = tf.keras.layers.Flatten()(h)
        outputs = tf.keras.layers.Dense(2)(h)
        model = tf.keras.Model(inputs, outputs)
        model.compile(
            optimizer=tf.keras.optimizers.Adam(1e-2),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=8,
        )
        history = model.fit(dataset, steps_per_epoch=8, epochs=4, verbose=0)
    losses = history.history["loss"]
    print("LOSSES", " ".join(f"{v:.4f}" for v in losses))
    print("PARAMS", model.count_params())
    """
)


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


def test_attention_model_trains_unmodified_under_ipusim_run(tmp_path, capsys):
    script = tmp_path / "attention_script.py"
    script.write_text(SCRIPT)
    result = run_script(script, output=tmp_path / "reports", quiet=True)
    assert result.exit_code == 0
    out = capsys.readouterr().out
    losses = [float(v) for v in out.split("LOSSES", 1)[1].split("\n")[0].split()]
    assert len(losses) == 4 and all(v == v for v in losses)
    assert losses[-1] < losses[0]  # it really trains
    # Parameters: 4 projections of MultiHeadAttention (16x4x8 kernels + 4x8 biases for q, k,
    # v; 4x8x16 + 16 for the output), GroupNormalization's gamma and beta (16 each), Dense 128x2+2.
    expected = 3 * (16 * 4 * 8 + 4 * 8) + (4 * 8 * 16 + 16) + 2 * 16 + (128 * 2 + 2)
    assert f"PARAMS {expected}" in out
    assert [p.name for p in result.reports] == ["01-fit"]
    figures = json.loads((result.reports[0] / "report.json").read_text())
    assert figures["kind"] == "train"
