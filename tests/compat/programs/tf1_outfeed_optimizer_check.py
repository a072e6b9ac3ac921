"""An IPU TensorFlow 2 Keras program training with the inspecting-tensors tutorial's
``OutfeedOptimizer`` (a TF1 ``Optimizer`` subclass wrapping a Keras SGD) on fixed data and weights.

Run with ``ipusim run`` and the tutorial's folder on ``PYTHONPATH``::

    tf1_outfeed_optimizer_check.py OUT.npz MODE      # MODE: AFTER_COMPUTE or BEFORE_APPLY

Writes the outfed gradients (``keys``, then ``g0``, ``g1``, ...) and the trained weights
(``w0``..``w3``) for a test to compare with NumPy.
"""

import sys

import numpy as np
import tensorflow as tf
from outfeed_optimizer import OutfeedOptimizer, OutfeedOptimizerMode
from outfeed_wrapper import MaybeOutfeedQueue
from tensorflow import keras
from tensorflow.python import ipu

out_path, mode = sys.argv[1], OutfeedOptimizerMode[sys.argv[2]]
rng = np.random.default_rng(7)
x = rng.standard_normal((16, 6)).astype(np.float32)
y = rng.integers(0, 3, 16).astype(np.int32)
weights = [
    (rng.standard_normal((6, 5)) * 0.5).astype(np.float32),
    (rng.standard_normal(5) * 0.1).astype(np.float32),
    (rng.standard_normal((5, 3)) * 0.5).astype(np.float32),
    (rng.standard_normal(3) * 0.1).astype(np.float32),
]

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()
strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    queue = MaybeOutfeedQueue(filters=["hidden"])
    inputs = keras.layers.Input(shape=(6,), batch_size=4)
    hidden = keras.layers.Dense(5, activation="relu", name="hidden")(inputs)
    outputs = keras.layers.Dense(3, activation="softmax", name="out")(hidden)
    model = keras.Model(inputs, outputs)
    model.set_weights(weights)
    model.set_gradient_accumulation_options(
        gradient_accumulation_steps_per_replica=2, gradient_accumulation_reduction_method="sum"
    )
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(),
        optimizer=OutfeedOptimizer(
            keras.optimizers.SGD(0.1), queue, outfeed_optimizer_mode=mode, model=model
        ),
        steps_per_execution=4,
    )
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)
    model.fit(dataset.repeat(), steps_per_epoch=4, epochs=1, verbose=0)
    outfed = queue.dequeue() if queue.enqueued else {}

keys = list(outfed)
arrays = {f"g{i}": np.asarray(outfed[k]) for i, k in enumerate(keys)}
arrays.update({f"w{i}": w for i, w in enumerate(model.get_weights())})
np.savez(out_path, keys=np.array(keys), **arrays)
print("OUTFED", {k: np.asarray(v).shape for k, v in outfed.items()})
