"""The 1-D, 3-D and transposed spatial layers: Keras arguments and errors, config and file round
trips, and their IPU cost (a 1-D convolution is timed exactly as the 2-D one it is)."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import numpy as np
import pytest

import ipusim
from ipusim import keras
from ipusim.config import reset_ipu_configuration
from ipusim.cost.compute import superstep_cycles
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.op import get_op
from ipusim.graph.spec import TensorSpec
from ipusim.hardware import get_chip
from ipusim.strategy import IPUStrategy

L = keras.layers
S1, S2, S3 = (9, 3), (5, 6, 3), (4, 5, 6, 2)

#: (layer, input shape without the batch).
LAYERS = [
    (lambda: L.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu"), S1),
    (lambda: L.SeparableConv1D(4, 3, depth_multiplier=2, padding="same"), S1),
    (lambda: L.DepthwiseConv1D(2, strides=2), S1),
    (lambda: L.Conv1DTranspose(3, 3, strides=2, output_padding=1), S1),
    (lambda: L.Conv2DTranspose(3, (3, 2), strides=2, padding="same"), S2),
    (lambda: L.Conv3D(3, (2, 3, 1), strides=(1, 2, 1), padding="same"), S3),
    (lambda: L.Conv3DTranspose(2, 2, strides=2, output_padding=(1, 0, 0)), S3),
    (lambda: L.MaxPooling1D(3, 2, padding="same"), S1),
    (lambda: L.AveragePooling1D(), S1),
    (lambda: L.MaxPooling3D((2, 2, 3), padding="same"), S3),
    (lambda: L.AveragePooling3D(2, strides=1), S3),
    (lambda: L.GlobalAveragePooling1D(keepdims=True), S1),
    (lambda: L.GlobalMaxPooling3D(), S3),
    (lambda: L.Cropping1D((1, 2)), S1),
    (lambda: L.Cropping2D(((1, 0), (2, 1))), S2),
    (lambda: L.Cropping3D(1), S3),
    (lambda: L.ZeroPadding1D((2, 1)), S1),
    (lambda: L.ZeroPadding3D((1, 0, 2)), S3),
    (lambda: L.UpSampling1D(3), S1),
    (lambda: L.UpSampling2D((2, 3), interpolation="bilinear"), S2),
    (lambda: L.UpSampling3D((1, 2, 2)), S3),
    (lambda: L.LocallyConnected1D(2, 3, strides=2, activation="tanh"), S1),
    (lambda: L.Permute((2, 1)), S1),
    (lambda: L.RepeatVector(4), (5,)),
    (lambda: L.LocallyConnected2D(2, (2, 3), use_bias=False), S2),
]


@pytest.fixture(autouse=True)
def _reset():
    yield
    reset_ipu_configuration()


@pytest.mark.parametrize(
    "make, shape", LAYERS, ids=lambda v: type(v()).__name__ if callable(v) else ""
)
def test_config_round_trip_gives_the_same_layer(make, shape) -> None:
    keras.utils.set_random_seed(0)
    layer = make()
    x = np.random.default_rng(0).normal(size=(2, *shape)).astype(np.float32)
    y = layer(x)
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(clone(x), y)


def test_aliases_and_keras_defaults() -> None:
    assert L.Convolution1D is L.Conv1D and L.Convolution3D is L.Conv3D
    assert L.Convolution2DTranspose is L.Conv2DTranspose
    assert L.MaxPool1D is L.MaxPooling1D and L.AvgPool3D is L.AveragePooling3D
    assert L.GlobalAvgPool1D is L.GlobalAveragePooling1D
    assert L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert L.MaxPooling1D().get_config()["pool_size"] == [2]
    assert L.Cropping3D().cropping == ((1, 1), (1, 1), (1, 1))
    assert L.ZeroPadding1D().padding == ((1, 1),)
    assert L.UpSampling3D().size == (2, 2, 2)
    conv = L.Conv1D(2, 3)
    conv.build((None, 7, 5))
    assert [w.shape for w in conv.weights] == [(3, 5, 2), (2,)]  # Keras' (K, Cin, filters)
    transpose = L.Conv3DTranspose(2, 3)
    transpose.build((None, 4, 4, 4, 5))
    assert transpose.kernel.shape == (3, 3, 3, 2, 5)  # (..., filters, Cin), as Keras


def test_user_mistakes_raise_ipusims_errors_of_keras_types() -> None:
    with pytest.raises(ConfigurationError, match="padding"):
        L.DepthwiseConv1D(3, padding="causal")  # Keras: causal is for Conv1D / SeparableConv1D
    with pytest.raises(ValueError, match="greater than output padding"):
        L.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(UnsupportedError, match="groups"):
        L.Conv3D(4, 3, groups=2)
    with pytest.raises(NotImplementedError, match="interpolation"):
        L.UpSampling2D(interpolation="bicubic")
    with pytest.raises(ValueError, match="cropping"):
        L.Cropping1D((4, 5))(np.zeros((1, 9, 2), np.float32))
    with pytest.raises(ValueError, match="kernel_size"):
        L.Conv1D(2, (3, 3))
    for make in (
        lambda: L.Conv1D(2, 3, strides=2, dilation_rate=2),
        lambda: L.Conv2DTranspose(2, 3, strides=2, dilation_rate=2),
        lambda: L.Conv3D(2, 3, strides=(1, 2, 1), dilation_rate=(2, 1, 1)),
        lambda: L.SeparableConv1D(2, 3, strides=2, dilation_rate=2),
    ):
        with pytest.raises(ValueError, match="strides > 1"):  # Keras' rule for every conv
            make()
    with pytest.raises(ValueError, match="Invalid permutation"):
        L.Permute((0, 1))
    with pytest.raises(ValueError, match="n"):
        L.RepeatVector(-1)
    with pytest.raises(ValueError, match='only "valid"'):
        L.LocallyConnected1D(2, 3, padding="same")
    with pytest.raises(UnsupportedError, match="implementation=2"):
        L.LocallyConnected2D(2, 3, implementation=2)


def test_model_of_spatial_layers_saves_and_loads(tmp_path) -> None:
    keras.utils.set_random_seed(3)
    inp = keras.Input((8, 3))
    h = L.Conv1D(4, 3, padding="causal")(inp)
    h = L.UpSampling1D(2)(L.MaxPooling1D()(h))
    h = L.Conv1DTranspose(2, 3, strides=2, padding="same")(L.ZeroPadding1D(1)(h))
    h = L.Reshape((4, 4, 2))(L.Cropping1D((1, 3))(h))
    h = L.UpSampling2D(interpolation="bilinear")(L.Conv2DTranspose(3, 2)(h))
    h = L.Reshape((2, 5, 6, 3))(L.Cropping2D(((0, 0), (0, 4)))(h))
    out = L.GlobalAveragePooling3D()(L.Conv3D(2, 2, padding="same")(h))
    model = keras.Model(inp, out)
    path = tmp_path / "spatial.npz"
    model.save(path)
    loaded = keras.models.load_model(path)
    x = np.random.default_rng(0).normal(size=(2, 8, 3)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert [type(layer).__name__ for layer in loaded.layers] == [
        type(layer).__name__ for layer in model.layers
    ]


def _fit_seconds(layers: list, shape: tuple) -> float:
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    x = np.random.default_rng(0).normal(size=(32, *shape)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 2, 32)
    with IPUStrategy().scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input(shape), *layers, L.Flatten(), L.Dense(2)])
        model.compile(
            optimizer="sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=4,
        )
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    return model.last_simulation.seconds


def test_conv1d_is_timed_as_the_2d_conv_of_unit_height() -> None:
    # tf.nn.conv1d hands XLA / poplin a 2-D convolution of height 1: the same simulated step.
    one_d = _fit_seconds([L.Conv1D(16, 5, strides=2, padding="same")], (64, 8))
    two_d = _fit_seconds([L.Conv2D(16, (1, 5), strides=(1, 2), padding="same")], (1, 64, 8))
    assert one_d == two_d > 0


def _cycles(op: str, ins: list, outs: list, **attrs) -> int:
    specs = [TensorSpec(s, "float16") for s in ins], [TensorSpec(s, "float16") for s in outs]
    cost = get_op(op).cost(*specs, **attrs)
    return superstep_cycles(op, cost, *specs, attrs, get_chip("GC200"), "fp16.16").total


def test_conv3d_cost_reduces_to_the_2d_conv_and_grows_with_depth() -> None:
    geometry = {"padding": "VALID", "dilation_rate": (1, 1, 1), "strides": (1, 1, 1)}
    flat = _cycles(
        "conv3d", [(8, 1, 16, 16, 32), (1, 3, 3, 32, 64)], [(8, 1, 14, 14, 64)], **geometry
    )
    plane = _cycles(
        "conv2d",
        [(8, 16, 16, 32), (3, 3, 32, 64)],
        [(8, 14, 14, 64)],
        strides=(1, 1),
        padding="VALID",
        dilation_rate=(1, 1),
    )
    assert flat == plane  # one plane and one depth tap: exactly the 2-D pass
    deep = _cycles(
        "conv3d", [(8, 6, 16, 16, 32), (3, 3, 3, 32, 64)], [(8, 4, 14, 14, 64)], **geometry
    )
    assert deep > 3 * plane  # 4 output planes of 3 taps each: 12x the MACs on the same tiles


SIGNATURES = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "bench/tf_parity/fixtures/layers_spatial_signatures.json"
    ).read_text()
)


def _arguments(cls: type) -> dict[str, object]:
    """Every argument ``cls(...)`` accepts with its default: its own ``__init__``'s, then (while
    ``**kwargs`` passes them on) those of the parents' ``__init__``, nearest first."""
    found: dict[str, object] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is keras.layers.Layer:
            continue
        params = inspect.signature(vars(klass)["__init__"]).parameters.values()
        for p in params:
            if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self":
                found.setdefault(p.name, None if p.default is p.empty else p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return found


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_arguments_and_defaults_are_keras(name: str) -> None:
    ours = _arguments(getattr(L, name))
    for arg, default in SIGNATURES[name].items():
        assert arg in ours, f"{name} does not take `{arg}`"
        want = None if default is None else ast.literal_eval(default)
        assert ours[arg] == want, f"{name}({arg}=...) defaults to {ours[arg]!r}, Keras {want!r}"
