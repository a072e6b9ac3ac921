"""``keras.preprocessing.text``: word splitting, hashing and the ``Tokenizer``, as tf.keras.

One difference, for determinism: Keras' ``one_hot`` and ``hashing_trick`` default to Python's
``hash``, which is salted per process (``PYTHONHASHSEED``), so the ids change from run to run;
ipusim's default is a stable hash (the first 8 bytes of the word's MD5), so the same text gets the
same ids in every run. The ids keep Keras' range ``1 .. n-1``; ``hash_function="md5"`` and any
callable behave exactly as in Keras.
"""

from __future__ import annotations

import collections
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.keras.keyword_init import fields

__all__ = [
    "Tokenizer",
    "hashing_trick",
    "one_hot",
    "text_to_word_sequence",
    "tokenizer_from_json",
]

FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
#: The Tokenizer's tables, which its config holds as JSON strings.
_TABLES = "word_counts word_docs index_docs index_word word_index"


def text_to_word_sequence(
    input_text: str, filters: str = FILTERS, lower: bool = True, split: str = " "
) -> list[str]:
    """The words of ``input_text``: lower-cased, ``filters`` characters made separators, split
    on ``split``, empty pieces dropped."""
    if lower:
        input_text = input_text.lower()
    table: dict[str, str | int | None] = dict.fromkeys(filters, split)
    input_text = input_text.translate(str.maketrans(table))
    return [word for word in input_text.split(split) if word]


def _stable_hash(word: str) -> int:
    return int.from_bytes(hashlib.md5(word.encode()).digest()[:8], "big")  # noqa: S324


def _md5(word: str) -> int:
    return int(hashlib.md5(word.encode()).hexdigest(), 16)  # noqa: S324 - Keras' "md5"


def hashing_trick(
    text: str,
    n: int,
    hash_function: Callable[[str], int] | str | None = None,
    filters: str = FILTERS,
    lower: bool = True,
    split: str = " ",
    analyzer: Callable[[str], list[str]] | None = None,
) -> list[int]:
    """Each word of ``text`` as ``hash(word) % (n - 1) + 1`` (ids 1 .. n-1; 0 is never used)."""
    if hash_function is None:
        hash_function = _stable_hash
    elif hash_function == "md5":
        hash_function = _md5
    if not callable(hash_function):
        raise ConfigurationError(
            f"hashing_trick: `hash_function` must be None, 'md5' or a callable, received "
            f"{hash_function!r}"
        )
    words = (
        analyzer(text)
        if analyzer is not None
        else text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    )
    return [hash_function(word) % (n - 1) + 1 for word in words]


def one_hot(
    input_text: str,
    n: int,
    filters: str = FILTERS,
    lower: bool = True,
    split: str = " ",
    analyzer: Callable[[str], list[str]] | None = None,
) -> list[int]:
    """``hashing_trick`` with the default hash: a word id in ``1 .. n-1`` per word."""
    return hashing_trick(
        input_text, n, filters=filters, lower=lower, split=split, analyzer=analyzer
    )


class Tokenizer:
    """Turns texts into sequences of word ranks or into count / tf-idf matrices (tf.keras').

    Args:
        num_words: keep only the ``num_words - 1`` most frequent words when converting.
        filters / lower / split: as :func:`text_to_word_sequence`.
        char_level: every character is a token.
        oov_token: the token (rank 1) standing for words not in the index.
        analyzer: a function splitting a text into tokens, replacing the above.
    """

    def __init__(
        self,
        num_words: int | None = None,
        filters: str = FILTERS,
        lower: bool = True,
        split: str = " ",
        char_level: bool = False,
        oov_token: str | None = None,
        analyzer: Callable[[str], list[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        if "nb_words" in kwargs:
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise InvalidTypeError(f"Unrecognized keyword arguments: {kwargs}")
        self.word_counts: dict[str, int] = collections.OrderedDict()
        self.word_docs: dict[str, int] = collections.defaultdict(int)
        self.filters, self.split, self.lower = filters, split, lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs: dict[int, int] = collections.defaultdict(int)
        self.word_index: dict[str, int] = {}
        self.index_word: dict[int, str] = {}
        self.analyzer = analyzer

    def _tokens(self, text: Any) -> Any:
        if self.char_level or isinstance(text, list):
            if self.lower:
                return [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, filters=self.filters, lower=self.lower, split=self.split)

    def fit_on_texts(self, texts: Iterable[Any]) -> None:
        """Count the words of ``texts`` and rank them by frequency (1 = most frequent; ties
        keep first-seen order; the ``oov_token`` takes rank 1 when set)."""
        for text in texts:
            self.document_count += 1
            tokens = self._tokens(text)
            for word in tokens:
                self.word_counts[word] = self.word_counts.get(word, 0) + 1
            for word in set(tokens):
                self.word_docs[word] += 1
        ranked = sorted(self.word_counts.items(), key=lambda item: item[1], reverse=True)
        vocabulary = ([] if self.oov_token is None else [self.oov_token]) + [w for w, _ in ranked]
        self.word_index = {word: rank for rank, word in enumerate(vocabulary, start=1)}
        self.index_word = {rank: word for word, rank in self.word_index.items()}
        for word, count in list(self.word_docs.items()):
            self.index_docs[self.word_index[word]] = count

    def fit_on_sequences(self, sequences: list[list[int]]) -> None:
        """Count, per rank, the documents it appears in (for ``tfidf``) from rank sequences."""
        self.document_count += len(sequences)
        for seq in sequences:
            for rank in set(seq):
                self.index_docs[rank] += 1

    def texts_to_sequences(self, texts: Iterable[Any]) -> list[list[int]]:
        """Each text as the ranks of its words (unknown / beyond ``num_words``: OOV or dropped)."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts: Iterable[Any]) -> Iterator[list[int]]:
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for text in texts:
            ranks = []
            for word in self._tokens(text):
                rank = self.word_index.get(word)
                if rank is not None and not (self.num_words and rank >= self.num_words):
                    ranks.append(rank)
                elif oov is not None:  # unknown, or beyond num_words
                    ranks.append(oov)
            yield ranks

    def sequences_to_texts(self, sequences: Iterable[list[int]]) -> list[str]:
        """Each rank sequence as the space-joined words (the inverse of the above)."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences: Iterable[list[int]]) -> Iterator[str]:
        oov = self.word_index.get(self.oov_token) if self.oov_token is not None else None
        for seq in sequences:
            words = []
            for rank in seq:
                word = self.index_word.get(rank)
                if word is not None and not (self.num_words and rank >= self.num_words):
                    words.append(word)
                elif oov is not None:
                    words.append(self.index_word[oov])
            yield " ".join(words)

    def texts_to_matrix(self, texts: Iterable[Any], mode: str = "binary") -> np.ndarray:
        """``sequences_to_matrix`` of ``texts_to_sequences(texts)``."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences: list[list[int]], mode: str = "binary") -> np.ndarray:
        """A (texts, num_words) float64 matrix: ``binary``, ``count``, ``freq`` or ``tfidf``."""
        if mode not in ("binary", "count", "freq", "tfidf"):
            raise ConfigurationError(
                f"Tokenizer: Unknown vectorization mode: {mode!r}; expected 'binary', "
                "'count', 'freq' or 'tfidf'"
            )
        width = self.num_words or (len(self.word_index) + 1 if self.word_index else 0)
        if not width:
            raise ConfigurationError(
                "Specify a dimension (`num_words` argument), or fit on some text data first."
            )
        if mode == "tfidf" and not self.document_count:
            raise ConfigurationError("Fit the Tokenizer on some data before using tfidf mode.")
        out = np.zeros((len(sequences), width))
        for i, seq in enumerate(sequences):
            counts = collections.Counter(j for j in seq if j < width)
            for j, c in counts.items():
                if mode == "count":
                    out[i, j] = c
                elif mode == "freq":
                    out[i, j] = c / len(seq)
                elif mode == "binary":
                    out[i, j] = 1
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(j, 0)))
                    out[i, j] = (1 + np.log(c)) * idf
        return out

    def get_config(self) -> dict[str, Any]:
        tables = fields(self, _TABLES)
        return {
            **fields(self, "num_words filters lower split char_level oov_token document_count"),
            **{name: json.dumps(table) for name, table in tables.items()},
        }

    def to_json(self, **kwargs: Any) -> str:
        """The tokenizer as JSON (read back by :func:`tokenizer_from_json`)."""
        return json.dumps(
            {"class_name": type(self).__name__, "config": self.get_config()}, **kwargs
        )


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """The :class:`Tokenizer` saved by ``Tokenizer.to_json``."""
    config = dict(json.loads(json_string).get("config"))
    tables = {name: json.loads(config.pop(name)) for name in _TABLES.split()}
    for name in ("index_docs", "index_word"):  # JSON made their int keys strings
        tables[name] = {int(k): v for k, v in tables[name].items()}
    tokenizer = Tokenizer(**config)
    vars(tokenizer).update(tables)
    return tokenizer
