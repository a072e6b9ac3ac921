"""Text data sets of ``keras.datasets``: IMDB and Reuters, with their word indexes.

They read the files Keras downloads (``imdb.npz`` with ``x_train y_train x_test y_test``,
``reuters.npz`` with ``x y``, and ``imdb_word_index.json`` / ``reuters_word_index.json``) from
the folders of :func:`ipusim.data.datasets._store.search_dirs`. The sequences in the ``.npz``
files are object arrays (pickled lists), read by :mod:`ipusim.data.datasets._plain_pickle`.
Absent files give synthetic sequences with the real vocabulary size, lengths and label range
(announced and recorded). Either way the sequences then go through Keras' own steps in Keras'
order: the shuffle with ``seed``, ``start_char`` / ``index_from``, the ``maxlen`` filter,
``num_words`` / ``skip_top`` with ``oov_char``, the split; so every argument means what it means
in Keras.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ipusim.data.datasets import synthetic
from ipusim.data.datasets._plain_pickle import DatasetFileError, read_npz
from ipusim.data.datasets._store import find, record_synthetic
from ipusim.errors import ConfigurationError

__all__ = [
    "REUTERS_LABEL_NAMES",
    "get_imdb_word_index",
    "get_reuters_word_index",
    "load_imdb",
    "load_reuters",
]

#: The 46 Reuters topics, in label order (as Keras' ``reuters.get_label_names``).
REUTERS_LABEL_NAMES = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply",
    "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas",
    "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin",
    "strategic-metal", "livestock", "retail", "ipi", "iron-steel", "rubber", "heat", "jobs",
    "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog", "lead",
)  # fmt: skip


def _remove_long_seq(maxlen: int, seqs: list, labels: Any) -> tuple[list, list]:
    """Keep the sequences shorter than ``maxlen`` (Keras keeps ``len < maxlen``)."""
    kept = [(x, y) for x, y in zip(seqs, labels, strict=True) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]


def _offset(seqs: Any, start_char: int | None, index_from: int) -> list[list[int]]:
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in seqs]
    if index_from:
        return [[w + index_from for w in x] for x in seqs]
    return [list(x) for x in seqs]


def _limit_words(xs: list, num_words: int | None, skip_top: int, oov_char: int | None) -> list:
    if not num_words:
        num_words = max(max(x) for x in xs if x)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]


def _as_object_array(seqs: list) -> np.ndarray:
    out = np.empty(len(seqs), dtype=object)
    out[:] = seqs
    return out


def _check_sequences(arrays: dict[str, np.ndarray], file: Any) -> None:
    for key, array in arrays.items():
        if key.startswith("x") and array.dtype != object:
            raise DatasetFileError(f"{file}[{key}] is {array.dtype}, not an array of word lists")


def _imdb_raw(path: str, cache_dir: str | None) -> tuple:
    file = find(path, cache_dir)
    if file is None:
        record_synthetic("imdb", repr(path), cache_dir)
        seqs, labels = synthetic.text(synthetic.IMDB)
        half = len(seqs) // 2
        return (
            _as_object_array(seqs[:half]), labels[:half],
            _as_object_array(seqs[half:]), labels[half:],
        )  # fmt: skip
    arrays = read_npz(file, ("x_train", "y_train", "x_test", "y_test"))
    _check_sequences(arrays, file)
    return arrays["x_train"], arrays["y_train"], arrays["x_test"], arrays["y_test"]


def load_imdb(
    path: str = "imdb.npz",
    num_words: int | None = None,
    skip_top: int = 0,
    maxlen: int | None = None,
    seed: int = 113,
    start_char: int | None = 1,
    oov_char: int | None = 2,
    index_from: int = 3,
    cache_dir: str | None = None,
    **kwargs: Any,
) -> tuple:
    """``keras.datasets.imdb.load_data`` (same arguments, same steps, same results).

    Returns:
        ``((x_train, y_train), (x_test, y_test))``: object arrays of word-id lists and int64
        labels 0/1.

    Raises:
        TypeError: an unknown keyword argument (as Keras).
        ConfigurationError: ``maxlen`` keeps no sequence.
    """
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}.")
    x_train, labels_train, x_test, labels_test = _imdb_raw(path, cache_dir)
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]
    train, test = _offset(x_train, start_char, index_from), _offset(x_test, start_char, index_from)
    if maxlen:
        train, labels_train = _remove_long_seq(maxlen, train, labels_train)
        test, labels_test = _remove_long_seq(maxlen, test, labels_test)
        if not train or not test:
            raise ConfigurationError(
                f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was "
                "kept. Increase maxlen."
            )
    labels = np.concatenate([labels_train, labels_test])
    xs = _limit_words(train + test, num_words, skip_top, oov_char)
    idx = len(train)
    return (
        (_as_object_array(xs[:idx]), labels[:idx]),
        (_as_object_array(xs[idx:]), labels[idx:]),
    )


def _reuters_raw(path: str, cache_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
    file = find(path, cache_dir)
    if file is None:
        record_synthetic("reuters", repr(path), cache_dir)
        seqs, labels = synthetic.text(synthetic.REUTERS)
        return _as_object_array(seqs), labels
    arrays = read_npz(file, ("x", "y"))
    _check_sequences(arrays, file)
    return arrays["x"], arrays["y"]


def load_reuters(
    path: str = "reuters.npz",
    num_words: int | None = None,
    skip_top: int = 0,
    maxlen: int | None = None,
    test_split: float = 0.2,
    seed: int = 113,
    start_char: int | None = 1,
    oov_char: int | None = 2,
    index_from: int = 3,
    cache_dir: str | None = None,
    **kwargs: Any,
) -> tuple:
    """``keras.datasets.reuters.load_data`` (same arguments, same steps, same results).

    Returns:
        ``((x_train, y_train), (x_test, y_test))``: object arrays of word-id lists and int64
        topic labels 0-45.
    """
    if "nb_words" in kwargs:
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
    xs, labels = _reuters_raw(path, cache_dir)
    rng = np.random.RandomState(seed)
    indices = np.arange(len(xs))
    rng.shuffle(indices)
    xs, labels = xs[indices], labels[indices]
    seqs = _offset(xs, start_char, index_from)
    if maxlen:
        seqs, labels = _remove_long_seq(maxlen, seqs, labels)
    seqs = _limit_words(seqs, num_words, skip_top, oov_char)
    idx = int(len(seqs) * (1 - test_split))
    return (
        (_as_object_array(seqs[:idx]), np.array(labels[:idx])),
        (_as_object_array(seqs[idx:]), np.array(labels[idx:])),
    )


def _word_index(path: str, dataset: str, spec: synthetic.TextSpec) -> dict[str, int]:
    file = find(path)
    if file is None:
        record_synthetic(dataset, repr(path))
        return synthetic.word_index(spec)
    try:
        index = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetFileError(f"{file} is not a readable JSON word index ({exc})") from exc
    if not isinstance(index, dict) or not all(isinstance(v, int) for v in index.values()):
        raise DatasetFileError(f"{file} is not a word index (a JSON object of word -> rank)")
    return index


def get_imdb_word_index(path: str = "imdb_word_index.json") -> dict[str, int]:
    """``keras.datasets.imdb.get_word_index``: word -> rank (synthetic words when absent)."""
    return _word_index(path, "imdb", synthetic.IMDB)


def get_reuters_word_index(path: str = "reuters_word_index.json") -> dict[str, int]:
    """``keras.datasets.reuters.get_word_index``: word -> rank (synthetic words when absent)."""
    return _word_index(path, "reuters", synthetic.REUTERS)
