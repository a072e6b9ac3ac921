"""Automatic loss scaling in a script written as IPU programs are (``keras.ipu.optimizers``
under ``ipusim run``): a float16 overflow the scale recovers from, step by step."""

from __future__ import annotations

import textwrap

import pytest

from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import keras
    from keras.ipu.layers import CaptureUpstreamGradients
    from keras.ipu.optimizers import ALSOptimizer
    from tensorflow.python import ipu

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()

    # y = w x with w = 1, x = 10, target -40: dL/dw = 2 * 50 * 10 = 1000, so the scaled
    # float16 gradient 1000 * LSF saturates (>= 65504) for every LSF >= 128.
    x = np.full((11, 1), 10.0, np.float32)
    y = np.full((11, 1), -40.0, np.float32)


    class PrintScale(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            print("LSF", self.model.optimizer.loss_scaling_factor)


    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        dense = keras.layers.Dense(
            1, use_bias=False, kernel_initializer="ones", dtype="float16"
        )
        model = keras.Sequential([CaptureUpstreamGradients(dense)])
        optimizer = ALSOptimizer(
            keras.optimizers.SGD(0.0),
            initial_loss_scaling_factor=16384,
            update_frequency=1,
            max_loss_scaling_factor=65536,
        )
        model.compile(optimizer=optimizer, loss="mse")
        model.fit(x, y, batch_size=1, epochs=1, callbacks=[PrintScale()], verbose=0)
    print("FINITE", bool(np.isfinite(model.get_weights()[0]).all()))
    """
)


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()


def test_als_script_recovers_from_a_float16_overflow(tmp_path, capsys) -> None:
    script = tmp_path / "als_example.py"
    script.write_text(SCRIPT)
    result = run_script(script, output=tmp_path / "reports", quiet=True)
    assert result.exit_code == 0
    out = capsys.readouterr().out.splitlines()
    seen = [float(line.split()[1]) for line in out if line.startswith("LSF")]
    # Halved on each overflowing step down to 64 (64000 < 65504); 64 grows to 128, which
    # overflows again: the scale settles at the largest factor without overflow.
    assert seen == [8192, 4096, 2048, 1024, 512, 256, 128, 64, 128, 64, 128]
    assert "FINITE True" in out
