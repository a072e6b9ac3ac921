"""The TF1 Popnn layers (``tensorflow.python.ipu.rnn_ops`` / ``ipu_tensorflow_addons.v1.layers``)
under ``ipusim run``: forward outputs and states against NumPy LSTM / GRU references fed the
layers' own weights in Popnn's layout, and the kernel gradient against finite differences."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).resolve().parent / "programs" / "tf1_popnn_rnn.py"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import naive_rnn  # noqa: E402  (tests/naive_rnn.py: NumPy LSTM / GRU in Keras' layout)


def _run(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "ipusim.cli", "run", str(PROGRAM), "-o", str(tmp_path)]
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(s for s in run.stdout.splitlines() if s.startswith("RESULT "))
    return {k: [np.array(a) for a in v] for k, v in json.loads(line[7:]).items()}


def _lstm(xs, kernel, biases):
    """Popnn's layout: kernel rows input then recurrent, columns and biases per gate."""
    return naive_rnn.lstm(xs.transpose(1, 0, 2), kernel[:3], kernel[3:], biases.reshape(-1))


def test_popnn_layers_match_numpy(tmp_path):
    got = _run(tmp_path)
    rng = np.random.default_rng(4)  # the program's data
    xs, h0 = rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 4))

    out, c, h, kernel, biases = got["lstm"]
    assert kernel.shape == (7, 16) and biases.shape == (4, 4)
    assert np.all(biases == np.float32(0.2))
    assert np.all(np.abs(kernel) <= np.sqrt(6 / (7 + 16)))  # Glorot uniform over [7, 16]
    ref_out, ref_h, ref_c = _lstm(xs, kernel, biases)
    np.testing.assert_allclose(out, ref_out.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, ref_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, ref_h, rtol=1e-5, atol=1e-6)

    g_out, g_state, g_kernel, g_biases = got["gru"]
    assert g_biases.shape == (3, 4) and not g_biases.any()
    ref, ref_state = naive_rnn.gru(
        xs.transpose(1, 0, 2), g_kernel[:3], g_kernel[3:], g_biases.reshape(-1),
        reset_after=False, h0=h0,
    )  # fmt: skip
    np.testing.assert_allclose(g_out, ref.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_state, ref_state, rtol=1e-5, atol=1e-6)

    a_out, a_kernel, a_biases = got["gru_after"]
    assert a_biases.shape == (3, 2, 4)  # [gate, (input, recurrent), units]
    bias = np.stack([a_biases[:, 0].reshape(-1), a_biases[:, 1].reshape(-1)])
    ref, _ = naive_rnn.gru(xs.transpose(1, 0, 2), a_kernel[:3], a_kernel[3:], bias)
    np.testing.assert_allclose(a_out, ref.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)

    # SGD with learning rate 1 on sum(outputs): kernel - trained = d sum(outputs) / d kernel
    grad = kernel - got["trained_kernel"][0]
    numeric = np.zeros_like(kernel, dtype=np.float64)
    for index in np.ndindex(kernel.shape):
        step = np.zeros_like(numeric)
        step[index] = 1e-6
        up = _lstm(xs, kernel + step, biases)[0].sum()
        down = _lstm(xs, kernel - step, biases)[0].sum()
        numeric[index] = (up - down) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-3, atol=1e-5)
