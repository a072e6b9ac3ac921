"""An IPU TensorFlow 2 custom training loop that uses the wider TensorFlow op set: a small
attention-style regressor written with einsum, tf.nn activations, moments, gather, top_k,
logsumexp, clip_by_global_norm and tf.random inside an IPUStrategy, trained with GradientTape.

Prints ``LOSSES`` (one loss per step) and ``CHECK`` (values a test compares with NumPy)."""

import numpy as np
import tensorflow as tf
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()
tf.random.set_seed(0)

rng = np.random.default_rng(0)
x_all = rng.normal(size=(64, 6, 4)).astype(np.float32)
y_all = np.tanh(x_all.sum(axis=(1, 2)) / 4.0).astype(np.float32)[:, None]

strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    wq = tf.Variable(tf.random.truncated_normal([4, 4], stddev=0.3, seed=1), name="wq")
    wk = tf.Variable(tf.random.truncated_normal([4, 4], stddev=0.3, seed=2), name="wk")
    wo = tf.Variable(tf.random.stateless_normal([4, 1], seed=[3, 4]) * 0.3, name="wo")
    table = tf.Variable(tf.random.uniform([6, 4], -0.1, 0.1, seed=5), name="positions")
    variables = [wq, wk, wo, table]
    optimizer = tf.keras.optimizers.SGD(0.2)

    def forward(x, training):
        h = x + tf.gather(table, tf.range(6))  # position embeddings
        q = tf.nn.gelu(tf.einsum("bsd,de->bse", h, wq))
        k = tf.nn.silu(tf.einsum("bsd,de->bse", h, wk))
        scores = tf.einsum("bqd,bkd->bqk", q, k) / tf.sqrt(4.0)
        attn = tf.exp(scores - tf.math.reduce_logsumexp(scores, axis=-1, keepdims=True))
        ctx = tf.matmul(attn, h)
        mean, var = tf.nn.moments(ctx, axes=[2], keepdims=True)
        ctx = tf.nn.batch_normalization(ctx, mean, var, None, None, 1e-3)
        if training:
            ctx = tf.nn.dropout(ctx, rate=0.1)
        pooled = tf.reduce_mean(tf.math.top_k(tf.transpose(ctx, [0, 2, 1]), 2).values, axis=-1)
        return tf.tanh(tf.tensordot(pooled, wo, 1))

    @tf.function(experimental_compile=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            pred = forward(x, True)
            loss = tf.reduce_mean(tf.math.squared_difference(pred, y))
        grads = tape.gradient(loss, variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    losses = []
    for _epoch in range(3):
        for i in range(0, 64, 16):
            loss = strategy.run(train_step, args=(x_all[i : i + 16], y_all[i : i + 16]))
            losses.append(float(loss))
    print("LOSSES", " ".join(f"{v:.6f}" for v in losses))

    @tf.function(experimental_compile=True)
    def check(x):
        cs = tf.math.cumsum(x, axis=1)
        return tf.reduce_sum(tf.math.sin(cs)), tf.math.argmin(
            tf.reshape(x, [-1]), output_type=tf.int32
        )

    value, where = strategy.run(check, args=(x_all[:2],))
    print("CHECK", float(value), int(where))
