"""A custom training loop with the inspecting-tensors tutorial's ``OutfeedOptimizer`` (a TF1
``Optimizer`` subclass around a Keras SGD): one step through TF1's ``minimize`` (the wrapped
optimizer's ``get_gradients``; AFTER_COMPUTE outfeeds them), one through ``apply_gradients`` with
GradientTape gradients. Prints ``RESULT`` JSON a test compares with NumPy."""

import json

import numpy as np
import tensorflow as tf
from outfeed_optimizer import OutfeedOptimizer, OutfeedOptimizerMode
from outfeed_wrapper import MaybeOutfeedQueue
from tensorflow import keras
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()
strategy = ipu.ipu_strategy.IPUStrategy()
rng = np.random.default_rng(2)
x = rng.standard_normal((4, 3)).astype(np.float32)
y = rng.standard_normal((4, 2)).astype(np.float32)
with strategy.scope():
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,), name="d")])
    queue = MaybeOutfeedQueue()
    mode = OutfeedOptimizerMode.AFTER_COMPUTE
    opt = OutfeedOptimizer(
        keras.optimizers.SGD(0.1), queue, outfeed_optimizer_mode=mode, model=model
    )
    initial = model.get_weights()

    @tf.function
    def minimize_step(x, y):
        loss = tf.reduce_mean(tf.square(model(x) - y))
        opt.minimize(loss)
        return loss

    @tf.function
    def tape_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    strategy.run(minimize_step, args=(x, y))
    outfed = {k: np.asarray(v)[0].tolist() for k, v in queue.dequeue().items()}
    after_one = model.get_weights()
    strategy.run(tape_step, args=(x, y))
    final = model.get_weights()
print(
    "RESULT",
    json.dumps(
        {
            "initial": [w.tolist() for w in initial],
            "outfed": outfed,
            "after_one": [w.tolist() for w in after_one],
            "final": [w.tolist() for w in final],
        }
    ),
)
