"""A BatchNormalization layer called eagerly updates its moving statistics when (and only
when) it is called with ``training=True``, as a tf.keras layer does outside ``fit``."""

from __future__ import annotations

import numpy as np

from ipusim import keras


def test_eager_training_calls_update_the_moving_statistics() -> None:
    # Channel values 1 and 3 (mean 2, biased variance 1); 2-D input, so no Bessel correction.
    # Momentum 0.9 from the initial (0, 1): after one call 0.9·0 + 0.1·2 = 0.2 and
    # 0.9·1 + 0.1·1 = 1; after a second call 0.9·0.2 + 0.1·2 = 0.38.
    x = np.array([[1.0], [3.0]], np.float32)
    layer = keras.layers.BatchNormalization(momentum=0.9)
    layer(x, training=True)
    mean, variance = layer.get_weights()[2:]
    np.testing.assert_allclose(mean, [0.2], rtol=1e-6)
    np.testing.assert_allclose(variance, [1.0], rtol=1e-6)
    layer(x, training=True)
    np.testing.assert_allclose(layer.get_weights()[2], [0.38], rtol=1e-6)


def test_eager_inference_calls_leave_the_moving_statistics_alone() -> None:
    x = np.array([[1.0], [3.0]], np.float32)
    layer = keras.layers.BatchNormalization(momentum=0.9)
    layer(x, training=True)
    before = [w.copy() for w in layer.get_weights()]
    y = np.asarray(layer(x))
    after = layer.get_weights()
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)
    # Inference normalises with the moving statistics: (x − 0.2) / √(1 + 0.001).
    np.testing.assert_allclose(y, (x - 0.2) / np.sqrt(1.001), rtol=1e-6)


def test_a_model_called_eagerly_in_training_updates_its_batch_norm() -> None:
    # Through a Sequential model (the way a custom training loop calls it).
    model = keras.Sequential([keras.layers.BatchNormalization(momentum=0.5, input_shape=(1,))])
    model(np.array([[2.0], [6.0]], np.float32), training=True)
    np.testing.assert_allclose(model.layers[0].get_weights()[2], [2.0], rtol=1e-6)
