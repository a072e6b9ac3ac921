"""IPU TensorFlow 2 program with 1-D, 3-D and transposed spatial layers (synthetic data).

Two models trained with IPUStrategy: a 1-D convolutional sequence classifier (Conv1D with causal
padding, MaxPooling1D, SeparableConv1D, GlobalAveragePooling1D) and a volume / image model
(Conv3D, MaxPooling3D, a reshape to images, Conv2DTranspose, UpSampling2D, Cropping2D). Each
prints its loss per epoch; the labels are a function of the inputs, so the loss falls.
"""

import numpy as np
import tensorflow as tf
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()

rng = np.random.default_rng(0)
sequences = rng.standard_normal((256, 32, 4)).astype(np.float32)
sequence_labels = (sequences[:, :16, 0].sum(axis=1) > 0).astype(np.int32)
volumes = rng.standard_normal((128, 4, 8, 8, 2)).astype(np.float32)
volume_labels = (volumes[..., 1].mean(axis=(1, 2, 3)) > 0).astype(np.int32)

strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    inputs = tf.keras.Input((32, 4))
    x = tf.keras.layers.Conv1D(8, 3, padding="causal", dilation_rate=2, activation="relu")(inputs)
    x = tf.keras.layers.MaxPooling1D(2)(x)
    x = tf.keras.layers.SeparableConv1D(8, 3, padding="same", activation="relu")(x)
    x = tf.keras.layers.GlobalAveragePooling1D()(x)
    sequence_model = tf.keras.Model(inputs, tf.keras.layers.Dense(2)(x))
    sequence_model.compile(
        optimizer=tf.keras.optimizers.Adam(0.01),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=8,
    )
    history = sequence_model.fit(sequences, sequence_labels, batch_size=16, epochs=4, verbose=0)
    print("CONV1D_LOSS", " ".join(f"{v:.4f}" for v in history.history["loss"]))

    volume_model = tf.keras.Sequential(
        [
            tf.keras.layers.Conv3D(
                4, 3, padding="same", activation="relu", input_shape=(4, 8, 8, 2)
            ),
            tf.keras.layers.MaxPooling3D((2, 2, 2)),
            tf.keras.layers.Reshape((4, 4, 8)),
            tf.keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu"),
            tf.keras.layers.UpSampling2D(interpolation="bilinear"),
            tf.keras.layers.Cropping2D(((2, 2), (2, 2))),
            tf.keras.layers.GlobalMaxPooling2D(),
            tf.keras.layers.Dense(2),
        ]
    )
    volume_model.compile(
        optimizer=tf.keras.optimizers.Adam(0.01),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=4,
    )
    history = volume_model.fit(volumes, volume_labels, batch_size=8, epochs=4, verbose=0)
    print("CONV3D_LOSS", " ".join(f"{v:.4f}" for v in history.history["loss"]))
