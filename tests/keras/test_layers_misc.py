"""The layers of issue 22 beyond the parity fixtures: config round trips, output shapes, saved
models that load with identical predictions, and the errors users get."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import ConfigurationError, UnsupportedError

L = keras.layers


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


# (layer factory, input shape(s) including the batch, output shape Keras gives)
SHAPES = [
    (lambda: L.LeakyReLU(0.2), (2, 3), (2, 3)),
    (lambda: L.PReLU(shared_axes=[1]), (2, 3, 4), (2, 3, 4)),
    (lambda: L.ELU(0.5), (2, 3), (2, 3)),
    (lambda: L.ThresholdedReLU(0.5), (2, 3), (2, 3)),
    (lambda: L.GaussianNoise(0.1, seed=1), (2, 3), (2, 3)),
    (lambda: L.GaussianDropout(0.1), (2, 3), (2, 3)),
    (lambda: L.AlphaDropout(0.1, seed=3), (2, 3), (2, 3)),
    (lambda: L.SpatialDropout1D(0.1), (2, 3, 4), (2, 3, 4)),
    (lambda: L.SpatialDropout2D(0.1, data_format="channels_first"), (2, 3, 4, 5), (2, 3, 4, 5)),
    (lambda: L.SpatialDropout3D(0.1), (2, 3, 4, 5, 6), (2, 3, 4, 5, 6)),
    (lambda: L.ActivityRegularization(), (2, 3), (2, 3)),
    (lambda: L.Masking(-1.0), (2, 3, 4), (2, 3, 4)),
    (lambda: L.Permute((3, 1, 2)), (2, 3, 4, 5), (2, 5, 3, 4)),
    (lambda: L.RepeatVector(4), (2, 3), (2, 4, 3)),
    (lambda: L.Identity(), (2, 3), (2, 3)),
    (lambda: L.UnitNormalization(axis=[1, 2]), (2, 3, 4), (2, 3, 4)),
    (lambda: L.GroupNormalization(groups=2, epsilon=1e-4), (2, 3, 4), (2, 3, 4)),
    (lambda: L.EinsumDense("abc,cde->abde", (None, 2, 5), bias_axes="de"), (2, 3, 4), (2, 3, 2, 5)),
    (lambda: L.EinsumDense("...b,bc->...c", 7, activation="relu"), (2, 3, 4), (2, 3, 7)),
    (lambda: L.Dot(axes=(2, 2), normalize=True), [(2, 3, 4), (2, 5, 4)], (2, 3, 5)),
    (lambda: L.Attention(use_scale=True, score_mode="concat"), [(2, 3, 4), (2, 5, 4)], (2, 3, 4)),
    (lambda: L.AdditiveAttention(use_scale=False, dropout=0.1), [(2, 3, 4), (2, 5, 4)], (2, 3, 4)),
    (lambda: L.TimeDistributed(L.Dense(3)), (2, 4, 5), (2, 4, 3)),
    (lambda: L.Resizing(4, 6, "nearest", crop_to_aspect_ratio=True), (2, 5, 7, 3), (2, 4, 6, 3)),
    (lambda: L.CenterCrop(3, 4), (2, 5, 7, 3), (2, 3, 4, 3)),
    (lambda: L.RandomFlip("vertical", seed=3), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.RandomCrop(3, 4, seed=3), (2, 5, 7, 3), (2, 3, 4, 3)),
    (lambda: L.RandomContrast(0.2), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.RandomBrightness((-0.1, 0.2), value_range=(0, 1)), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.RandomRotation(0.1, fill_mode="constant"), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.RandomTranslation(0.1, 0.2), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.RandomZoom(0.1, seed=4), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.RandomHeight(0.1), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.RandomWidth(0.1), (2, 5, 7, 3), (2, 5, 7, 3)),
    (lambda: L.CategoryEncoding(6, output_mode="count"), (2, 3), (2, 6)),
    (lambda: L.Discretization(bin_boundaries=[0.0, 1.0], output_mode="one_hot"), (4,), (4, 3)),
    (lambda: L.IntegerLookup(vocabulary=[5, 3, 8], mask_token=0), (2, 3), (2, 3)),
    (lambda: L.Hashing(5, mask_value=0, output_mode="multi_hot"), (2, 3), (2, 5)),
    (lambda: L.LocallyConnected1D(4, 3, strides=2), (2, 9, 3), (2, 4, 4)),
    (lambda: L.ConvLSTM2D(4, 3, padding="same"), (2, 3, 5, 6, 2), (2, 5, 6, 4)),
    (lambda: L.ConvLSTM1D(4, 2, return_sequences=True), (2, 3, 5, 2), (2, 3, 4, 4)),
    (lambda: L.ConvLSTM3D(2, 2), (2, 3, 3, 4, 5, 1), (2, 2, 3, 4, 2)),
    (lambda: L.LocallyConnected2D(4, (2, 3), activation="relu"), (2, 5, 6, 3), (2, 4, 4, 4)),
]


def _ids() -> list[str]:
    return [f"{i}" for i in range(len(SHAPES))]


@pytest.mark.parametrize(("make", "shape", "expected"), SHAPES, ids=_ids())
def test_output_shape_and_config_round_trip(make, shape, expected):
    layer = make()
    assert tuple(layer.compute_output_shape(shape)) == expected
    config = layer.get_config()
    json.dumps(config)  # a model file stores it as JSON
    clone = type(layer).from_config(config)
    assert clone.get_config() == config


def test_multi_head_attention_config_round_trip_and_output_shape():
    layer = L.MultiHeadAttention(3, 4, value_dim=5, output_shape=7, use_bias=False)
    x = np.zeros((2, 6, 8), np.float32)
    assert layer(x, x).shape == (2, 6, 7)
    assert layer.compute_output_shape((None, 6, 8), (None, 9, 8)) == (None, 6, 7)
    clone = L.MultiHeadAttention.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    y, scores = clone(x, x, return_attention_scores=True)
    assert y.shape == (2, 6, 7) and scores.shape == (2, 3, 6, 6)
    np.testing.assert_allclose(scores.sum(axis=-1), 1.0, rtol=1e-6)


def _sequence_model() -> keras.Model:
    inputs = keras.Input((6, 8))
    h = L.MultiHeadAttention(2, 4)(inputs, inputs)
    h = L.LeakyReLU(0.1)(h)
    h = L.PReLU(shared_axes=[1])(h)
    h = L.GroupNormalization(groups=4)(h)
    h = L.ELU()(h)
    h = L.SpatialDropout1D(0.2)(h)
    h = L.GaussianNoise(0.1)(h)
    h = L.EinsumDense("abc,cd->abd", (None, 5), bias_axes="d")(h)
    h = L.TimeDistributed(L.Dense(5, activation="tanh"))(h)
    h = L.Attention(use_scale=True)([h, h])
    h = L.UnitNormalization()(h)
    h = L.Permute((2, 1))(h)
    h = L.Dot(axes=(2, 2))([h, h])
    outputs = L.Dense(3)(L.Flatten()(h))
    return keras.Model(inputs, outputs)


def _image_model() -> keras.Model:
    inputs = keras.Input((9, 10, 3))
    h = L.Resizing(8, 8)(inputs)
    h = L.RandomFlip(seed=1)(h)
    h = L.RandomCrop(6, 6, seed=2)(h)
    h = L.CenterCrop(5, 5)(h)
    h = L.RandomContrast(0.1)(h)
    h = L.RandomBrightness(0.1)(h)
    h = L.RandomRotation(0.1)(h)
    outputs = L.Dense(2)(L.Flatten()(h))
    return keras.Model(inputs, outputs)


@pytest.mark.parametrize(
    ("make", "shape"), [(_sequence_model, (16, 6, 8)), (_image_model, (16, 9, 10, 3))]
)
def test_saved_model_loads_with_identical_predictions(make, shape, tmp_path):
    model = make()
    x = np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)
    y = np.zeros((16, model.outputs[0].shape[-1]), np.float32)
    model.compile("adam", "mse")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert [w.name.split("/", 1)[-1] for w in loaded.weights] == [
        w.name.split("/", 1)[-1] for w in model.weights
    ]


def test_augmentation_model_trains_with_the_simulated_augmentations():
    inputs = keras.Input((9, 10, 3))
    h = L.RandomFlip(seed=1)(inputs)
    h = L.RandomCrop(6, 6, seed=2)(h)
    h = L.RandomContrast(0.1)(h)
    h = L.RandomRotation(0.1, seed=3)(h)
    h = L.RandomTranslation(0.1, 0.1, seed=4)(h)
    h = L.RandomZoom(0.1, seed=5)(h)
    model = keras.Model(inputs, L.Dense(2)(L.Flatten()(h)))
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).uniform(0, 1, (32, 9, 10, 3)).astype(np.float32)
    history = model.fit(x, np.zeros((32, 2), np.float32), batch_size=8, epochs=3, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0]


def test_integer_lookup_adapt_orders_by_count_then_larger_token_and_round_trips():
    layer = L.IntegerLookup()
    layer.adapt(np.array([7, 7, 7, 3, 3, 9, 9, 1, -1]))
    # counts: 7 x3, then 3 and 9 x2 (the larger first), then 1; the OOV token -1 is not learned
    assert layer.get_vocabulary() == [-1, 7, 9, 3, 1]
    np.testing.assert_array_equal(layer(np.array([[9, 5, 1]])), [[2, 0, 4]])
    clone = L.IntegerLookup.from_config(layer.get_config())
    np.testing.assert_array_equal(clone(np.array([[9, 5, 1]])), [[2, 0, 4]])


def test_integer_lookup_without_oov_indices_rejects_unknown_tokens_at_run_time():
    layer = L.IntegerLookup(vocabulary=[4, 8], num_oov_indices=0)
    np.testing.assert_array_equal(layer(np.array([[8, 4]])), [[1, 0]])
    with pytest.raises(ValueError, match=r"found OOV values \[5\]"):
        layer(np.array([[8, 5]]))


def test_discretization_adapt_takes_quantile_boundaries():
    layer = L.Discretization(num_bins=4)
    layer.adapt(np.arange(100, dtype=np.float32))
    assert layer.bin_boundaries == [24.0, 49.0, 74.0]
    np.testing.assert_array_equal(
        layer(np.array([0.0, 24.0, 60.0, 99.0], np.float32)), [0, 1, 2, 3]
    )


def test_masking_zeroes_only_steps_whose_features_all_equal_the_mask_value():
    x = np.array([[[1, 2], [0, 0], [0, 3]]], np.float32)
    np.testing.assert_array_equal(L.Masking()(x), [[[1, 2], [0, 0], [0, 3]]])
    x2 = np.array([[[5, 5], [5, 1]]], np.float32)
    np.testing.assert_array_equal(L.Masking(5.0)(x2), [[[0, 0], [5, 1]]])


@pytest.mark.parametrize("name", ["HashedCrossing", "DenseFeatures", "SpectralNormalization"])
def test_unsimulated_layers_are_named_with_their_reason(name):
    from ipusim.compat import tf
    from ipusim.errors import NotSimulatedError

    with pytest.raises(NotSimulatedError, match=f"tf.keras.layers.{name}` is not simulated"):
        getattr(tf.keras.layers, name)


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: L.LeakyReLU(None), ConfigurationError),
        (lambda: L.ThresholdedReLU(-1.0), ConfigurationError),
        (lambda: L.Permute((1, 3)), ConfigurationError),
        (lambda: L.RepeatVector(-1), ConfigurationError),
        (lambda: L.GaussianDropout(1.5), ConfigurationError),
        (lambda: L.RandomFlip("sideways"), ConfigurationError),
        (lambda: L.Attention(score_mode="bilinear"), ConfigurationError),
        (lambda: L.Resizing(3, 3, "bicubic"), UnsupportedError),
        (lambda: L.ActivityRegularization(l1=0.01), UnsupportedError),
        (
            lambda: L.MultiHeadAttention(2, 4, attention_axes=(2,))(
                np.zeros((1, 2, 3, 4), np.float32), np.zeros((1, 2, 3, 4), np.float32)
            ),
            UnsupportedError,
        ),
        (lambda: L.IntegerLookup(num_oov_indices=-1), ConfigurationError),
        (lambda: L.CategoryEncoding(4, sparse=True), UnsupportedError),
        (lambda: L.Hashing(4, salt=7), UnsupportedError),
        (lambda: L.LocallyConnected2D(4, 3, implementation=2), UnsupportedError),
        (lambda: L.ConvLSTM2D(4, 3, stateful=True), UnsupportedError),
        (lambda: L.ConvLSTM2D(4, 3, dropout=0.1), UnsupportedError),
        (lambda: L.LocallyConnected1D(4, 3, padding="same"), ConfigurationError),
        (lambda: L.EinsumDense("ab...,bc->ac...", 4).build((2, 3, 5)), UnsupportedError),
        (lambda: L.GroupNormalization(groups=3).build((2, 4, 5)), ConfigurationError),
    ],
)
def test_bad_arguments_raise_ipusims_errors(make, error):
    with pytest.raises(error):
        make()


def test_tensorflow_2_6_experimental_paths_hold_the_same_classes():
    from ipusim.keras.layers.experimental import preprocessing

    assert L.experimental.EinsumDense is L.EinsumDense
    for name in ("RandomFlip", "RandomRotation", "Resizing", "Rescaling", "IntegerLookup"):
        assert getattr(preprocessing, name) is getattr(L, name)
    with pytest.raises(NotImplementedError, match="must implement adapt"):
        preprocessing.PreprocessingLayer().adapt(np.zeros(3))


class _Square(L.Layer):
    """A user layer that declares its input: rank 3, last axis 4."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.input_spec = L.InputSpec(ndim=3, axes={-1: 4})

    def call(self, inputs):
        return inputs * inputs


def test_input_spec_is_checked_when_the_layer_is_called():
    layer = _Square()
    np.testing.assert_array_equal(layer(np.full((2, 3, 4), 3.0, np.float32)), 9.0)
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
        layer(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 4"):
        _Square()(keras.Input((3, 5)))
    spec = L.InputSpec(min_ndim=2, dtype="float32")
    assert L.InputSpec.from_config(spec.get_config()).get_config() == spec.get_config()


def test_masks_passed_as_model_inputs_reach_the_attention_layers_and_survive_saving(tmp_path):
    q, v = keras.Input((4, 6)), keras.Input((5, 6))
    mq, mv = keras.Input((4,), dtype="bool"), keras.Input((5,), dtype="bool")
    am = keras.Input((4, 5), dtype="bool")
    a = L.Attention()([q, v], mask=[mq, mv])
    b = L.MultiHeadAttention(2, 3)(q, v, attention_mask=am)
    model = keras.Model([q, v, mq, mv, am], L.Concatenate()([a, b]))
    rng = np.random.default_rng(0)
    xq, xv = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 5, 6))
    masks = [rng.uniform(size=s) < 0.7 for s in ((2, 4), (2, 5), (2, 4, 5))]
    for m in masks:
        m[..., 0] = True
    got = model.predict([xq.astype(np.float32), xv.astype(np.float32), *masks], verbose=0)
    # The Attention half by hand: masked keys get -1e9 before the softmax, masked queries 0.
    scores = xq @ xv.transpose(0, 2, 1) - 1e9 * ~masks[1][:, None, :]
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    expected = (weights @ xv) * masks[0][..., None]
    np.testing.assert_allclose(got[..., :6], expected, rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "attention.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    again = loaded.predict([xq.astype(np.float32), xv.astype(np.float32), *masks], verbose=0)
    np.testing.assert_array_equal(again, got)


def test_conv_lstm_return_state_gives_the_last_output_and_both_states():
    layer = L.ConvLSTM2D(3, 3, padding="same", return_state=True, return_sequences=True)
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 5, 2)).astype(np.float32)
    seq, h, c = layer(x)
    assert seq.shape == (2, 4, 5, 5, 3) and h.shape == c.shape == (2, 5, 5, 3)
    np.testing.assert_array_equal(seq[:, -1], h)
    # h = o * tanh(c) with o in [0, 1] (hard sigmoid): |h| <= |tanh(c)|
    assert np.all(np.abs(h) <= np.abs(np.tanh(c)) + 1e-6)
    bias = layer.get_weights()[2]
    np.testing.assert_array_equal(bias, [0] * 3 + [1] * 3 + [0] * 6)  # unit_forget_bias


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_resizing_keeps_a_non_finite_pixel_in_the_outputs_that_read_it(interpolation):
    x = np.random.default_rng(5).uniform(0, 1, (1, 8, 8, 1)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    y = L.Resizing(5, 5, interpolation)(x)
    # Only outputs near the top-left corner read source pixel (0, 0): rows/cols with a source
    # coordinate below 1 (bilinear: (o + 0.5) * 8/5 - 0.5 < 1, i.e. o = 0; nearest: o = 0).
    assert np.isnan(y[0, 0, 0, 0])
    assert np.isfinite(y[0, 1:, :, 0]).all() and np.isfinite(y[0, :, 1:, 0]).all()


def test_string_layers_run_on_the_host_and_refuse_symbolic_tensors():
    texts = np.array(["The cat sat", "a dog", "the dog and the cat"])
    layer = L.TextVectorization(output_sequence_length=4)
    layer.adapt(texts)
    # counts: the 3, dog 2, cat 2 (ties: larger token first), then and, a, sat (count 1)
    assert layer.get_vocabulary() == ["", "[UNK]", "the", "dog", "cat", "sat", "and", "a"]
    np.testing.assert_array_equal(layer(texts), [[2, 4, 5, 0], [7, 3, 0, 0], [2, 3, 6, 2]])
    with pytest.raises(UnsupportedError, match="strings, which are not IPU tensors"):
        layer(keras.Input((), dtype="float32"))
    clone = L.TextVectorization.from_config(layer.get_config())
    np.testing.assert_array_equal(clone(texts[:1]), [[2, 4, 5, 0]])


def test_functional_merge_forms_and_layer_serialization():
    a, b = keras.Input((3,)), keras.Input((3,))
    out = L.concatenate(
        [L.add([a, b]), L.dot([a, b], axes=1), L.subtract([a, b]), L.average([a, b])], axis=-1
    )
    model = keras.Model([a, b], out)
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    y = np.array([[4.0, 5.0, 7.0]], np.float32)
    got = model.predict([x, y], verbose=0)
    np.testing.assert_allclose(got, [[5, 7, 10, 35, -3, -3, -4, 2.5, 3.5, 5]])
    layer = L.deserialize(L.serialize(L.GroupNormalization(groups=4, epsilon=0.01)))
    assert isinstance(layer, L.GroupNormalization) and layer.groups == 4
