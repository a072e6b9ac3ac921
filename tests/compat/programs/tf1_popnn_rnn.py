"""TF1 Popnn layers in a TF1 graph, as IPU TensorFlow's graph-mode guides use them: a time-major
``PopnnLSTM`` and ``PopnnGRU`` (reset_after both ways), fetched by a ``Session``, and one
``GradientDescentOptimizer(1.0)`` step on the sum of the LSTM outputs (so the kernel moves by
minus its gradient). Prints ``RESULT`` JSON a test compares with NumPy."""

import json

import numpy as np
import tensorflow.compat.v1 as tf
from ipu_tensorflow_addons.v1.layers import PopnnGRU
from tensorflow.python.ipu import rnn_ops

rng = np.random.default_rng(4)
xs = rng.standard_normal((5, 2, 3)).astype(np.float32)  # [time, batch, input]
h0 = rng.standard_normal((2, 4)).astype(np.float32)

with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [5, None, 3])
    lstm = rnn_ops.PopnnLSTM(4, bias_initializer=tf.constant_initializer(0.2))
    outputs, state = lstm(x)
    gru = PopnnGRU(4)
    gru_outputs, gru_state = gru(x, initial_state=h0)
    gru_after = PopnnGRU(4, reset_after=True, bias_initializer=tf.constant_initializer(0.1))
    after_outputs, _ = gru_after(x)
    train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(outputs))
    fetch = {
        "lstm": [outputs, state.c, state.h, lstm.kernel, lstm.biases],
        "gru": [gru_outputs, gru_state, gru.kernel, gru.biases],
        "gru_after": [after_outputs, gru_after.kernel, gru_after.biases],
    }
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(fetch, feed_dict={x: xs})
        sess.run(train, feed_dict={x: xs})
        values["trained_kernel"] = [sess.run(lstm.kernel)]
print("RESULT", json.dumps({k: [np.asarray(a).tolist() for a in v] for k, v in values.items()}))
