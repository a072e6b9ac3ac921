"""An IPU TensorFlow 2 custom training loop using the wider op set (einsum, tf.nn activations,
moments, gather, top_k, logsumexp, clip_by_global_norm, tf.random; tests/compat/programs/
tf_ops_custom_loop.py) runs under ``ipusim run`` unmodified: it trains (the loss falls), its
traced results match NumPy, and each compiled program writes a report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ipusim.compat import keras
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

SCRIPT = Path(__file__).resolve().parent / "programs" / "tf_ops_custom_loop.py"


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


def test_custom_loop_with_many_tf_ops_trains_under_ipusim_run(tmp_path, capsys) -> None:
    result = run_script(SCRIPT, output=tmp_path / "r", quiet=True)
    assert result.exit_code == 0
    assert len(result.reports) == 2  # one per compiled program: the training step and the check
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("LOSSES"))
    losses = [float(v) for v in line.split()[1:]]
    assert len(losses) == 12
    assert np.mean(losses[-4:]) < 0.8 * np.mean(losses[:4]), losses
    check = next(line for line in out.splitlines() if line.startswith("CHECK")).split()
    x = np.random.default_rng(0).normal(size=(64, 6, 4)).astype(np.float32)[:2]
    np.testing.assert_allclose(float(check[1]), np.sin(np.cumsum(x, axis=1)).sum(), rtol=1e-5)
    assert int(check[2]) == int(np.argmin(x.reshape(-1)))
