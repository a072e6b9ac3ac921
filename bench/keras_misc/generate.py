"""Write the tf.keras / TensorFlow reference fixtures that tests/keras/test_keras_misc_parity.py
reads (keras.preprocessing, keras.utils, the datasets' loading steps, TF1 optimizers, the loss
rank rules).

Run it in the separate TensorFlow environment (never a dependency of ipusim)::

    /work/tfvenv/bin/python bench/keras_misc/generate.py

It writes, under ``bench/keras_misc/fixtures/``:

* ``inputs/``: small files in the formats Keras downloads (``imdb.npz``, ``reuters.npz`` and
  ``boston_housing.npz`` as ``np.savez`` writes them, object arrays included;
  ``cifar-100-python/{train,test}`` pickled as the CIFAR site's files are), made from seeded
  NumPy generators;
* ``reference.npz``: what tf.keras returns for them and for the preprocessing / utils cases,
  plus the variable trajectories of the TF1 optimizers and the loss values. Ragged results
  (lists of sequences) are stored flat with their lengths; strings as JSON in uint8 bytes.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tf_keras.src.datasets import boston_housing, cifar100, imdb, reuters  # noqa: E402

HERE = Path(__file__).resolve().parent / "fixtures"
INPUTS = HERE / "inputs"
TEXTS = [
    "The cat sat on the mat.",
    "The dog ate my homework!",
    "A cat, a dog; and THE end?",
    "tabs\tand\nnewlines",
    "",
]


def _json(value) -> np.ndarray:
    return np.frombuffer(json.dumps(value).encode(), dtype=np.uint8)


def _ragged(out: dict, key: str, seqs) -> None:
    seqs = [list(map(int, s)) for s in seqs]
    out[f"{key}/flat"] = np.array([w for s in seqs for w in s], dtype=np.int64)
    out[f"{key}/lengths"] = np.array([len(s) for s in seqs], dtype=np.int64)


def write_inputs() -> None:
    """Fake data set files in Keras' formats (the same generator as the test's expectations)."""
    rng = np.random.default_rng(2024)
    INPUTS.mkdir(parents=True, exist_ok=True)

    def seqs(n: int, vocab: int) -> np.ndarray:
        out = np.empty(n, dtype=object)
        out[:] = [list(map(int, rng.integers(1, vocab, rng.integers(3, 40)))) for _ in range(n)]
        return out

    np.savez(
        INPUTS / "imdb.npz",
        x_train=seqs(30, 500), y_train=rng.integers(0, 2, 30),
        x_test=seqs(20, 500), y_test=rng.integers(0, 2, 20),
    )  # fmt: skip
    np.savez(INPUTS / "reuters.npz", x=seqs(40, 300), y=rng.integers(0, 46, 40))
    np.savez(
        INPUTS / "boston_housing.npz", x=rng.standard_normal((25, 13)), y=rng.uniform(5, 50, 25)
    )
    folder = INPUTS / "cifar-100-python"
    folder.mkdir(exist_ok=True)
    for name, n in (("train", 12), ("test", 5)):
        batch = {
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"fine_labels": [int(v) for v in rng.integers(0, 100, n)],
            b"coarse_labels": [int(v) for v in rng.integers(0, 20, n)],
            b"filenames": [f"img{i}.png".encode() for i in range(n)],
            b"batch_label": name.encode(),
        }
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))


def datasets(out: dict) -> None:
    """tf.keras' loaders on the fake files (get_file pointed at them: nothing is downloaded)."""
    imdb.get_file = lambda fname, **kw: str(INPUTS / fname)
    reuters.get_file = lambda fname, **kw: str(INPUTS / fname)
    boston_housing.get_file = lambda fname, **kw: str(INPUTS / fname)
    cifar100.get_file = lambda fname, **kw: str(INPUTS / fname)
    cases = {
        "imdb/default": lambda: imdb.load_data(),
        "imdb/limited": lambda: imdb.load_data(num_words=200, skip_top=5, maxlen=30, seed=7),
        "imdb/no_start": lambda: imdb.load_data(start_char=None, oov_char=None, num_words=100),
        "reuters/default": lambda: reuters.load_data(),
        "reuters/limited": lambda: reuters.load_data(num_words=100, maxlen=25, test_split=0.3),
    }
    for key, load in cases.items():
        (xtr, ytr), (xte, yte) = load()
        _ragged(out, f"{key}/x_train", xtr)
        _ragged(out, f"{key}/x_test", xte)
        out[f"{key}/y_train"], out[f"{key}/y_test"] = np.asarray(ytr), np.asarray(yte)
    for key, kwargs in (("boston/default", {}), ("boston/split", {"test_split": 0.4, "seed": 3})):
        (xtr, ytr), (xte, yte) = boston_housing.load_data(**kwargs)
        out.update({f"{key}/x_train": xtr, f"{key}/y_train": ytr, f"{key}/x_test": xte,
                    f"{key}/y_test": yte})  # fmt: skip
    for mode in ("fine", "coarse"):
        (xtr, ytr), (xte, yte) = cifar100.load_data(label_mode=mode)
        out.update({f"cifar100/{mode}/x_train": xtr, f"cifar100/{mode}/y_train": ytr,
                    f"cifar100/{mode}/x_test": xte, f"cifar100/{mode}/y_test": yte})  # fmt: skip


def preprocessing(out: dict) -> None:
    seqs = [[1, 2, 3], [4, 5], [], [6, 7, 8, 9, 10, 11], [12]]
    for padding in ("pre", "post"):
        for truncating in ("pre", "post"):
            for maxlen in (None, 4):
                key = f"pad/{padding}/{truncating}/{maxlen}"
                out[key] = keras.utils.pad_sequences(
                    seqs, maxlen=maxlen, padding=padding, truncating=truncating, value=-1
                )
    out["pad/float"] = keras.utils.pad_sequences([[0.5, 1.5], [2.5]], dtype="float32")
    out["pad/items"] = keras.utils.pad_sequences([np.ones((2, 3)), np.zeros((1, 3))], maxlen=3)
    text = keras.preprocessing.text
    out["words"] = _json([text.text_to_word_sequence(t) for t in TEXTS])
    out["words_custom"] = _json(
        [text.text_to_word_sequence(t, filters=".", lower=False, split=",") for t in TEXTS]
    )
    out["hash_md5"] = _json([text.hashing_trick(t, 17, hash_function="md5") for t in TEXTS])
    for name, kwargs in {
        "plain": {},
        "oov": {"oov_token": "<unk>", "num_words": 6},
        "limited": {"num_words": 4},
        "char": {"char_level": True, "lower": False},
    }.items():
        tok = text.Tokenizer(**kwargs)
        tok.fit_on_texts(TEXTS)
        probe = TEXTS + ["unseen words and the cat"]
        out[f"tok/{name}/word_index"] = _json(tok.word_index)
        out[f"tok/{name}/sequences"] = _json(tok.texts_to_sequences(probe))
        out[f"tok/{name}/texts"] = _json(tok.sequences_to_texts(tok.texts_to_sequences(probe)))
        for mode in ("binary", "count", "freq", "tfidf"):
            out[f"tok/{name}/matrix/{mode}"] = tok.texts_to_matrix(probe, mode=mode)
        out[f"tok/{name}/json"] = _json(json.loads(tok.to_json()))
    seq = keras.preprocessing.sequence
    data = np.arange(50, dtype=np.float32).reshape(25, 2)
    gen = seq.TimeseriesGenerator(data, np.arange(25), length=4, sampling_rate=2, stride=3,
                                  start_index=1, end_index=22, batch_size=3, reverse=True)  # fmt: skip
    out["ts/len"] = np.array(len(gen))
    for i in range(len(gen)):
        out[f"ts/{i}/x"], out[f"ts/{i}/y"] = gen[i]
    out["sampling_table"] = seq.make_sampling_table(50)
    out["normalize"] = keras.utils.normalize(np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]]))
    out["normalize_l1_axis0"] = keras.utils.normalize(np.array([[1.0, -3.0], [3.0, 1.0]]), 0, 1)
    out["to_categorical"] = keras.utils.to_categorical(np.array([[2], [0], [1]]), 4)


def tf1_optimizers(out: dict) -> None:
    """Ten TF1 updates of a variable from a fixed gradient sequence (the TF1 graph kernels)."""
    grads = np.random.default_rng(5).standard_normal((10, 4)).astype(np.float32)
    start = np.array([0.5, -1.0, 2.0, 0.1], np.float32)
    out["tf1/grads"], out["tf1/start"] = grads, start
    v1 = tf.compat.v1.train
    cases = {
        "sgd": lambda: v1.GradientDescentOptimizer(0.1),
        "momentum": lambda: v1.MomentumOptimizer(0.05, 0.9),
        "nesterov": lambda: v1.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        "adam": lambda: v1.AdamOptimizer(0.01),
        "rmsprop": lambda: v1.RMSPropOptimizer(0.01),
        "rmsprop_momentum_centered": lambda: v1.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
        "adagrad": lambda: v1.AdagradOptimizer(0.1),
    }
    for name, make in cases.items():
        var = tf.Variable(start)
        opt = make()
        path = []
        for g in grads:
            opt.apply_gradients([(tf.constant(g), var)])
            path.append(var.numpy().copy())
        out[f"tf1/{name}"] = np.stack(path)


def losses(out: dict) -> None:
    """Loss values where labels and predictions differ in rank by one (Keras squeezes)."""
    rng = np.random.default_rng(9)
    pred = rng.standard_normal((6, 1)).astype(np.float32)
    true = rng.standard_normal(6).astype(np.float32)
    prob = 1 / (1 + np.exp(-pred))
    out["loss/pred"], out["loss/true"] = pred, true
    # As tensors, as fit passes them: LossFunctionWrapper squeezes only when both are tensors.
    pred, true, prob = tf.constant(pred), tf.constant(true), tf.constant(prob)
    out["loss/mse_true_rank1"] = keras.losses.MeanSquaredError()(true, pred).numpy()
    out["loss/mse_pred_rank1"] = keras.losses.MeanSquaredError()(true[:, None], pred[:, 0]).numpy()
    out["loss/mae_true_rank1"] = keras.losses.MeanAbsoluteError()(true, pred).numpy()
    # compile(loss="mse") wraps the function in a LossFunctionWrapper (compile_utils), which
    # applies the squeeze rule; the bare function would broadcast (6,) against (6, 1) instead.
    from tf_keras.src.losses import LossFunctionWrapper

    wrapped = LossFunctionWrapper(keras.losses.mean_squared_error)
    out["loss/mse_fn_string"] = wrapped(true, pred).numpy()
    labels = tf.cast(true > 0, tf.float32)
    out["loss/bce_true_rank1"] = keras.losses.BinaryCrossentropy()(labels, prob).numpy()
    out["loss/mse_broadcast"] = keras.losses.MeanSquaredError()(
        true[:, None], tf.tile(pred, (1, 3))
    ).numpy()
    out["one_hot_uint8"] = tf.one_hot(np.array([3, 0, 2], np.uint8), 4).numpy()
    out["one_hot_on_off"] = tf.one_hot([2, 0], 3, 5.0, -1.0).numpy()
    out["one_hot_int_values"] = tf.one_hot(np.array([2, 0]), 3, on_value=7, off_value=1).numpy()


DEVICE_STRINGS = [
    "/device:CPU:0", "/cpu:0", "cpu:0", "CPU:0", "/device:IPU:0", "/device:GPU:0", "gpu",
    "/gpu:1", "/job:localhost/replica:0/task:0/device:CPU:0", "", "foo", "/device:CPU",
    "/device:XYZ:0", "/cpu:x", "device:CPU:0", "/device:CPU:0:1", "/task:0", "/CPU:0",
    "IPU:0", "/device:IPU:1", "/cpu:0/gpu:0", "/device:CPU:*", "/replica:1/device:CPU:0",
]  # fmt: skip


def devices(out: dict) -> None:
    """Which device strings tf.device accepts (None: a ValueError), and tf.DeviceSpec's parse."""
    results = []
    for spec in DEVICE_STRINGS:
        try:
            with tf.device(spec):
                pass
            parsed = tf.DeviceSpec.from_string(spec)
            results.append([spec, [parsed.job, parsed.replica, parsed.task,
                                   parsed.device_type, parsed.device_index]])  # fmt: skip
        except ValueError:
            results.append([spec, None])
    out["devices"] = _json(results)


#: tf.experimental.numpy calls: name -> (function name, args) on concrete values.
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


def tf_numpy(out: dict) -> None:
    import tensorflow.experimental.numpy as tnp

    # TensorFlow's tnp functions that call NumPy-style methods (around's astype) need this.
    tnp.experimental_enable_numpy_behavior()
    for key, (name, args) in TNP_CASES.items():
        out[f"tnp/{key}"] = np.asarray(getattr(tnp, name)(*args))


def main() -> None:
    write_inputs()
    out: dict = {}
    datasets(out)
    preprocessing(out)
    tf1_optimizers(out)
    losses(out)
    devices(out)
    tf_numpy(out)
    np.savez_compressed(HERE / "reference.npz", **out)
    print(f"wrote {len(out)} arrays to {HERE / 'reference.npz'}")


if __name__ == "__main__":
    main()
