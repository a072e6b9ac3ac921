"""fit / evaluate / predict on a keras.utils.Sequence (TimeseriesGenerator included), as tf.keras:
one pass over its batches per epoch, on_epoch_end after each pass."""

from __future__ import annotations

import numpy as np

from ipusim import keras
from ipusim.keras.preprocessing.sequence import TimeseriesGenerator

RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 3)).astype(np.float32)
Y = X.sum(axis=1, keepdims=True)


class Batches(keras.utils.Sequence):
    def __init__(self) -> None:
        self.epochs_ended = 0

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int):
        return X[index * 8 : (index + 1) * 8], Y[index * 8 : (index + 1) * 8]

    def on_epoch_end(self) -> None:
        self.epochs_ended += 1


def _model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(1, kernel_initializer="ones")])
    model.compile(keras.optimizers.SGD(0.05), "mse")
    return model


def test_fit_on_a_sequence_equals_fit_on_its_arrays():
    seq = Batches()
    a = _model()
    history = a.fit(seq, epochs=3, verbose=0)
    b = _model()
    b.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(a.get_weights()[0], b.get_weights()[0], rtol=1e-6)
    assert len(history.history["loss"]) == 3
    assert seq.epochs_ended >= 3  # once per pass (and once while the batch spec is read)
    np.testing.assert_allclose(a.predict(Batches(), verbose=0), a.predict(X, verbose=0))
    np.testing.assert_allclose(
        a.evaluate(Batches(), verbose=0), a.evaluate(X, Y, batch_size=8, verbose=0), rtol=1e-6
    )


def test_fit_on_a_timeseries_generator():
    series = np.sin(np.arange(72, dtype=np.float32) / 4)[:, None]
    gen = TimeseriesGenerator(series, series, length=8, batch_size=16)  # 64 windows: 4 batches
    assert len(gen) == 4
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    history = model.fit(gen, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
