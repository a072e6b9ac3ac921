"""TF1 optimizer subclasses that wrap another optimizer (Graphcore's inspecting-tensors tutorial's
``OutfeedOptimizer``), under ``ipusim run``:

- the published tutorial (workloads/compat_scripts/inspecting_tensors_public, unmodified) runs,
  outfeeding gradients once per applied update and activations once per step;
- its ``OutfeedOptimizer`` around a Keras SGD, with gradient accumulation (SUM over 2
  mini-batches), outfeeds each step's gradients (AFTER_COMPUTE) or the accumulated ones
  (BEFORE_APPLY) and trains exactly as a NumPy reference of the same model;
- subclasses overriding TF1's private update hooks are refused with UnsupportedError.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "workloads" / "compat_scripts" / "inspecting_tensors_public"
CHECK = Path(__file__).resolve().parent / "programs" / "tf1_outfeed_optimizer_check.py"


def _ipusim_run(script: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(TUTORIAL), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "ipusim.cli", "run", str(script), "-o", str(out), "--"]
    return subprocess.run(
        [*command, *args], cwd=out.parent, env=env, capture_output=True, text=True, timeout=600
    )


def test_published_tutorial_runs_unmodified(tmp_path):
    run = _ipusim_run(TUTORIAL / "mnist.py", tmp_path / "reports", "--steps-per-epoch", "8",
                      "--epochs", "1")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    # Pipelined (2 stages, 4 accumulated mini-batches): 8 steps apply 2 updates, so the default
    # BEFORE_APPLY mode outfeeds the Dense_128 gradients twice; the activations once per step.
    assert "key: Dense_128/kernel:0_grad shape: (2, 256, 128)" in run.stdout
    assert "key: Dense_128/bias:0_grad shape: (2, 128)" in run.stdout
    assert "key: Dense_128_acts shape: (8, 32, 128)" in run.stdout
    assert "key: Dense_10_acts shape: (8, 32, 10)" in run.stdout
    assert (tmp_path / "reports" / "01-fit" / "trace.json").is_file()


# ------------------------------------------------------------------ NumPy reference
def _step_gradients(w: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """Gradients of the mean sparse categorical cross-entropy of Dense-relu-Dense-softmax."""
    w1, b1, w2, b2 = (a.astype(np.float64) for a in w)
    pre = x @ w1 + b1
    h = np.maximum(pre, 0.0)
    logits = h @ w2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    d_logits = (p - np.eye(3)[y]) / len(y)
    d_h = (d_logits @ w2.T) * (pre > 0)
    return [x.T @ d_h, d_h.sum(0), h.T @ d_logits, d_logits.sum(0)]


def _reference(x: np.ndarray, y: np.ndarray, w: list[np.ndarray]) -> tuple[list, list, list]:
    """(per-step gradients, accumulated gradients per update, final weights): SGD(0.1) applying
    the SUM of each 2 mini-batches' gradients."""
    w = [a.astype(np.float64) for a in w]
    steps, applied, acc = [], [], None
    for i in range(4):
        g = _step_gradients(w, x[4 * i : 4 * i + 4], y[4 * i : 4 * i + 4])
        steps.append(g)
        acc = g if acc is None else [a + b for a, b in zip(acc, g)]
        if i % 2 == 1:
            applied.append(acc)
            w = [a - 0.1 * b for a, b in zip(w, acc)]
            acc = None
    return steps, applied, w


def _fixed_inputs() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(7)  # as the program draws them
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16).astype(np.int32)
    w = [
        (rng.standard_normal((6, 5)) * 0.5).astype(np.float32),
        (rng.standard_normal(5) * 0.1).astype(np.float32),
        (rng.standard_normal((5, 3)) * 0.5).astype(np.float32),
        (rng.standard_normal(3) * 0.1).astype(np.float32),
    ]
    return x, y, w


@pytest.mark.parametrize("mode", ["AFTER_COMPUTE", "BEFORE_APPLY"])
def test_outfeed_optimizer_outfeeds_and_trains_as_numpy(tmp_path, mode):
    out = tmp_path / "result.npz"
    run = _ipusim_run(CHECK, tmp_path / "reports", str(out), mode)
    assert run.returncode == 0, run.stderr[-3000:]
    result = np.load(out)
    steps, applied, final = _reference(*_fixed_inputs())
    # The tutorial's queue keeps the "hidden" layer's gradients, keyed "<variable name>_grad",
    # in reverse variable order: bias, then kernel.
    assert list(result["keys"]) == ["hidden/bias:0_grad", "hidden/kernel:0_grad"]
    sent = steps if mode == "AFTER_COMPUTE" else applied
    np.testing.assert_allclose(result["g0"], np.stack([g[1] for g in sent]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result["g1"], np.stack([g[0] for g in sent]), rtol=1e-5, atol=1e-6)
    for i, expected in enumerate(final):
        np.testing.assert_allclose(result[f"w{i}"], expected, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ what stays refused
def test_private_hook_subclasses_are_refused():
    from ipusim.compat.tf.python.training.optimizer import GradientDescentOptimizer, Optimizer
    from ipusim.errors import UnsupportedError

    class DenseHook(Optimizer):
        def _apply_dense(self, grad, var):
            return var

    class SlotsOnBuiltin(GradientDescentOptimizer):
        def _create_slots(self, var_list):
            return None

    class NoApply(Optimizer):
        def compute_gradients(self, loss, var_list=None, **kwargs):
            return []

    for cls in (DenseHook, SlotsOnBuiltin, NoApply):
        with pytest.raises(UnsupportedError, match=cls.__name__):
            cls(0.1) if cls is SlotsOnBuiltin else cls(False, "custom")
    with pytest.raises(NotImplementedError):  # UnsupportedError is TF's NotImplementedError
        DenseHook(False, "custom")


def test_wrapper_subclass_in_compile_is_wrapped_and_delegates():
    from ipusim.compat.tf.python.training.optimizer import GradientDescentOptimizer, Optimizer
    from ipusim.keras import optimizers
    from ipusim.keras.optimizers.tf_optimizer import TFOptimizer

    class Counting(Optimizer):
        def __init__(self, inner):
            super().__init__(False, "Counting")
            self.inner, self.applied = inner, 0

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            self.applied += 1
            return self.inner.apply_gradients(grads_and_vars, global_step, name)

    tf1 = Counting(GradientDescentOptimizer(0.5))
    wrapped = optimizers.get(tf1)
    assert isinstance(wrapped, TFOptimizer) and wrapped.optimizer is tf1
    assert tf1.get_name() == "Counting"
    from ipusim.graph.variable import Variable

    var = Variable(np.array([1.0, 2.0], np.float32), "v:0")
    wrapped.apply_gradients([(np.array([0.2, -0.4], np.float32), var)])
    # TF1 GradientDescent: var -= 0.5 * g; the wrapped TF1 optimizer counts Keras' iterations
    np.testing.assert_allclose(var.numpy(), [0.9, 2.2], rtol=1e-6)
    assert tf1.applied == 1 and wrapped.iterations == 1


def test_a_model_compiled_with_a_tf1_wrapper_saves_uncompiled(tmp_path, caplog):
    from ipusim.compat import keras
    from ipusim.compat.tf.python.training.optimizer import GradientDescentOptimizer, Optimizer

    class Delegating(Optimizer):
        def __init__(self, inner):
            super().__init__(False, "Delegating")
            self.inner = inner

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            return self.inner.apply_gradients(grads_and_vars, global_step, name)

    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    model.compile(loss="mse", optimizer=Delegating(GradientDescentOptimizer(0.1)))
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    before = model.get_weights()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    # one TF1 SGD step on the mean squared error (NumPy): w -= 0.1 * d(mse)/dw
    kernel, bias = before
    err = x @ kernel + bias - y
    expected = [kernel - 0.1 * x.T @ (2 * err / err.size), bias - 0.1 * (2 * err / err.size).sum(0)]
    for got, want in zip(model.get_weights(), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    model.save(tmp_path / "m.keras")
    assert "cannot be saved" in caplog.text  # Keras' warning; the weights are saved
    loaded = keras.models.load_model(tmp_path / "m.keras")
    for got, want in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)


def test_outfeed_optimizer_in_a_custom_loop_matches_numpy(tmp_path):
    script = Path(__file__).resolve().parent / "programs" / "tf1_outfeed_optimizer_loop.py"
    run = _ipusim_run(script, tmp_path / "reports")
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(s for s in run.stdout.splitlines() if s.startswith("RESULT "))
    got = json.loads(line[len("RESULT ") :])
    rng = np.random.default_rng(2)  # the program's data
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))

    def grads(kernel, bias):  # of mean((x @ kernel + bias - y)^2)
        d = 2 * (x @ kernel + bias - y) / y.size
        return x.T @ d, d.sum(0)

    kernel, bias = (np.array(a) for a in got["initial"])
    g_kernel, g_bias = grads(kernel, bias)
    np.testing.assert_allclose(got["outfed"]["d/kernel:0_grad"], g_kernel, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["outfed"]["d/bias:0_grad"], g_bias, rtol=1e-5, atol=1e-7)
    kernel, bias = kernel - 0.1 * g_kernel, bias - 0.1 * g_bias
    np.testing.assert_allclose(got["after_one"][0], kernel, rtol=1e-5, atol=1e-7)
    g_kernel, g_bias = grads(kernel, bias)
    np.testing.assert_allclose(got["final"][0], kernel - 0.1 * g_kernel, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["final"][1], bias - 0.1 * g_bias, rtol=1e-5, atol=1e-7)
