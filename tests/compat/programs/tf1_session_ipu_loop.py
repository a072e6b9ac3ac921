"""A TF1-style IPU program as IPU TensorFlow's graph-mode guides write it: an infeed, an on-device
``loops.repeat`` training loop compiled with ``ipu_compiler.compile`` in an ``ipu_scope``, an
outfeed of the losses, and a ``Session`` that initialises the variables and runs the program
twice. Prints ``RESULT`` lines a test compares with NumPy."""

import json

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops, scopes

tf.disable_v2_behavior()

rng = np.random.default_rng(11)
xs = rng.standard_normal((16, 3)).astype(np.float32)
ys = (xs @ np.array([[0.5], [1.5], [-1.0]], np.float32) - 0.2).astype(np.float32)

dataset = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(4, drop_remainder=True).repeat()
infeed = ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
w = tf.Variable(np.zeros((3, 1), np.float32), name="w")
optimizer = tf.train.GradientDescentOptimizer(0.1)


def body(x, y):
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    train = optimizer.minimize(loss)
    return outfeed.enqueue(loss), train


def my_net():
    return loops.repeat(4, body, [], infeed)


with scopes.ipu_scope("/device:IPU:0"):
    run_loop = ipu_compiler.compile(my_net, inputs=[])
dequeue = outfeed.dequeue()

config = ipu.config.IPUConfig()
config.auto_select_ipus = 1
config.configure_ipu_system()

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(infeed.initializer)
    losses = []
    for _ in range(2):
        sess.run(run_loop)
        losses.extend(float(v) for v in sess.run(dequeue))
    print("RESULT", json.dumps({"losses": losses, "w": sess.run(w).ravel().tolist()}))
