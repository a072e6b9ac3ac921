"""fit(class_weight=...) as tf.keras: each sample weighted by its class's weight (class ids, or
the argmax of one-hot labels), for arrays and Datasets; Keras' key rule enforced."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import data, keras

X = np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32)
Y = np.array([0, 1, 2, 1] * 4)
CW = {0: 1.0, 1: 3.0, 2: 0.5}


def _trained(**fit_kwargs) -> np.ndarray:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(3, kernel_initializer="ones")])
    model.compile(
        keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    x = fit_kwargs.pop("x", X)
    y = fit_kwargs.pop("y", Y)
    model.fit(x, y, epochs=1, verbose=0, shuffle=False, **fit_kwargs)
    return model.get_weights()[0]


def test_class_weight_equals_the_matching_sample_weights():
    by_class = _trained(batch_size=16, class_weight=CW)
    by_sample = _trained(batch_size=16, sample_weight=np.array([CW[c] for c in Y]))
    np.testing.assert_allclose(by_class, by_sample, rtol=1e-6)
    assert not np.allclose(by_class, _trained(batch_size=16))  # the weights matter


def test_class_weight_multiplies_sample_weight_and_reads_one_hot_labels():
    sw = np.linspace(0.5, 2.0, 16)
    both = _trained(batch_size=16, class_weight=CW, sample_weight=sw)
    manual = _trained(batch_size=16, sample_weight=sw * np.array([CW[c] for c in Y]))
    np.testing.assert_allclose(both, manual, rtol=1e-6)


def test_class_weight_on_a_dataset():
    ds = data.Dataset.from_tensor_slices((X, Y)).batch(8, drop_remainder=True)
    by_class = _trained(x=ds, y=None, class_weight=CW)
    by_sample = _trained(batch_size=8, sample_weight=np.array([CW[c] for c in Y]))
    np.testing.assert_allclose(by_class, by_sample, rtol=1e-6)


def test_class_weight_keys_must_be_0_to_n_minus_1():
    with pytest.raises(ValueError, match="keys from 0 to one less"):
        _trained(batch_size=16, class_weight={1: 1.0, 2: 2.0})
    with pytest.raises(ValueError, match="classes 0..1"):
        _trained(batch_size=16, class_weight={0: 1.0, 1: 2.0})
