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
from ipusim.data.datasets._ragged import Ragged
from ipusim.data.datasets._store import Pairs, find, record_synthetic
from ipusim.errors import ConfigurationError, InvalidTypeError

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


def _keras_steps(
    parts: list[tuple[Ragged, np.ndarray]],
    seed: int,
    start_char: int | None,
    index_from: int,
    maxlen: int | None,
) -> list[tuple[Ragged, np.ndarray]]:
    """Keras' per-split steps in Keras' order: the shuffle (one generator over the splits), the
    start character and index offset, and the ``len < maxlen`` filter."""
    rng = np.random.RandomState(seed)
    out = []
    for seqs, labels in parts:
        indices = np.arange(len(seqs))
        rng.shuffle(indices)
        seqs, labels = seqs.take(indices).offset(start_char, index_from), labels[indices]
        if maxlen:
            kept = np.nonzero(seqs.lengths < maxlen)[0]
            seqs, labels = seqs.take(kept), labels[kept]
        out.append((seqs, labels))
    return out


def _limit(xs: Ragged, num_words: int | None, skip_top: int, oov_char: int | None) -> Ragged:
    if not num_words:
        num_words = int(xs.flat.max())  # Keras: the largest id of all sequences
    return xs.limit_words(num_words, skip_top, oov_char)


def _sequences(array: np.ndarray, where: str) -> Ragged:
    """An object array of word-id lists (as Keras' files hold) as flat sequences."""
    if array.dtype != object:
        raise DatasetFileError(f"{where} is {array.dtype}, not an array of word lists")
    try:
        return Ragged.from_lists(array)
    except (TypeError, ValueError) as exc:
        raise DatasetFileError(f"{where} holds something other than lists of word ids") from exc


def _imdb_raw(path: str, cache_dir: str | None) -> list[tuple[Ragged, np.ndarray]]:
    file = find(path, cache_dir)
    if file is None:
        record_synthetic("imdb", repr(path), cache_dir)
        seqs, labels = synthetic.text(synthetic.IMDB)
        half = len(seqs) // 2
        train, test = seqs.split(half)
        return [(train, labels[:half]), (test, labels[half:])]
    arrays = read_npz(file, ("x_train", "y_train", "x_test", "y_test"))
    return [
        (_sequences(arrays["x_train"], f"{file}[x_train]"), arrays["y_train"]),
        (_sequences(arrays["x_test"], f"{file}[x_test]"), arrays["y_test"]),
    ]


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
) -> Pairs:
    """``keras.datasets.imdb.load_data`` (same arguments, same steps, same results).

    Returns:
        ``((x_train, y_train), (x_test, y_test))``: object arrays of word-id lists and int64
        labels 0/1.

    Raises:
        TypeError: an unknown keyword argument (as Keras).
        ConfigurationError: ``maxlen`` keeps no sequence.
    """
    num_words = kwargs.pop("nb_words", num_words)  # Keras' legacy name
    if kwargs:
        raise InvalidTypeError(f"Unrecognized keyword arguments: {kwargs}.")
    parts = _keras_steps(_imdb_raw(path, cache_dir), seed, start_char, index_from, maxlen)
    (train, labels_train), (test, labels_test) = parts
    if maxlen and (not len(train) or not len(test)):
        raise ConfigurationError(
            f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was "
            "kept. Increase maxlen."
        )
    labels = np.concatenate([labels_train, labels_test])
    xs = _limit(train.concat(test), num_words, skip_top, oov_char)
    x_train, x_test = xs.split(len(train))
    idx = len(train)
    return (
        (x_train.to_object_array(), labels[:idx]),
        (x_test.to_object_array(), labels[idx:]),
    )


def _reuters_raw(path: str, cache_dir: str | None) -> tuple[Ragged, np.ndarray]:
    file = find(path, cache_dir)
    if file is None:
        record_synthetic("reuters", repr(path), cache_dir)
        return synthetic.text(synthetic.REUTERS)
    arrays = read_npz(file, ("x", "y"))
    return _sequences(arrays["x"], f"{file}[x]"), arrays["y"]


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
) -> Pairs:
    """``keras.datasets.reuters.load_data`` (same arguments, same steps, same results).

    Returns:
        ``((x_train, y_train), (x_test, y_test))``: object arrays of word-id lists and int64
        topic labels 0-45.
    """
    num_words = kwargs.pop("nb_words", num_words)  # Keras' legacy name
    if kwargs:
        raise InvalidTypeError(f"Unrecognized keyword arguments: {kwargs}")
    ((xs, labels),) = _keras_steps(
        [_reuters_raw(path, cache_dir)], seed, start_char, index_from, maxlen
    )
    xs = _limit(xs, num_words, skip_top, oov_char)
    idx = int(len(xs) * (1 - test_split))
    x_train, x_test = xs.split(idx)
    return (
        (x_train.to_object_array(), np.array(labels[:idx])),
        (x_test.to_object_array(), np.array(labels[idx:])),
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
