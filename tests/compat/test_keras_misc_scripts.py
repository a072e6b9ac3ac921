"""IPU TensorFlow 2 scripts, written as users write them and run with ``ipusim run``, that use
Lambda layers and symbolic-tensor operators, Keras' lenient rules, keras.datasets and
keras.preprocessing, TF1 optimizers and tf.device. Each script saves what it computed; the test
checks it against NumPy computed here."""

from __future__ import annotations

import json
import textwrap
import warnings

import numpy as np
import pytest

from ipusim.compat import keras
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration
from ipusim.data.datasets import SyntheticDataWarning

HEADER = """
import sys
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()
strategy = ipu.ipu_strategy.IPUStrategy()
out = sys.argv[1]
"""


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    empty = tmp_path / "no_data"
    empty.mkdir()
    monkeypatch.setenv("IPUSIM_DATA_DIR", str(empty))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    yield
    reset_ipu_configuration()


def _run(tmp_path, body: str) -> tuple[dict, list]:
    script = tmp_path / "script.py"
    script.write_text(HEADER + textwrap.dedent(body))
    saved = tmp_path / "saved.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntheticDataWarning)
        result = run_script(script, [str(saved)], output=tmp_path / "reports", quiet=True)
    assert result.exit_code == 0
    with np.load(saved) as archive:
        return {k: archive[k] for k in archive.files}, list(result.reports)


def test_lambda_slicing_and_operators_in_a_functional_model(tmp_path):
    values, reports = _run(
        tmp_path,
        """
        inp = keras.Input((6, 4))
        first = inp[:, 0]
        window = inp[:, 1:5:2, ::-1]
        mean = keras.layers.Lambda(lambda t: tf.reduce_mean(t, axis=1))(inp)
        scaled = keras.layers.Lambda(lambda t, k: t[..., :k] ** 2 + abs(-t[..., :k]),
                                     arguments={"k": 2})(inp)
        expanded = inp[:, -1, tf.newaxis, 2] * 0.5 - 1
        probe = keras.Model(inp, [first, window, mean, scaled, expanded])
        x = np.arange(2 * 6 * 4, dtype=np.float32).reshape(2, 6, 4) / 10
        with strategy.scope():
            outs = probe.predict(x, batch_size=2)
            head = keras.layers.Dense(1)(keras.layers.Flatten()(inp[:, :3]))
            model = keras.Model(inp, head)
            model.compile(optimizer="sgd", loss="mse")
            rng = np.random.default_rng(0)
            xs = rng.standard_normal((64, 6, 4)).astype(np.float32)
            ys = xs[:, :3].sum(axis=(1, 2))  # labels (64,), predictions (64, 1): Keras squeezes
            hist = model.fit(xs, ys, batch_size=8, epochs=3, verbose=0)
        np.savez(out, x=x, loss=np.array(hist.history["loss"]),
                 **{f"o{i}": o for i, o in enumerate(outs)})
        """,
    )
    x = values["x"]
    expected = [
        x[:, 0],
        x[:, 1:5:2, ::-1],
        x.mean(axis=1),
        x[..., :2] ** 2 + np.abs(x[..., :2]),
        x[:, -1, None, 2] * 0.5 - 1,
    ]
    for i, e in enumerate(expected):
        np.testing.assert_allclose(values[f"o{i}"], e, rtol=1e-6, atol=1e-6)
    loss = values["loss"]
    assert loss[-1] < loss[0]  # the sliced model trains
    assert reports[-1].name.endswith("-fit")


def test_keras_lenient_rules_fit_dataset_batch_size_uint8_one_hot_mse_squeeze(tmp_path):
    values, _ = _run(
        tmp_path,
        """
        rng = np.random.default_rng(1)
        x = rng.standard_normal((64, 3)).astype(np.float32)
        labels = (np.arange(64) % 4).astype(np.uint8)

        def prep(features, label):
            return features, tf.one_hot(label, 4)

        ds = tf.data.Dataset.from_tensor_slices((x, labels)).map(prep).batch(8, drop_remainder=True)
        with strategy.scope():
            clf = keras.Sequential([keras.layers.Dense(4)])
            clf.compile("sgd", keras.losses.CategoricalCrossentropy(from_logits=True))
            clf.fit(ds, batch_size=32, epochs=1, verbose=0)  # Keras ignores batch_size here
            reg = keras.Sequential([keras.layers.Dense(1)])
            reg.compile("sgd", "mse")
            y = x.sum(axis=1)
            loss = reg.evaluate(x, y, batch_size=8, verbose=0)
            pred = reg.predict(x, batch_size=8)
        np.savez(out, x=x, y=y, loss=np.array(loss), pred=pred)
        """,
    )
    # Keras squeezes the (64, 1) predictions to meet the (64,) labels: a plain mean of squares.
    expected = np.mean((values["y"] - values["pred"][:, 0]) ** 2)
    np.testing.assert_allclose(values["loss"], expected, rtol=1e-5)


def test_datasets_and_preprocessing_in_an_imdb_style_script(tmp_path):
    values, reports = _run(
        tmp_path,
        """
        from tensorflow.keras.preprocessing.sequence import pad_sequences
        from keras.datasets import imdb, cifar10

        (x_train, y_train), _ = imdb.load_data(num_words=500, maxlen=120)
        first = np.array(x_train[0])
        x_train = pad_sequences(x_train[:64], maxlen=32, padding="post", truncating="post")
        (images, classes), _ = cifar10.load_data()
        with strategy.scope():
            model = keras.Sequential([
                keras.layers.Embedding(500, 8, input_length=32),
                keras.layers.Flatten(),
                keras.layers.Dense(1, activation="sigmoid"),
            ])
            model.compile("adam", "binary_crossentropy")
            model.fit(x_train, y_train[:64], batch_size=16, epochs=1, verbose=0)
        np.savez(out, x=x_train, images_shape=np.array(images.shape), first=first)
        """,
    )
    x, first = values["x"], values["first"]
    assert x.shape == (64, 32) and x.dtype == np.int32
    padded = np.zeros(32, np.int32)
    kept = first[:32]
    padded[: len(kept)] = kept
    np.testing.assert_array_equal(x[0], padded)  # post padding / truncation by hand
    assert tuple(values["images_shape"]) == (50_000, 32, 32, 3)
    figures = json.loads((reports[0] / "report.json").read_text())
    assert figures["extra"]["data"] == "synthetic (imdb, cifar10): timing valid, accuracy not"


def test_tf1_optimizer_in_compile_and_tf_device_scopes(tmp_path):
    values, _ = _run(
        tmp_path,
        """
        from tensorflow.python.training import optimizer as tf1_optimizer

        with tf.device("/device:CPU:0"):
            x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(32, 1)
            y = 3 * x
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.5)
        assert isinstance(opt, tf1_optimizer.Optimizer)
        with strategy.scope():
            with tf.device("/device:IPU:0"):
                model = keras.Sequential([keras.layers.Dense(1, use_bias=False,
                                                             kernel_initializer="zeros")])
            model.compile(opt, "mse")
            model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        try:
            with tf.device("IPU:0"):
                pass
            rejected = ""
        except ValueError as error:
            rejected = str(error)
        np.savez(out, x=x, kernel=model.get_weights()[0], rejected=np.array(rejected))
        """,
    )
    x = values["x"][:, 0]
    # One step of gradient descent from w = 0 on mean((w x - 3 x)^2): w = 0.5 * 2 * 3 * mean(x^2).
    np.testing.assert_allclose(values["kernel"][0, 0], 0.5 * 6 * np.mean(x**2), rtol=1e-5)
    assert "Unknown attribute 'IPU'" in str(values["rejected"])


def test_tf_variable_indexing_and_power_eager_and_traced():
    from ipusim.compat import tf

    w = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    v = tf.Variable(w)
    np.testing.assert_array_equal(v[:, 1], w[:, 1])
    np.testing.assert_array_equal(v[1] ** 2, w[1] ** 2)
    np.testing.assert_array_equal(abs(-v)[0], w[0])

    @tf.function
    def step(x):
        return v[0, 1:] * x[:, 0]

    x = np.full((2, 2), 3.0, np.float32)
    np.testing.assert_array_equal(step(x), w[0, 1:] * x[:, 0])


def test_tf_numpy_sequence_and_class_weight_in_a_script(tmp_path):
    values, reports = _run(
        tmp_path,
        """
        import tensorflow.experimental.numpy as tnp
        from tensorflow.keras.utils import Sequence

        x = tnp.linspace(-1.0, 1.0, 32).reshape(32, 1).astype(tnp.float32)
        labels = (tnp.asarray(x)[:, 0] > 0).astype(tnp.int32)

        class Batches(Sequence):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return x[i * 8:(i + 1) * 8], labels[i * 8:(i + 1) * 8]

        with strategy.scope():
            model = keras.Sequential([keras.layers.Dense(2)])
            model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            model.fit(Batches(), epochs=2, verbose=0)
            model.fit(x, labels, batch_size=8, class_weight={0: 1.0, 1: 2.0}, verbose=0)
        np.savez(out, x=np.asarray(x), labels=np.asarray(labels))
        """,
    )
    np.testing.assert_allclose(values["x"][:, 0], np.linspace(-1.0, 1.0, 32), rtol=1e-6)
    assert values["x"].dtype == np.float32
    np.testing.assert_array_equal(values["labels"], (np.linspace(-1, 1, 32) > 0).astype(np.int32))
    assert [r.name.split("-")[1] for r in reports] == ["fit", "fit"]


def test_datasets_load_from_the_keras_cache_in_home(tmp_path):
    """A script's boston_housing.load_data() reads ~/.keras/datasets/boston_housing.npz (the file
    Keras downloads); the split matches tf.keras' on the same file, and no report says synthetic."""
    import shutil
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[2] / "bench" / "keras_misc" / "fixtures"
    cache = tmp_path / "home" / ".keras" / "datasets"
    cache.mkdir(parents=True)
    shutil.copy(fixtures / "inputs" / "boston_housing.npz", cache)
    values, reports = _run(
        tmp_path,
        """
        (x, y), (xt, yt) = keras.datasets.boston_housing.load_data()
        with strategy.scope():
            model = keras.Sequential([keras.layers.Dense(1)])
            model.compile("sgd", "mse")
            model.fit(x[:16], y[:16], batch_size=4, verbose=0)
        np.savez(out, x=x, y=y, xt=xt, yt=yt)
        """,
    )
    with np.load(fixtures / "reference.npz") as ref:
        for key, name in (("x", "x_train"), ("y", "y_train"), ("xt", "x_test"), ("yt", "y_test")):
            np.testing.assert_array_equal(values[key], ref[f"boston/default/{name}"])
    figures = json.loads((reports[0] / "report.json").read_text())
    assert "data" not in figures["extra"]


def test_comparisons_and_logical_operators_on_functional_tensors():
    from ipusim.compat import tf

    inp = keras.Input((4,))
    mask = (inp > 0) & (inp < 2) | (inp >= 3)
    model = keras.Model(inp, tf.cast(mask, tf.float32))
    x = np.array([[-1.0, 1.0, 2.5, 4.0], [0.5, 3.0, 0.0, 1.9]], np.float32)
    expected = ((x > 0) & (x < 2)) | (x >= 3)
    np.testing.assert_array_equal(model.predict(x, verbose=0), expected.astype(np.float32))


def test_tf1_optimizer_minimize_in_a_traced_step():
    """Two TF1 momentum steps on loss = sum(v * x): accum = g then 1.9 g, so
    v = 1 - 0.1 g - 0.1 * 1.9 g = 1 - 0.29 g (hand-derived from TF1's update)."""
    from ipusim.compat import tf

    v = tf.Variable(np.ones(3, np.float32))
    opt = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)

    @tf.function
    def step(x):
        return opt.minimize(tf.reduce_sum(v * x), var_list=[v])

    g = np.array([1.0, 2.0, 3.0], np.float32)
    step(g)
    step(g)
    np.testing.assert_allclose(v.numpy(), 1 - 0.29 * g, rtol=1e-6)
