"""Train a small regression on a host embedding, as an IPU TensorFlow 2 program would.

The table lives on the host (``embedding_ops.create_host_embedding`` with an SGD optimizer spec);
each step looks rows up, trains a weight vector with Keras SGD on the IPU and sends the rows'
gradient back for the host to apply. Prints the losses, the final table and weights.
"""

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu
from tensorflow.python.ipu import embedding_ops

TOKENS, WIDTH, BATCH, STEPS = 20, 16, 8, 3

rng = np.random.default_rng(7)
initial = rng.uniform(-1, 1, (TOKENS, WIDTH)).astype(np.float32)
ids = rng.integers(0, TOKENS + 3, (STEPS, BATCH)).astype(np.int32)  # some beyond: clipped
ids[:, 1] = ids[:, 0]  # repeated ids: their updates add up on the host
targets = rng.normal(size=(STEPS, BATCH)).astype(np.float32)

embedding = embedding_ops.create_host_embedding(
    "table",
    shape=[TOKENS, WIDTH],
    dtype=tf.float32,
    optimizer_spec=embedding_ops.HostEmbeddingOptimizerSpec(0.5),
    initializer=initial,
)
w = tf.Variable(np.full((WIDTH, 1), 0.25, np.float32), name="w")
optimizer = keras.optimizers.SGD(0.1)

config = ipu.config.IPUConfig()
config.auto_select_ipus = 1
config.configure_ipu_system()
strategy = ipu.ipu_strategy.IPUStrategy()


@tf.function
def training_step(x, y):
    with tf.GradientTape() as tape:
        rows = embedding.lookup(x)
        prediction = tf.matmul(rows, w)[:, 0]
        loss = tf.reduce_mean(tf.square(prediction - y))
    variables = tape.watched_variables()  # w and the embedding's trainable scalar
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


losses = []
with strategy.scope(), embedding.register():
    for step in range(STEPS):
        losses.append(float(strategy.run(training_step, args=(ids[step], targets[step]))))

print("LOSSES", " ".join(repr(v) for v in losses))
print("TABLE", " ".join(repr(float(v)) for v in embedding.get_embedding_tensor().numpy().ravel()))
print("W", " ".join(repr(float(v)) for v in w.numpy().ravel()))
