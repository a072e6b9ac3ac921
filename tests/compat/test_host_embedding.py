"""Host embeddings (``ipu.embedding_ops.create_host_embedding``) under ``ipusim run``.

tests/compat/programs/host_embedding_training.py trains a regression on a table kept on the host
(SGD optimizer spec, learning rate 0.5) and a weight vector (Keras SGD, 0.1) for three steps.
The numbers are checked against a NumPy replay of IPU TensorFlow's semantics (clipped lookups;
the host adds ``-lr * grad`` row by row, repeated ids adding up), and the host traffic of each
step against a hand count: per lookup the int32 ids go to the host and the float32 rows come
back, per update the ids and the scaled gradient rows go to the host, each a stream copy priced
at the system's host link (bandwidth, latency, stream-copy sync) plus the host's row copies.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ipusim.compat import keras
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration
from ipusim.hardware.loader import load_system
from ipusim.trace.report import Report

SCRIPT = Path(__file__).resolve().parent / "programs" / "host_embedding_training.py"
TOKENS, WIDTH, BATCH, STEPS = 20, 16, 8, 3
TABLE_LR, W_LR = 0.5, 0.1


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


def _reference() -> tuple[list[float], np.ndarray, np.ndarray]:
    """The program's run in NumPy (float64), from the same draws."""
    rng = np.random.default_rng(7)
    table = rng.uniform(-1, 1, (TOKENS, WIDTH)).astype(np.float32).astype(np.float64)
    ids = rng.integers(0, TOKENS + 3, (STEPS, BATCH)).astype(np.int32)
    ids[:, 1] = ids[:, 0]
    targets = rng.normal(size=(STEPS, BATCH)).astype(np.float32)
    w = np.full(WIDTH, 0.25)
    losses = []
    for step in range(STEPS):
        idx = np.clip(ids[step], 0, TOKENS - 1)
        rows = table[idx]
        error = rows @ w - targets[step]
        losses.append(float(np.mean(error**2)))
        d_pred = 2 * error / BATCH
        d_rows, d_w = np.outer(d_pred, w), rows.T @ d_pred
        np.add.at(table, idx, -TABLE_LR * d_rows)
        w = w - W_LR * d_w
    return losses, table, w


def _printed(out: str, key: str) -> np.ndarray:
    line = next(line for line in out.splitlines() if line.startswith(key + " "))
    return np.array([float(v) for v in line.split()[1:]])


def _copy_ps(num_bytes: int, bandwidth: float, host) -> int:
    """One stream copy by hand: the bytes, the link latency and the sync that starts it."""
    transfer = math.ceil(num_bytes * 1e12 / bandwidth)
    return transfer + round(host.latency_s * 1e12) + round(host.stream_copy_overhead_s * 1e12)


def test_host_embedding_trains_on_the_host_and_pays_the_host_link(tmp_path, capsys) -> None:
    result = run_script(SCRIPT, output=tmp_path / "r", quiet=True)
    assert result.exit_code == 0
    out = capsys.readouterr().out
    losses, table, w = _reference()
    np.testing.assert_allclose(_printed(out, "LOSSES"), losses, rtol=1e-5)
    np.testing.assert_allclose(_printed(out, "TABLE"), table.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_printed(out, "W"), w, rtol=1e-5)

    report = Report.load(result.reports[0])
    host = load_system(report.system_name).host
    frame = report.trace.to_dataframe()
    ids_bytes, rows_bytes = BATCH * 4, BATCH * WIDTH * 4  # int32 ids, float32 rows
    h2d = min(host.h2d_bandwidth_bytes_per_s, host.stream_bandwidth_bytes_per_s)
    d2h = min(host.d2h_bandwidth_bytes_per_s, host.stream_bandwidth_bytes_per_s)
    # The host copies every row once: 0.81 ns per byte on the calibration host (M).
    host_ps = round(rows_bytes * 0.81e-9 * host.cpu_compute_scale * 1e12)
    expected = {
        "host_embedding_lookup": _copy_ps(ids_bytes, d2h, host) + _copy_ps(rows_bytes, h2d, host),
        "host_embedding_update": _copy_ps(ids_bytes, d2h, host) + _copy_ps(rows_bytes, d2h, host),
    }
    for op, duration in expected.items():
        records = frame[(frame.op == op) & (frame.track == "exchange")]
        assert sorted(records.step) == list(range(STEPS)), op  # once per step
        assert (records.bytes == ids_bytes + rows_bytes).all(), op
        assert ((records.end_ps - records.start_ps) == duration + host_ps).all(), op
    assert set(frame[frame.op == "host_embedding_update"].phase) == {"bwd"}


def _setup():
    from ipusim.compat import ipu, tf
    from ipusim.compat.ipu.ops import embedding_ops

    config = ipu.config.IPUConfig()
    config.auto_select_ipus = 1
    config.configure_ipu_system()
    return tf, embedding_ops, ipu.ipu_strategy.IPUStrategy()


def test_accumulated_updates_reach_the_table_every_accumulation_factor_steps() -> None:
    tf, embedding_ops, strategy = _setup()
    initial = np.arange(12, dtype=np.float32).reshape(4, 3)
    spec = embedding_ops.HostEmbeddingSGDGAOptimizerSpec(1.0, accumulation_factor=2)
    embedding = embedding_ops.create_host_embedding(
        "ga", [4, 3], tf.float32, optimizer_spec=spec, initializer=initial
    )
    scale = np.array([1.0, 2.0, 3.0], np.float32)

    @tf.function
    def step(ids):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(embedding.lookup(ids) * scale)  # d loss / d row = scale
        variables = tape.watched_variables()
        return tape.gradient(loss, variables)

    ids = np.array([2, 2, 0], np.int32)
    with strategy.scope(), embedding.register():
        strategy.run(step, args=(ids,))
        np.testing.assert_array_equal(embedding.get_embedding_tensor().numpy(), initial)
        strategy.run(step, args=(ids,))
    expected = initial.copy()
    for _ in range(2):
        np.add.at(expected, ids, -scale)
    np.testing.assert_array_equal(embedding.get_embedding_tensor().numpy(), expected)


def test_an_embedding_without_optimizer_spec_is_not_updated() -> None:
    tf, embedding_ops, strategy = _setup()
    initial = np.ones((5, 2), np.float32)
    embedding = embedding_ops.create_host_embedding("frozen", [5, 2], tf.float32,
                                                    initializer=initial)  # fmt: skip

    @tf.function
    def step(ids):
        with tf.GradientTape() as tape:
            rows = embedding.lookup(ids)
            loss = tf.reduce_sum(rows * rows)
        return tape.gradient(loss, tape.watched_variables()), rows

    with strategy.scope(), embedding.register():
        grads, rows = strategy.run(step, args=(np.array([[0, 4], [9, 1]], np.int32),))
    assert rows.shape == (2, 2, 2)  # ids.shape + [encoding]
    assert all(g is None for g in grads)
    np.testing.assert_array_equal(embedding.get_embedding_tensor().numpy(), initial)


def test_user_errors_are_ipusim_errors_of_tensorflows_types() -> None:
    from ipusim.errors import ConfigurationError, IncompatibleStateError, UnsupportedError

    tf, embedding_ops, _ = _setup()
    embedding = embedding_ops.create_host_embedding("e", [3, 2], tf.float32)
    with pytest.raises(IncompatibleStateError, match="not registered"):
        embedding.lookup(np.array([0], np.int32))
    with pytest.raises(ConfigurationError, match="partition strategy") as info:
        embedding_ops.create_host_embedding("e", [3, 2], tf.float32, partition_strategy="ROW")
    assert isinstance(info.value, ValueError)
    with pytest.raises(ConfigurationError, match="optimizer_spec"):
        embedding_ops.HostEmbedding("e", embedding.get_embedding_tensor(), optimizer_spec=0.1)
    with pytest.raises(UnsupportedError, match="register"):
        embedding(np.array([0], np.int32))
    with pytest.raises(UnsupportedError, match="Adagrad"):
        embedding_ops.HostEmbeddingOptimizerSpec(0.1, optimizer_name="Adagrad")
    with embedding.register():  # eager lookups read the table on the host
        np.testing.assert_array_equal(embedding.lookup(np.array([[2, 7]], np.int32)),
                                      np.zeros((1, 2, 2), np.float32))  # fmt: skip


def test_replicas_look_up_the_table_before_any_replica_updates_it() -> None:
    """Two replicas in lock step: both read the step's table, then both updates are added."""
    from ipusim.compat import ipu, tf
    from ipusim.compat.ipu import loops
    from ipusim.compat.ipu.ops import embedding_ops

    config = ipu.config.IPUConfig()
    config.auto_select_ipus = 2
    config.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()
    initial = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)
    embedding = embedding_ops.create_host_embedding(
        "replicated", [6, 2], tf.float32, initializer=initial,
        optimizer_spec=embedding_ops.HostEmbeddingOptimizerSpec(0.25),
    )  # fmt: skip
    ids = np.array([[0, 1], [1, 2], [2, 3], [3, 1]], np.int32)  # replicas share ids per step
    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(tf.data.Dataset.from_tensor_slices(ids))
    sgd = ipu.optimizers.CrossReplicaOptimizer(keras.optimizers.SGD(1.0))

    def body(x):
        with tf.GradientTape() as tape:
            rows = embedding.lookup(x)
            loss = 0.5 * tf.reduce_sum(rows * rows)  # d loss / d rows = rows
        variables = tape.watched_variables()
        sgd.apply_gradients(zip(tape.gradient(loss, variables), variables))

    with strategy.scope(), embedding.register():
        strategy.run(tf.function(lambda: loops.repeat(2, body, [], infeed)))
    expected = initial.astype(np.float64)
    for step in range(2):
        old = expected.copy()
        for replica in range(2):
            idx = ids[2 * step + replica]
            np.add.at(expected, idx, -0.25 * old[idx])
    np.testing.assert_allclose(embedding.get_embedding_tensor().numpy(), expected, rtol=1e-6)
