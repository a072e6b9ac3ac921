"""keras.preprocessing, keras.utils, keras.datasets' loading steps, TF1 optimizers and the loss
rank rule against tf.keras / TensorFlow (fixtures of bench/keras_misc/generate.py)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from ipusim.compat.tf.python.training import optimizer as tf1
from ipusim.graph.variable import Variable
from ipusim.keras import losses, utils
from ipusim.keras.datasets import boston_housing, cifar100, imdb, reuters
from ipusim.keras.preprocessing import sequence, text

FIXTURES = Path(__file__).resolve().parents[2] / "bench" / "keras_misc" / "fixtures"
TEXTS = [
    "The cat sat on the mat.",
    "The dog ate my homework!",
    "A cat, a dog; and THE end?",
    "tabs\tand\nnewlines",
    "",
]


@pytest.fixture(scope="module")
def ref():
    with np.load(FIXTURES / "reference.npz") as archive:
        return {key: archive[key] for key in archive.files}


def _json(array: np.ndarray):
    return json.loads(array.tobytes().decode())


def _ragged(ref: dict, key: str) -> list[list[int]]:
    flat, lengths = ref[f"{key}/flat"], ref[f"{key}/lengths"]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [flat[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


@pytest.fixture
def keras_files(monkeypatch, tmp_path):
    """The fake Keras files as the data folder; an empty home (no real ~/.keras)."""
    monkeypatch.setenv("IPUSIM_DATA_DIR", str(FIXTURES / "inputs"))
    monkeypatch.setenv("HOME", str(tmp_path))


# ---------------------------------------------------------------------------------- datasets
@pytest.mark.parametrize(
    ("key", "load"),
    [
        ("imdb/default", lambda: imdb.load_data()),
        ("imdb/limited", lambda: imdb.load_data(num_words=200, skip_top=5, maxlen=30, seed=7)),
        ("imdb/no_start", lambda: imdb.load_data(start_char=None, oov_char=None, num_words=100)),
        ("reuters/default", lambda: reuters.load_data()),
        ("reuters/limited", lambda: reuters.load_data(num_words=100, maxlen=25, test_split=0.3)),
    ],
)
def test_text_datasets_match_keras_on_the_same_files(ref, keras_files, key, load):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # real files: no synthetic-data warning
        (xtr, ytr), (xte, yte) = load()
    assert xtr.dtype == object and xte.dtype == object
    assert [list(s) for s in xtr] == _ragged(ref, f"{key}/x_train")
    assert [list(s) for s in xte] == _ragged(ref, f"{key}/x_test")
    for got, name in ((ytr, "y_train"), (yte, "y_test")):
        expected = ref[f"{key}/{name}"]
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("key", "kwargs"), [("boston/default", {}), ("boston/split", {"test_split": 0.4, "seed": 3})]
)
def test_boston_housing_matches_keras(ref, keras_files, key, kwargs):
    (xtr, ytr), (xte, yte) = boston_housing.load_data(**kwargs)
    for got, name in ((xtr, "x_train"), (ytr, "y_train"), (xte, "x_test"), (yte, "y_test")):
        np.testing.assert_array_equal(got, ref[f"{key}/{name}"])
        assert got.dtype == ref[f"{key}/{name}"].dtype


@pytest.mark.parametrize("mode", ["fine", "coarse"])
def test_cifar100_pickles_read_safely_match_keras(ref, keras_files, mode):
    (xtr, ytr), (xte, yte) = cifar100.load_data(label_mode=mode)
    for got, name in ((xtr, "x_train"), (ytr, "y_train"), (xte, "x_test"), (yte, "y_test")):
        expected = ref[f"cifar100/{mode}/{name}"]
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------- preprocessing
@pytest.mark.parametrize("padding", ["pre", "post"])
@pytest.mark.parametrize("truncating", ["pre", "post"])
@pytest.mark.parametrize("maxlen", [None, 4])
def test_pad_sequences_matches_keras(ref, padding, truncating, maxlen):
    seqs = [[1, 2, 3], [4, 5], [], [6, 7, 8, 9, 10, 11], [12]]
    got = sequence.pad_sequences(
        seqs, maxlen=maxlen, padding=padding, truncating=truncating, value=-1
    )
    expected = ref[f"pad/{padding}/{truncating}/{maxlen}"]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_pad_sequences_float_and_item_shapes_match_keras(ref):
    np.testing.assert_array_equal(
        utils.pad_sequences([[0.5, 1.5], [2.5]], dtype="float32"), ref["pad/float"]
    )
    got = utils.pad_sequences([np.ones((2, 3)), np.zeros((1, 3))], maxlen=3)
    np.testing.assert_array_equal(got, ref["pad/items"])


def test_word_splitting_and_md5_hashing_match_keras(ref):
    assert [text.text_to_word_sequence(t) for t in TEXTS] == _json(ref["words"])
    custom = [text.text_to_word_sequence(t, filters=".", lower=False, split=",") for t in TEXTS]
    assert custom == _json(ref["words_custom"])
    md5 = [text.hashing_trick(t, 17, hash_function="md5") for t in TEXTS]
    assert md5 == _json(ref["hash_md5"])


def test_one_hot_is_stable_and_in_keras_range():
    ids = text.one_hot("the cat the dog", 10)
    assert ids[0] == ids[2] and all(1 <= i <= 9 for i in ids)
    assert ids == text.one_hot("The cat, the dog!", 10)  # same words, same ids


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("plain", {}),
        ("oov", {"oov_token": "<unk>", "num_words": 6}),
        ("limited", {"num_words": 4}),
        ("char", {"char_level": True, "lower": False}),
    ],
)
def test_tokenizer_matches_keras(ref, name, kwargs):
    tok = text.Tokenizer(**kwargs)
    tok.fit_on_texts(TEXTS)
    probe = [*TEXTS, "unseen words and the cat"]
    assert tok.word_index == _json(ref[f"tok/{name}/word_index"])
    assert tok.texts_to_sequences(probe) == _json(ref[f"tok/{name}/sequences"])
    seqs = tok.texts_to_sequences(probe)
    assert tok.sequences_to_texts(seqs) == _json(ref[f"tok/{name}/texts"])
    for mode in ("binary", "count", "freq", "tfidf"):
        np.testing.assert_allclose(
            tok.texts_to_matrix(probe, mode=mode), ref[f"tok/{name}/matrix/{mode}"], rtol=1e-12
        )
    keras_config = _json(ref[f"tok/{name}/json"])["config"]
    ours = json.loads(tok.to_json())["config"]
    for key, value in keras_config.items():
        decoded = json.loads(value) if key in ("word_counts", "word_index") else value
        mine = json.loads(ours[key]) if key in ("word_counts", "word_index") else ours[key]
        if key not in ("word_docs", "index_docs", "index_word"):
            assert mine == decoded, key
    again = text.tokenizer_from_json(tok.to_json())
    assert again.texts_to_sequences(probe) == seqs


def test_timeseries_generator_matches_keras(ref):
    data = np.arange(50, dtype=np.float32).reshape(25, 2)
    gen = sequence.TimeseriesGenerator(
        data, np.arange(25), length=4, sampling_rate=2, stride=3, start_index=1,
        end_index=22, batch_size=3, reverse=True,
    )  # fmt: skip
    assert len(gen) == int(ref["ts/len"])
    for i in range(len(gen)):
        x, y = gen[i]
        np.testing.assert_array_equal(x, ref[f"ts/{i}/x"])
        np.testing.assert_array_equal(y, ref[f"ts/{i}/y"])


def test_sampling_table_normalize_to_categorical_match_keras(ref):
    np.testing.assert_allclose(sequence.make_sampling_table(50), ref["sampling_table"])
    np.testing.assert_allclose(
        utils.normalize(np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]])), ref["normalize"]
    )
    np.testing.assert_allclose(
        utils.normalize(np.array([[1.0, -3.0], [3.0, 1.0]]), 0, 1), ref["normalize_l1_axis0"]
    )
    np.testing.assert_array_equal(
        utils.to_categorical(np.array([[2], [0], [1]]), 4), ref["to_categorical"]
    )


# ------------------------------------------------------------------------------ TF1 optimizers
@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("sgd", lambda: tf1.GradientDescentOptimizer(0.1)),
        ("momentum", lambda: tf1.MomentumOptimizer(0.05, 0.9)),
        ("nesterov", lambda: tf1.MomentumOptimizer(0.05, 0.9, use_nesterov=True)),
        ("adam", lambda: tf1.AdamOptimizer(0.01)),
        ("rmsprop", lambda: tf1.RMSPropOptimizer(0.01)),
        (
            "rmsprop_momentum_centered",
            lambda: tf1.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
        ),
        ("adagrad", lambda: tf1.AdagradOptimizer(0.1)),
    ],
)
def test_tf1_optimizers_follow_tensorflows_updates(ref, name, make):
    var = Variable(ref["tf1/start"].copy(), name="v")
    opt = make()
    for step, grad in enumerate(ref["tf1/grads"]):
        opt.apply_gradients([(grad, var)])
        np.testing.assert_allclose(
            var.numpy(), ref[f"tf1/{name}"][step], rtol=2e-6, atol=1e-7, err_msg=f"step {step}"
        )


def test_custom_tf1_optimizer_subclass_is_refused():
    class Mine(tf1.Optimizer):
        pass

    # Nothing overridden: TF1's base update (the _apply_dense hooks) is not simulated.
    with pytest.raises(NotImplementedError, match="must override apply_gradients"):
        Mine()


# ------------------------------------------------------------------------- loss rank rules
def _loss(loss, y_true, y_pred):
    return float(np.asarray(loss(y_true, y_pred)))


def test_losses_squeeze_a_trailing_axis_as_keras(ref):
    pred, true = ref["loss/pred"], ref["loss/true"]
    prob = 1 / (1 + np.exp(-pred))
    cases = [
        (losses.MeanSquaredError(), true, pred, "mse_true_rank1"),
        (losses.MeanSquaredError(), true[:, None], pred[:, 0], "mse_pred_rank1"),
        (losses.MeanAbsoluteError(), true, pred, "mae_true_rank1"),
        (losses.LossFunctionWrapper(losses.mean_squared_error), true, pred, "mse_fn_string"),
        (losses.BinaryCrossentropy(), (true > 0).astype(np.float32), prob, "bce_true_rank1"),
        (losses.MeanSquaredError(), true[:, None], np.tile(pred, (1, 3)), "mse_broadcast"),
    ]
    for loss, y_true, y_pred, key in cases:
        np.testing.assert_allclose(_loss(loss, y_true, y_pred), ref[f"loss/{key}"], rtol=1e-5)


# ------------------------------------------------------------------------------- tf.device
def test_tf_device_accepts_and_parses_what_tensorflow_does(ref):
    from ipusim.compat.tf.device_scope import DeviceSpec, current_device, device

    for spec, expected in _json(ref["devices"]):
        if expected is None:
            with pytest.raises(ValueError), device(spec):
                pass
            continue
        with device(spec):
            assert current_device() == DeviceSpec.from_string(spec).to_string()
        parsed = DeviceSpec.from_string(spec)
        got = [parsed.job, parsed.replica, parsed.task, parsed.device_type, parsed.device_index]
        assert got == expected, spec
    assert current_device() == ""


# ----------------------------------------------------------------- tf.experimental.numpy
TNP_CASES = {
    "asarray_float": ("asarray", ([1.0, 2.0],)),
    "array_int": ("array", ([1, 2],)),
    "ones": ("ones", (3,)),
    "mean_int": ("mean", ([1, 2],)),
    "arange": ("arange", (5,)),
    "linspace": ("linspace", (0.0, 1.0, 5)),
    "cumsum": ("cumsum", ([[1, 2], [3, 4]],)),
    "where": ("where", ([True, False, True], [1.0, 2.0, 3.0], [9.0, 9.0, 9.0])),
    "tensordot": ("tensordot", ([[1.0, 2.0]], [[3.0], [4.0]], 1)),
    "around": ("around", ([1.256, -2.5],)),
    "float32_exp": ("exp", (np.array([0.5, 1.0], np.float32),)),
}


@pytest.mark.parametrize("key", sorted(TNP_CASES))
def test_tf_experimental_numpy_matches_tensorflow_on_concrete_values(ref, key):
    from ipusim.compat.tf.experimental import numpy as tnp

    name, args = TNP_CASES[key]
    got = getattr(tnp, name)(*args)
    expected = ref[f"tnp/{key}"]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


def test_tf_experimental_numpy_builds_ops_on_symbolic_tensors_and_refuses_others():
    from ipusim.compat.tf.experimental import numpy as tnp
    from ipusim.errors import UnsupportedError
    from ipusim.graph.graph import Graph
    from ipusim.graph.spec import TensorSpec

    x = Graph("g").placeholder(TensorSpec((2, 3), "float32"))
    y = tnp.mean(tnp.square(x), axis=-1, keepdims=True)
    assert y.shape == (2, 1) and y.node.op.name == "reduce_mean"
    with pytest.raises(UnsupportedError, match="sort"):
        tnp.sort(x)
    with pytest.raises(AttributeError):
        tnp.not_a_numpy_function  # noqa: B018


def test_tf_one_hot_matches_tensorflow(ref):
    from ipusim.compat import tf

    cases = {
        "one_hot_uint8": lambda: tf.one_hot(np.array([3, 0, 2], np.uint8), 4),
        "one_hot_on_off": lambda: tf.one_hot([2, 0], 3, 5.0, -1.0),
        "one_hot_int_values": lambda: tf.one_hot(np.array([2, 0]), 3, on_value=7, off_value=1),
    }
    for key, make in cases.items():
        got, expected = np.asarray(make()), ref[key]
        assert got.dtype == expected.dtype, key
        np.testing.assert_array_equal(got, expected)
