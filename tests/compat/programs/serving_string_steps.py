"""Serving exports whose pre- and post-processing steps run on the host and take strings.

As IPU TensorFlow 2's serving guide writes them: ``export_single_step`` of a doubling function
fed by a preprocessing step that turns words into numbers (``tf.string`` inputs, compared with
``==`` and measured with ``tf.strings.length``), and a Keras model exported with
``export_for_ipu_serving`` whose preprocessing parses numbers from strings.
"""

import os
import sys

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import serving

folder = sys.argv[1] if len(sys.argv) > 1 else "string_exports"
config = ipu.config.IPUConfig()
config.auto_select_ipus = 1
config.configure_ipu_system()


@tf.function
def preprocessing_step(words):
    # "ipu" counts 100; any other word counts its length in bytes.
    def to_number(w):
        return tf.constant(100.0) if w == "ipu" else tf.cast(tf.strings.length(w), tf.float32)

    return tf.stack([to_number(w) for w in tf.unstack(words)])


@tf.function
def predict_step(x):
    return x * 2


@tf.function
def postprocessing_step(y):
    return y + 1


runtime = serving.export_single_step(
    predict_step,
    os.path.join(folder, "single"),
    iterations=4,
    predict_step_signature=(tf.TensorSpec(shape=(5,), dtype=np.float32),),
    preprocessing_step=preprocessing_step,
    preprocessing_step_signature=(tf.TensorSpec(shape=(5,), dtype=tf.string),),
    postprocessing_step=postprocessing_step,
    postprocessing_step_signature=(tf.TensorSpec(shape=(5,), dtype=np.float32),),
)
strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    words = tf.constant(["ipu", "graph", "", "core", "ipu"], dtype=tf.string)
    print("SINGLE", " ".join(str(v) for v in np.asarray(runtime(words))))

signature = (tf.TensorSpec(shape=(2, 3), dtype=tf.string),)


@tf.function(input_signature=signature)
def parse(texts):
    return tf.strings.to_number(tf.strings.strip(texts))


@tf.function(input_signature=(tf.TensorSpec(shape=(2, 1), dtype=tf.float32),))
def rounded(y):
    return tf.round(y * 100) / 100


with strategy.scope():
    inputs = keras.layers.Input(shape=(3,), batch_size=2)
    outputs = keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")(inputs)
    model = keras.Model(inputs, outputs)
    model.compile(steps_per_execution=2)
keras_runtime = model.export_for_ipu_serving(
    os.path.join(folder, "keras"), preprocessing_step=parse, postprocessing_step=rounded
)
texts = tf.constant([[" 1.5", "2", "0.25 "], ["-1", "3.125", "4"]], dtype=tf.string)
print("KERAS", " ".join(str(v) for v in np.asarray(keras_runtime(texts)).ravel()))
