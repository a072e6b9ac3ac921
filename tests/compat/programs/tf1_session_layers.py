"""TF1 code under ``tf.compat.v1`` with eager execution disabled: the implicit default graph,
``tf.layers.dense`` and ``trainable_variables``, run by a ``Session`` (Adam training steps).
Prints ``RESULT`` lines a test compares with NumPy."""

import json

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

rng = np.random.default_rng(5)
xs = rng.standard_normal((8, 4)).astype(np.float32)
labels = rng.integers(0, 3, 8).astype(np.int32)

x = tf.placeholder(tf.float32, [None, 4], name="x")
y = tf.placeholder(tf.int32, [None], name="y")
hidden = tf.layers.dense(x, 5, activation=tf.nn.relu)
logits = tf.layers.dense(hidden, 3)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.train.AdamOptimizer(0.01).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    variables = tf.trainable_variables()
    before = sess.run(variables)
    first_logits, first_loss = sess.run([logits, loss], feed_dict={x: xs, y: labels})
    for _ in range(3):
        sess.run(train, feed_dict={x: xs, y: labels})
    after = sess.run(variables)
print(
    "RESULT",
    json.dumps(
        {
            "names": [v.name for v in variables],
            "before": [a.tolist() for a in before],
            "after": [a.tolist() for a in after],
            "logits": first_logits.tolist(),
            "loss": float(first_loss),
        }
    ),
)
