"""Recurrent layers and their ops against slow float64 references (tests/naive_rnn.py) and finite
differences (tests/gradcheck.py); arguments, errors and config round trips."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import rnn as rnn_ops

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gradcheck  # noqa: E402
import naive_rnn  # noqa: E402

BATCH, STEPS, FEATURES, UNITS = 3, 5, 4, 3
RNG = np.random.default_rng(7)
X = RNG.standard_normal((BATCH, STEPS, FEATURES)).astype(np.float32)


def _weights(layer) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    weights = [rng.uniform(-0.6, 0.6, w.shape).astype(np.float32) for w in layer.weights]
    layer.set_weights(weights)
    return weights


ACTS = [("tanh", "sigmoid"), ("relu", "hard_sigmoid"), ("sigmoid", "tanh"), ("linear", "sigmoid")]


@pytest.mark.parametrize("activation, recurrent_activation", ACTS)
@pytest.mark.parametrize("go_backwards", [False, True])
def test_lstm_matches_the_reference(activation, recurrent_activation, go_backwards):
    layer = keras.layers.LSTM(
        UNITS,
        activation=activation,
        recurrent_activation=recurrent_activation,
        return_sequences=True,
        return_state=True,
        go_backwards=go_backwards,
    )
    layer(X)
    w = _weights(layer)
    seq, h, c = layer(X)
    want = naive_rnn.lstm(X, *w, activation, recurrent_activation, go_backwards=go_backwards)
    for got, ref in zip((seq, h, c), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-6)


ACTS_COMPOSED = [("swish", "sigmoid"), ("tanh", "softplus")]


@pytest.mark.parametrize("activation, recurrent_activation", ACTS_COMPOSED)
def test_activations_outside_the_fused_kernels_build_the_gates_from_ops(
    activation, recurrent_activation
):
    kwargs = {"activation": activation, "recurrent_activation": recurrent_activation}
    lstm = keras.layers.LSTM(UNITS, return_sequences=True, **kwargs)
    gru = keras.layers.GRU(UNITS, return_sequences=True, **kwargs)
    lstm(X), gru(X)
    assert lstm._act_name is None and gru._act_name is None  # not the fused kernels
    want, _, _ = naive_rnn.lstm(X, *_weights(lstm), activation, recurrent_activation)
    np.testing.assert_allclose(lstm(X), want, rtol=2e-5, atol=2e-6)
    want, _ = naive_rnn.gru(X, *_weights(gru), activation, recurrent_activation)
    np.testing.assert_allclose(gru(X), want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("activation, recurrent_activation", ACTS)
@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_matches_the_reference(activation, recurrent_activation, reset_after):
    layer = keras.layers.GRU(
        UNITS,
        activation=activation,
        recurrent_activation=recurrent_activation,
        reset_after=reset_after,
        return_sequences=True,
    )
    layer(X)
    w = _weights(layer)
    want, _ = naive_rnn.gru(X, *w, activation, recurrent_activation, reset_after)
    np.testing.assert_allclose(layer(X), want, rtol=2e-5, atol=2e-6)


def test_simple_rnn_with_initial_state_matches_the_reference():
    layer = keras.layers.SimpleRNN(UNITS, activation="relu", return_sequences=True)
    h0 = RNG.standard_normal((BATCH, UNITS)).astype(np.float32)
    graph_h0 = keras.Input((UNITS,), batch_size=BATCH)
    inputs = keras.Input((STEPS, FEATURES), batch_size=BATCH)
    model = keras.Model([inputs, graph_h0], layer(inputs, initial_state=[graph_h0]))
    w = _weights(layer)
    want, _ = naive_rnn.simple_rnn(X, *w, "relu", h0=h0)
    np.testing.assert_allclose(model.predict([X, h0], verbose=0), want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("activation", ["tanh", "relu", "hard_sigmoid"])
def test_lstm_cell_gradients_match_finite_differences(activation):
    rng = np.random.default_rng(3)
    z = rng.standard_normal((2, 4 * UNITS))
    c_prev = rng.standard_normal((2, UNITS))
    for output in (0, 1):
        gradcheck.check_gradients(
            lambda a, b: rnn_ops.lstm_cell(
                a, b, activation=activation, recurrent_activation="sigmoid"
            ),
            z,
            c_prev,
            output_index=output,
        )


@pytest.mark.parametrize("recurrent_activation", ["sigmoid", "hard_sigmoid", "tanh"])
def test_gru_cell_gradients_match_finite_differences(recurrent_activation):
    rng = np.random.default_rng(4)
    xg, hg = rng.standard_normal((2, 3 * UNITS)), rng.standard_normal((2, 3 * UNITS))
    h_prev = rng.standard_normal((2, UNITS))
    gradcheck.check_gradients(
        lambda a, b, c: rnn_ops.gru_cell(
            a, b, c, activation="tanh", recurrent_activation=recurrent_activation
        ),
        xg,
        hg,
        h_prev,
    )


def test_unstack_and_stack_over_time_and_their_gradients():
    x = np.random.default_rng(5).standard_normal((2, 4, 3))
    steps = gradcheck.run_op(lambda a: rnn_ops.unstack_time(a, 1), x)
    assert len(steps) == 4 and all(np.array_equal(s, x[:, t]) for t, s in enumerate(steps))
    reversed_ = gradcheck.run_op(
        lambda a: rnn_ops.stack_time(rnn_ops.unstack_time(a, 1)[::-1], 1), x
    )
    np.testing.assert_array_equal(reversed_, x[:, ::-1])
    gradcheck.check_gradients(lambda a: rnn_ops.stack_time(rnn_ops.unstack_time(a, 1)[::-1], 0), x)
    # Steps nobody reads get a zero gradient.
    gradcheck.check_gradients(lambda a: rnn_ops.unstack_time(a, 0)[1], x)


def test_time_major_equals_batch_major():
    kwargs = {"return_sequences": True}
    batch_major = keras.layers.GRU(UNITS, **kwargs)
    time_major = keras.layers.GRU(UNITS, time_major=True, **kwargs)
    batch_major(X)
    time_major(np.swapaxes(X, 0, 1))
    time_major.set_weights(_weights(batch_major))
    np.testing.assert_allclose(
        time_major(np.swapaxes(X, 0, 1)), np.swapaxes(batch_major(X), 0, 1), rtol=1e-6
    )


def test_lstm_defaults_are_keras():
    layer = keras.layers.LSTM(UNITS)
    layer(X)
    kernel, recurrent, bias = layer.get_weights()
    assert kernel.shape == (FEATURES, 4 * UNITS) and recurrent.shape == (UNITS, 4 * UNITS)
    np.testing.assert_array_equal(bias, np.r_[np.zeros(UNITS), np.ones(UNITS), np.zeros(2 * UNITS)])
    # Orthogonal recurrent initialiser: U·Uᵀ = I for a wide (units, 4·units) matrix.
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(UNITS), atol=1e-5)
    gru = keras.layers.GRU(UNITS)
    gru(X)
    assert gru.bias.shape == (2, 3 * UNITS) and gru.reset_after


@pytest.mark.parametrize(
    "make",
    [
        lambda: keras.layers.SimpleRNN(UNITS, return_state=True, go_backwards=True),
        lambda: keras.layers.LSTM(
            UNITS, recurrent_activation="hard_sigmoid", unit_forget_bias=False
        ),
        lambda: keras.layers.GRU(UNITS, reset_after=False, time_major=True),
        lambda: keras.layers.Bidirectional(keras.layers.LSTM(UNITS), merge_mode="sum"),
        lambda: keras.layers.Bidirectional(
            keras.layers.LSTM(UNITS, return_sequences=True),
            backward_layer=keras.layers.GRU(2, return_sequences=True, go_backwards=True),
        ),
        lambda: keras.layers.PopnnLSTM(UNITS, dropout=0.25, dropout_seed=[1, 2]),
        lambda: keras.layers.PopnnGRU(UNITS, reset_after=False, stateful=True),
        lambda: keras.layers.RNN(keras.layers.LSTMCell(UNITS), return_state=True),
        lambda: keras.layers.RNN([keras.layers.LSTMCell(UNITS), keras.layers.SimpleRNNCell(2)]),
        lambda: keras.layers.RNN(keras.layers.GRUCell(UNITS, reset_after=False), time_major=True),
    ],
)
def test_config_round_trip(make):
    layer = make()
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config


def test_saved_model_with_recurrent_layers_predicts_the_same(tmp_path):
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((STEPS, FEATURES)),
            keras.layers.Bidirectional(keras.layers.GRU(UNITS, return_sequences=True)),
            keras.layers.PopnnLSTM(UNITS),
            keras.layers.Dense(2),
        ]
    )
    path = tmp_path / "rnn.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def test_unsupported_arguments_raise_ipusims_errors():
    with pytest.raises(UnsupportedError, match="stateful"):
        keras.layers.RNN(keras.layers.LSTMCell(UNITS), stateful=True)
    with pytest.raises(ConfigurationError, match="batch size"):
        keras.Sequential([keras.Input((STEPS, FEATURES)), keras.layers.LSTM(UNITS, stateful=True)])
    with pytest.raises(AttributeError, match="stateful"):
        keras.layers.GRU(UNITS).reset_states()
    with pytest.raises(ConfigurationError, match="3-D|shape"):
        keras.layers.LSTM(UNITS)(np.zeros((2, 4), np.float32))
    with pytest.raises(ConfigurationError, match="merge_mode"):
        keras.layers.Bidirectional(keras.layers.LSTM(UNITS), merge_mode="max")
    with pytest.raises(ConfigurationError, match="go_backwards"):
        keras.layers.Bidirectional(keras.layers.LSTM(UNITS), backward_layer=keras.layers.LSTM(2))


def test_popnn_layers_check_their_arguments_as_ipu_tensorflow_does():
    for kwargs in ({"use_bias": False}, {"go_backwards": True}, {"recurrent_dropout": 0.2}):
        with pytest.raises(ValueError, match="IPU custom"):
            keras.layers.PopnnLSTM(UNITS, **kwargs)
    with pytest.raises(ValueError, match="relu"):
        keras.layers.PopnnGRU(UNITS, recurrent_activation="relu")
    with pytest.warns(UserWarning, match="partials_dtype"):
        keras.layers.PopnnLSTM(UNITS, partials_dtype="float16")
    with pytest.raises(ValueError, match="available_memory_proportion_fwd"):
        keras.layers.PopnnLSTM(UNITS, available_memory_proportion_fwd=1.5)


def test_popnn_lstm_is_keras_lstm_with_the_same_weights():
    popnn, plain = keras.layers.PopnnLSTM(UNITS), keras.layers.LSTM(UNITS)
    popnn(X), plain(X)
    plain.set_weights(_weights(popnn))
    assert [w.name.split("/")[-1] for w in popnn.weights] == [
        "kernel:0",
        "recurrent_kernel:0",
        "biases:0",
    ]
    # Popnn multiplies [x_t, h] by the stacked kernels at each step: the same sums, in
    # another order.
    np.testing.assert_allclose(popnn(X), plain(X), rtol=1e-6, atol=1e-7)
    gru_popnn, gru_plain = keras.layers.PopnnGRU(UNITS), keras.layers.GRU(UNITS)
    gru_popnn(X), gru_plain(X)
    gru_plain.set_weights(_weights(gru_popnn))
    np.testing.assert_allclose(gru_popnn(X), gru_plain(X), rtol=1e-6, atol=1e-7)


def test_popnn_dropout_drops_input_features_with_one_mask_for_the_sequence():
    layer = keras.layers.PopnnGRU(UNITS, dropout=0.5, return_sequences=True)
    ones = np.ones((BATCH, STEPS, FEATURES), np.float32)
    layer(ones)
    dropped = layer._input_dropout(keras.Input((STEPS, FEATURES)), True)
    assert dropped is not None
    graph_out = gradcheck.run_op(lambda a: layer._input_dropout(a, True), ones, training=True)
    kept = graph_out != 0
    assert kept.any() and not kept.all()
    assert (kept == kept[:, :1]).all()  # the same features dropped at every time step
    np.testing.assert_allclose(graph_out[kept], 2.0)


class MinimalRNNCell(keras.layers.AbstractRNNCell):
    """The user-defined cell of the Keras RNN guide: ``h = x·K + h_prev·U``."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units))
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, self.units))
        self.built = True

    def call(self, inputs, states):
        from ipusim.graph.ops import math as m
        from ipusim.graph.ops import nn

        h = m.add(nn.matmul(inputs, self.kernel), nn.matmul(states[0], self.recurrent_kernel))
        return h, [h]


def test_rnn_loops_a_user_defined_cell():
    layer = keras.layers.RNN(MinimalRNNCell(UNITS), return_sequences=True)
    layer(X)
    kernel, recurrent = _weights(layer)
    want, _ = naive_rnn.simple_rnn(X, kernel, recurrent, None, "linear")
    np.testing.assert_allclose(layer(X), want, rtol=2e-5, atol=2e-6)


def _masks(rate: float, seed: int, like: np.ndarray, noise) -> np.ndarray:
    """The dropout mask ipusim's dropout op draws for (seed, execution step 0), with its scale."""
    from ipusim.graph.ops import random as random_ops

    ones = np.ones_like(like)
    return gradcheck.run_op(
        lambda a: random_ops.dropout(a, rate, seed, noise), ones, training=True, step=0
    )


def test_lstm_dropout_masks_are_keras_per_gate_masks_shared_over_time():
    layer = keras.layers.LSTM(UNITS, dropout=0.4, recurrent_dropout=0.3, return_sequences=True)
    layer.build((BATCH, STEPS, FEATURES))
    w = _weights(layer)
    y = layer(X, training=True)  # the layer's first execution: step 0
    seed = layer._mask_seed
    x_masks = [_masks(0.4, seed + g, X, (None, 1, FEATURES)) for g in range(4)]
    h_masks = [
        _masks(0.3, seed + 16 + g, np.zeros((BATCH, UNITS), np.float32), None) for g in range(4)
    ]
    assert all((m[:, :1] == m).all() for m in x_masks)  # one mask for the whole sequence
    assert not np.array_equal(x_masks[0], x_masks[1])  # a different mask per gate
    want, _, _ = naive_rnn.lstm(X, *w, x_masks=x_masks, h_masks=h_masks)
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-6)
    # Inference ignores dropout.
    want, _, _ = naive_rnn.lstm(X, *w)
    np.testing.assert_allclose(layer(X, training=False), want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("layer_cls", ["SimpleRNN", "GRU"])
@pytest.mark.parametrize("reset_after", [True, False])
def test_dropout_trains_and_is_off_in_inference(layer_cls, reset_after):
    kwargs = {"reset_after": reset_after} if layer_cls == "GRU" else {}
    layer = getattr(keras.layers, layer_cls)(
        UNITS, dropout=0.3, recurrent_dropout=0.3, return_sequences=True, **kwargs
    )
    plain = getattr(keras.layers, layer_cls)(UNITS, return_sequences=True, **kwargs)
    layer(X), plain(X)
    plain.set_weights(_weights(layer))
    np.testing.assert_array_equal(layer(X, training=False), plain(X))
    assert not np.allclose(layer(X, training=True), plain(X))


def test_mixed_float16_computes_in_half_close_to_float32():
    plain = keras.layers.LSTM(UNITS, return_sequences=True)
    plain(X)
    weights = _weights(plain)
    half = keras.layers.LSTM(UNITS, return_sequences=True, dtype="mixed_float16")
    half(X)
    half.set_weights(weights)
    y = half(X)
    assert y.dtype == np.float16 and half.kernel.dtype == "float32"
    np.testing.assert_allclose(y.astype(np.float32), plain(X), atol=3e-3)


def test_functional_initial_state_from_other_layers_saves_and_loads(tmp_path):
    """The state tensors reach the layer only by keyword (``initial_state``): the model must
    still find the layers that make them, replay them, and save them."""
    keras.utils.set_random_seed(2)
    inputs = keras.Input((STEPS, FEATURES))
    context = keras.Input((2,))
    h0 = keras.layers.Dense(UNITS, name="h0")(context)
    c0 = keras.layers.Dense(UNITS, name="c0")(context)
    h0, c0 = keras.layers.RecomputationCheckpoint()([h0, c0])
    out = keras.layers.LSTM(UNITS)(inputs, initial_state=[h0, c0])
    model = keras.Model([inputs, context], out)
    assert {layer.name for layer in model.layers} >= {"h0", "c0"}
    ctx = RNG.standard_normal((BATCH, 2)).astype(np.float32)
    lstm = next(layer for layer in model.layers if isinstance(layer, keras.layers.LSTM))
    h_init = ctx @ model.get_layer("h0").kernel.value + model.get_layer("h0").bias.value
    c_init = ctx @ model.get_layer("c0").kernel.value + model.get_layer("c0").bias.value
    _, want, _ = naive_rnn.lstm(X, *lstm.get_weights(), h0=h_init, c0=c_init)
    got = model.predict([X, ctx], verbose=0)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    path = tmp_path / "state.keras"
    model.save(path)
    np.testing.assert_array_equal(keras.models.load_model(path).predict([X, ctx], verbose=0), got)


def test_lstm_cell_dropout_in_rnn_matches_the_reference_with_the_same_masks():
    cell = keras.layers.LSTMCell(UNITS, dropout=0.4, recurrent_dropout=0.3)
    layer = keras.layers.RNN(cell, return_sequences=True)
    layer.build((BATCH, STEPS, FEATURES))
    w = _weights(layer)
    y = layer(X, training=True)  # the layer's first execution: step 0
    seed, step_x = cell._mask_seed, X[:, 0]
    x_masks = [
        np.repeat(_masks(0.4, seed + g, step_x, None)[:, None], STEPS, axis=1) for g in range(4)
    ]
    h_masks = [
        _masks(0.3, seed + 16 + g, np.zeros((BATCH, UNITS), np.float32), None) for g in range(4)
    ]
    want, _, _ = naive_rnn.lstm(X, *w, x_masks=x_masks, h_masks=h_masks)
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-6)
    want, _, _ = naive_rnn.lstm(X, *w)
    np.testing.assert_allclose(layer(X, training=False), want, rtol=2e-5, atol=2e-6)


def test_recurrent_model_exports_for_serving_and_serves_as_it_predicts(tmp_path):
    import ipusim
    from ipusim import serving

    ipusim.config.reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    keras.utils.set_random_seed(0)
    with ipusim.IPUStrategy().scope():
        inputs = keras.Input((STEPS, FEATURES))
        x = keras.layers.Bidirectional(keras.layers.GRU(UNITS, return_sequences=True))(inputs)
        x = keras.layers.PopnnLSTM(UNITS)(x)
        model = keras.Model(inputs, keras.layers.Dense(2)(x))
        model.compile(steps_per_execution=2)
    data = np.concatenate([X, X[::-1]])
    expected = model.predict(data, batch_size=BATCH)
    model.export_for_ipu_serving(str(tmp_path / "rnn"), batch_size=BATCH)
    loaded = serving.load(tmp_path / "rnn")
    got = np.concatenate([loaded(data[i : i + BATCH]) for i in range(0, len(data), BATCH)])
    np.testing.assert_array_equal(got, expected)
    ipusim.config.reset_ipu_configuration()


def test_positional_arguments_follow_keras_order():
    simple = keras.layers.SimpleRNN(UNITS, "relu", False)
    assert simple.use_bias is False and simple.activation is keras.activations.relu
    lstm = keras.layers.LSTM(UNITS, "tanh", "hard_sigmoid", True, "zeros", "zeros", "zeros", False)
    assert lstm.unit_forget_bias is False and lstm._rec_name == "hard_sigmoid"
