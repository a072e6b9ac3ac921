"""keras.layers.Lambda and symbolic-tensor indexing in Keras models: values against NumPy,
gradients through slices, saving (named functions) and the refusals Keras does not have."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import ModelFileError, UnsupportedError
from ipusim.graph.ops import reduce as gr


def double_head(t, scale=1.0):
    """A module-level function: saved by module and name."""
    return t[:, :2] * scale


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


def test_lambda_with_arguments_training_flag_and_eager_call():
    seen = []

    def fn(t, training=None):
        seen.append(training)
        return gr.reduce_sum(t, axis=-1, keepdims=True) * 2

    layer = keras.layers.Lambda(fn)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(layer(x), x.sum(-1, keepdims=True) * 2)
    assert seen[-1] is False  # an eager call is an inference call
    inp = keras.Input((3,))
    assert layer(inp).shape == (None, 1)
    scaled = keras.layers.Lambda(double_head, arguments={"scale": 3.0})
    np.testing.assert_allclose(scaled(x), x[:, :2] * 3.0)


def test_gradient_flows_only_through_the_sliced_features():
    """A Dense on x[:, :2] of a 4-feature input: the kernel sees only the first two features,
    so training on data whose label depends on features 2 and 3 only leaves it unchanged when
    the first two are zero (hand-derived: the kernel gradient is x[:, :2]^T dy = 0)."""
    inp = keras.Input((4,))
    out = keras.layers.Dense(1, kernel_initializer="ones", use_bias=False)(inp[:, :2])
    model = keras.Model(inp, out)
    model.compile(keras.optimizers.SGD(0.1), "mse")
    rng = np.random.default_rng(0)
    x = np.zeros((16, 4), np.float32)
    x[:, 2:] = rng.standard_normal((16, 2))
    model.fit(x, x[:, 2:].sum(1, keepdims=True), batch_size=16, epochs=1, verbose=0)
    np.testing.assert_array_equal(model.get_weights()[0], np.ones((2, 1), np.float32))
    x[:, :2] = 1.0  # now the sliced features carry signal: the kernel moves
    model.fit(x, np.zeros((16, 1), np.float32), batch_size=16, epochs=1, verbose=0)
    assert np.all(model.get_weights()[0] < 1.0)


def test_save_and_load_a_model_with_a_named_lambda_and_slices(tmp_path):
    inp = keras.Input((5,))
    y = keras.layers.Lambda(double_head, arguments={"scale": 2.0})(inp)
    z = keras.layers.Dense(3)(y) + inp[:, 1:2] ** 2
    model = keras.Model(inp, z)
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    before = model.predict(x, verbose=0)
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), before, rtol=1e-6)


def test_a_lambda_of_a_python_lambda_cannot_be_saved_and_says_why(tmp_path):
    inp = keras.Input((2,))
    model = keras.Model(inp, keras.layers.Lambda(lambda t: t * 2)(inp))
    with pytest.raises(UnsupportedError, match="module level"):
        model.save(tmp_path / "m.keras")


def test_a_missing_saved_function_is_a_model_file_error():
    config = keras.layers.Lambda(double_head).get_config()
    config["function"] = "no_such_function"
    with pytest.raises(ModelFileError, match="custom_objects"):
        keras.layers.Lambda.from_config(config)
    found = keras.layers.Lambda.from_config(config, custom_objects={"no_such_function": abs})
    assert found.function is abs


def test_mask_is_refused_and_function_must_be_callable():
    with pytest.raises(UnsupportedError, match="mask"):
        keras.layers.Lambda(double_head, mask=lambda i, m: m)
    with pytest.raises(TypeError, match="callable"):
        keras.layers.Lambda(3)
