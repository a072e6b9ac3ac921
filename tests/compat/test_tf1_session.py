"""TF1 graphs and sessions through ``tf.compat.v1`` (placeholders and ``feed_dict``,
``Session.run`` of fetch structures, variables initialised by the initializer op, TF1 optimizers'
``minimize``, ``tf.layers.dense``), under ``ipusim run`` and checked against NumPy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"


def _result_lines(script: str, tmp_path: Path) -> list[str]:
    """The ``RESULT`` lines (prefix removed) of ``script`` run by ``ipusim run``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "ipusim.cli", "run", str(PROGRAMS / script)]
    run = subprocess.run(
        [*command, "-o", str(tmp_path / "out")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    prefix = "RESULT "
    return [line[len(prefix) :] for line in run.stdout.splitlines() if line.startswith(prefix)]


def _results(script: str, tmp_path: Path) -> dict[str, str]:
    """``RESULT key rest`` lines as {key: rest}."""
    return dict(line.partition(" ")[::2] for line in _result_lines(script, tmp_path))


def test_linear_regression_session_trains_as_numpy(tmp_path):
    got = _results("tf1_session_regression.py", tmp_path)
    rng = np.random.default_rng(3)  # the program's data
    xs = rng.standard_normal((16, 3))
    ys = xs @ np.array([[1.0], [-2.0], [0.5]]) + 0.3
    w, b, losses = np.full((3, 1), 0.1), np.zeros(1), []
    for _ in range(5):  # one fetch of [train, loss]: the loss of the weights before the step
        err = xs @ w + b - ys
        losses.append(np.mean(err**2))
        w, b = w - 0.05 * 2 * xs.T @ err / len(xs), b - 0.05 * 2 * err.sum(0) / len(xs)
    assert got["uninitialised"] == "FailedPreconditionError"
    np.testing.assert_allclose(json.loads(got["losses"]), losses, rtol=1e-5)
    w_text, _, b_text = got["w"].partition(" b ")
    np.testing.assert_allclose(json.loads(w_text), w.ravel(), rtol=1e-5)
    np.testing.assert_allclose(json.loads(b_text), b, rtol=1e-5, atol=1e-7)
    assert json.loads(got["reset"]) == pytest.approx([0.1, 0.1, 0.1])
    assert got["missing"] == "feed True"


def _adam(params: list, grads: list, state: dict, lr: float = 0.01) -> list:
    """TF1 AdamOptimizer: lr_t = lr sqrt(1 - b2^t) / (1 - b1^t); var -= lr_t m / (sqrt(v) + 1e-8)."""
    state["t"] += 1
    t, out = state["t"], []
    lr_t = lr * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
    for i, (p, g) in enumerate(zip(params, grads)):
        state[("m", i)] = 0.9 * state.get(("m", i), 0) + 0.1 * g
        state[("v", i)] = 0.999 * state.get(("v", i), 0) + 0.001 * g * g
        out.append(p - lr_t * state[("m", i)] / (np.sqrt(state[("v", i)]) + 1e-8))
    return out


def _forward_backward(params: list, xs: np.ndarray, labels: np.ndarray) -> tuple:
    k1, b1, k2, b2 = params
    pre = xs @ k1 + b1
    h = np.maximum(pre, 0)
    logits = h @ k2 + b2
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(len(labels)), labels]))
    d = (p - np.eye(3)[labels]) / len(labels)
    dh = (d @ k2.T) * (pre > 0)
    return logits, loss, [xs.T @ dh, dh.sum(0), h.T @ d, d.sum(0)]


def test_eager_disabled_layers_program_matches_numpy(tmp_path):
    (line,) = _result_lines("tf1_session_layers.py", tmp_path)
    result = json.loads(line)
    assert result["names"] == [
        "dense/kernel:0",
        "dense/bias:0",
        "dense_1/kernel:0",
        "dense_1/bias:0",
    ]
    rng = np.random.default_rng(5)  # the program's data
    xs = rng.standard_normal((8, 4)).astype(np.float32).astype(np.float64)
    labels = rng.integers(0, 3, 8)
    params = [np.array(a, np.float64) for a in result["before"]]
    assert not params[1].any() and not params[3].any()  # the initializer's zero biases
    logits, loss, _ = _forward_backward(params, xs, labels)
    np.testing.assert_allclose(result["logits"], logits, rtol=1e-5, atol=1e-6)
    assert result["loss"] == pytest.approx(loss, rel=1e-5)
    state = {"t": 0}
    for _ in range(3):
        params = _adam(params, _forward_backward(params, xs, labels)[2], state)
    for got_value, expected in zip(result["after"], params, strict=True):
        np.testing.assert_allclose(got_value, expected, rtol=1e-4, atol=1e-6)


def test_ipu_program_compiled_in_a_tf1_graph_runs_from_the_session(tmp_path):
    (line,) = _result_lines("tf1_session_ipu_loop.py", tmp_path)
    got = json.loads(line)
    rng = np.random.default_rng(11)  # the program's data
    xs = rng.standard_normal((16, 3))
    ys = xs @ np.array([[0.5], [1.5], [-1.0]]) - 0.2
    w, losses = np.zeros((3, 1)), []
    for step in range(8):  # two runs of the 4-step loop over the repeated 4-batch dataset
        x, y = xs[4 * (step % 4) : 4 * (step % 4) + 4], ys[4 * (step % 4) : 4 * (step % 4) + 4]
        err = x @ w - y
        losses.append(np.mean(err**2))
        w = w - 0.1 * 2 * x.T @ err / len(x)
    np.testing.assert_allclose(got["losses"], losses, rtol=1e-5)
    np.testing.assert_allclose(got["w"], w.ravel(), rtol=1e-5)
    assert (tmp_path / "out" / "01-repeat" / "trace.json").is_file()  # simulated, with a report


# ------------------------------------------------------------------ in process: TF1's rules
def test_graph_mode_rules_and_errors():
    from ipusim.compat import ipu, tf
    from ipusim.errors import InputDataError, UnsupportedError

    tf.compat.v1.enable_eager_execution()  # whatever an earlier in-process script disabled

    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        tf.compat.v1.placeholder(tf.float32, [None, 2])
    # eager TF2 code: the initializer is a no-op and there are no collections, as in TensorFlow
    assert tf.compat.v1.global_variables_initializer().symbol is None
    assert tf.compat.v1.global_variables() == []
    first, second = tf.Graph(), tf.Graph()
    with first.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2])
        doubled = x * 2.0
        program = ipu.ipu_compiler.compile(lambda v: v + 1.0, [x])  # runs when fetched
    with (
        second.as_default(),
        tf.compat.v1.Session() as sess,
        pytest.raises(TypeError, match="not an element of this graph"),
    ):
        sess.run(doubled)
    with tf.compat.v1.Session(graph=first) as sess:
        np.testing.assert_array_equal(sess.run(doubled, {x: [[1.0, 2.0]]}), [[2.0, 4.0]])
        assert sess.run(doubled, {x: np.zeros((3, 2))}).shape == (3, 2)  # None dimension
        with pytest.raises(InputDataError, match="Cannot feed value of shape"):
            sess.run(doubled, {x: np.zeros((3, 3))})
        np.testing.assert_array_equal(sess.run(program[0], {x: [[1.0, 2.0]]}), [[2.0, 3.0]])
        with pytest.raises(InputDataError, match="must be a placeholder fed"):
            sess.run(program)
        dense = ipu.ipu_compiler.compile(lambda: doubled, [])
        with pytest.raises(TypeError, match="a tensor of another graph"):
            sess.run(dense, {x: [[1.0, 2.0]]})
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(doubled, {x: np.zeros((1, 2))})
    with pytest.raises(UnsupportedError, match="remote TensorFlow servers"):
        tf.compat.v1.Session("grpc://localhost:2222", graph=first)


def test_get_variable_follows_tf1_variable_store_rules():
    from ipusim.compat import tf

    v1 = tf.compat.v1
    v1.enable_eager_execution()
    with tf.Graph().as_default():
        with v1.variable_scope("layer"):
            w = v1.get_variable("w", [4, 6])
            c = v1.get_variable("c", [2], initializer=v1.constant_initializer(0.5))
            with pytest.raises(ValueError, match="already exists, disallowed"):
                v1.get_variable("w", [4, 6])
        with v1.variable_scope("layer", reuse=True):
            assert v1.get_variable("w") is w
            with pytest.raises(ValueError, match="does not exist"):
                v1.get_variable("missing", [1])
        with v1.variable_scope("other", reuse=v1.AUTO_REUSE):
            first = v1.get_variable("u", [1], dtype=tf.int32)
            assert v1.get_variable("u", [1], dtype=tf.int32) is first
        total = tf.reduce_sum(w) + tf.reduce_sum(c)
        with v1.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="layer/w"):
                sess.run(total)
            sess.run(v1.global_variables_initializer())
            value, w_value = sess.run([total, w])
    assert w.name == "layer/w:0" and first.name == "other/u:0"
    limit = np.sqrt(6.0 / (4 + 6))  # Glorot uniform, TF1's default for float variables
    assert np.all(np.abs(w_value) <= limit) and np.std(w_value) > 0.1 * limit
    assert value == pytest.approx(w_value.sum() + 1.0, rel=1e-6)
    assert np.asarray(first.numpy()).tolist() == [0]  # integer variables start at zero
