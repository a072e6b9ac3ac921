"""String preprocessing layers of tf.keras 2 on the host: StringLookup and TextVectorization.

Strings are not IPU tensors: in an IPU program these layers run in the input pipeline (a
``Dataset.map`` or before ``fit``), on the host, as in IPU TensorFlow. ipusim runs them there
with NumPy and Python strings; called on a model's symbolic tensor they raise UnsupportedError
(IPU TensorFlow cannot compile them either). Their host cost is the input pipeline's map cost
(:mod:`ipusim.data.host_cost`).

Vocabularies follow Keras: learned by ``adapt`` most frequent first, ties by the larger token;
in "int" mode index 0 is the mask token (TextVectorization: ``""``), then the OOV index, then
the vocabulary; the encodings (one_hot, multi_hot, count) have no mask index.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InputDataError, UnsupportedError
from ipusim.graph.graph import Symbol
from ipusim.keras.engine.keras_tensor import KerasTensor
from ipusim.keras.engine.layer import Layer
from ipusim.keras.keyword_init import fields
from ipusim.keras.layers.categorical import VocabularyLayer, _mode

#: Keras' DEFAULT_STRIP_REGEX (tf_keras/src/layers/preprocessing/text_vectorization.py). S
STRIP_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def as_strings(values: Any, encoding: str = "utf-8") -> np.ndarray:
    """An object array of Python strings from strings, bytes or arrays of them."""
    array = np.asarray(values, dtype=object)
    flat = [v.decode(encoding) if isinstance(v, bytes) else str(v) for v in array.reshape(-1)]
    return np.array(flat, dtype=object).reshape(array.shape)


def _strings_of(data: Any, encoding: str) -> list[str]:
    if hasattr(data, "as_numpy_iterator"):
        return [s for b in data.as_numpy_iterator() for s in as_strings(b, encoding).reshape(-1)]
    return list(as_strings(data, encoding).reshape(-1))


def learned_vocabulary(tokens: list[str], exclude: set[str], limit: int | None) -> list[str]:
    """Tokens by descending count, ties by the larger token (Keras' ``lexsort(...)[::-1]``)."""
    counts = Counter(t for t in tokens if t not in exclude)
    ordered = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
    return ordered if limit is None else ordered[: max(limit, 0)]


def encode_ids(ids: np.ndarray, mode: str, depth: int) -> np.ndarray:
    """Keras' dense encodings of index arrays (negative ids, the dropped mask, are skipped)."""
    if mode == "one_hot":
        ids = ids[..., 0] if ids.ndim > 1 and ids.shape[-1] == 1 else ids
        out = np.zeros((*ids.shape, depth), np.float32)
        valid = ids >= 0
        out[(*np.nonzero(valid), ids[valid])] = 1.0
        return out
    rows = ids.reshape(-1, ids.shape[-1]) if ids.ndim > 1 else ids.reshape(1, -1)
    out = np.zeros((rows.shape[0], depth), np.float32)
    for r, row in enumerate(rows):
        np.add.at(out[r], row[row >= 0], 1.0)
    if mode == "multi_hot":
        out = np.minimum(out, 1.0)
    return out if ids.ndim > 1 else out[0]


class _HostLayer(Layer):
    """A layer that runs on the host on concrete strings (never in an IPU graph)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inputs = args[0] if args else kwargs.get("inputs")
        if isinstance(inputs, Symbol | KerasTensor):
            raise UnsupportedError(
                f"{type(self).__name__} works on strings, which are not IPU tensors: apply it in "
                "the input pipeline (e.g. dataset.map(layer)) or to the data before fit, as "
                "IPU TensorFlow requires"
            )
        return self.call(inputs)


class StringLookup(VocabularyLayer, _HostLayer):
    """Maps strings to integer indices by a vocabulary (given, or learned with :meth:`adapt`);
    ``invert`` maps indices back to strings. One OOV index (or none: unknown strings are an
    error); ``num_oov_indices`` > 1 (FarmHash buckets) is not simulated."""

    _token_type = "encoding"

    def __init__(
        self,
        max_tokens: int | None = None,
        num_oov_indices: int = 1,
        mask_token: str | None = None,
        oov_token: str = "[UNK]",
        vocabulary: Any = None,
        idf_weights: Any = None,
        encoding: str = "utf-8",
        invert: bool = False,
        output_mode: str = "int",
        sparse: bool = False,
        pad_to_max_tokens: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if num_oov_indices not in (0, 1):
            raise UnsupportedError(
                f"StringLookup: num_oov_indices={num_oov_indices} hashes OOV strings into buckets "
                "with FarmHash, which ipusim does not simulate for strings; use 0 or 1"
            )
        if idf_weights is not None or pad_to_max_tokens:
            raise UnsupportedError("StringLookup: idf_weights / pad_to_max_tokens not simulated")
        self.output_mode = _mode(type(self).__name__, output_mode, sparse)
        self.encoding = encoding
        self._init_vocabulary(max_tokens, num_oov_indices, mask_token, oov_token, invert)
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        tokens = list(as_strings(vocabulary, self.encoding).reshape(-1))
        if len(set(tokens)) != len(tokens):
            raise ConfigurationError("StringLookup: the vocabulary has repeated tokens")
        self._vocabulary = tokens

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learn the vocabulary from strings (an array, a list or a Dataset of them)."""
        start = self._token_start()
        limit = None if self.max_tokens is None else self.max_tokens - start
        exclude = {self.mask_token, self.oov_token}
        self._vocabulary = learned_vocabulary(_strings_of(data, self.encoding), exclude, limit)

    def lookup(self, strings: np.ndarray) -> np.ndarray:
        start = self._token_start()
        table = {t: start + i for i, t in enumerate(self._vocabulary)}
        if self.mask_token is not None:
            table[self.mask_token] = 0 if self.output_mode == "int" else -1
        oov = self._oov_start() if self.num_oov_indices else -1
        ids = np.array([table.get(s, oov) for s in strings.reshape(-1)], np.int64)
        if not self.num_oov_indices and (ids == -1).any():
            missing = sorted({s for s in strings.reshape(-1) if s not in table})[:10]
            raise InputDataError(
                f"When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values "
                f"{missing}; consider setting `num_oov_indices=1`"
            )
        return ids.reshape(strings.shape)

    def call(self, inputs: Any) -> Any:
        if self.invert:
            ids = np.asarray(inputs, dtype=np.int64)
            words = self.get_vocabulary()
            out = [words[i] if 0 <= i < len(words) else self.oov_token for i in ids.reshape(-1)]
            return np.array(out, dtype=object).reshape(ids.shape)
        ids = self.lookup(as_strings(inputs, self.encoding))
        if self.output_mode == "int":
            return ids
        return encode_ids(ids, self.output_mode, self.vocabulary_size())


_STANDARDIZE = (None, "lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = (None, "whitespace", "character")


class TextVectorization(_HostLayer):
    """Text to token indices (``output_mode="int"``: ``(batch, length)``, padded with 0 to the
    longest text or to ``output_sequence_length``) or to multi-hot / count / one-hot vectors.
    Standardisation, splitting and n-grams as Keras'; callables for ``standardize`` / ``split``
    (TensorFlow string functions) are not simulated."""

    def __init__(
        self,
        max_tokens: int | None = None,
        standardize: Any = "lower_and_strip_punctuation",
        split: Any = "whitespace",
        ngrams: Any = None,
        output_mode: str = "int",
        output_sequence_length: int | None = None,
        pad_to_max_tokens: bool = False,
        vocabulary: Any = None,
        idf_weights: Any = None,
        sparse: bool = False,
        ragged: bool = False,
        encoding: str = "utf-8",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if standardize not in _STANDARDIZE or split not in _SPLIT:
            raise UnsupportedError(
                f"TextVectorization: standardize={standardize!r} / split={split!r}: ipusim "
                f"simulates standardize in {_STANDARDIZE} and split in {_SPLIT} (TensorFlow "
                "string functions are not available)"
            )
        if ragged or idf_weights is not None:
            raise UnsupportedError("TextVectorization: ragged outputs / idf_weights not simulated")
        if output_mode is None:
            raise UnsupportedError(
                "TextVectorization: output_mode=None returns string tokens, which ipusim does "
                "not produce; use 'int', 'multi_hot' or 'count'"
            )
        if output_mode == "one_hot":
            raise ConfigurationError(
                "Unknown value for `output_mode` argument of layer TextVectorization. Allowed "
                "values are: ('int', 'count', 'multi_hot', 'tf_idf'). Received: one_hot"
            )
        self.output_mode = _mode(type(self).__name__, output_mode, sparse)
        if output_sequence_length is not None and self.output_mode != "int":
            raise ConfigurationError(
                "`output_sequence_length` must not be set if `output_mode` is not 'int'"
            )
        if pad_to_max_tokens and max_tokens is None:  # as Keras' IndexLookup
            raise ConfigurationError(
                "TextVectorization: pad_to_max_tokens=True pads every output to max_tokens, so "
                f"max_tokens must be set; received max_tokens={max_tokens}. Pass max_tokens, or "
                "leave pad_to_max_tokens False"
            )
        self.max_tokens, self.standardize, self.split = max_tokens, standardize, split
        self.ngrams = tuple(ngrams) if isinstance(ngrams, list | tuple) else ngrams
        self.output_sequence_length = output_sequence_length
        self.pad_to_max_tokens, self.encoding = bool(pad_to_max_tokens), encoding
        self.sparse, self.ragged = False, False
        self._lookup = StringLookup(
            max_tokens=max_tokens,
            mask_token="" if self.output_mode == "int" else None,
            output_mode=self.output_mode,
            vocabulary=vocabulary,
            encoding=encoding,
            name=f"{self.name}/lookup",
        )

    def _tokens(self, text: str) -> list[str]:
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            text = text.translate(_ASCII_LOWER)  # tf.strings.lower: ASCII letters only
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            text = STRIP_PUNCTUATION.sub("", text)
        if self.split is None:
            tokens = [text]
        elif self.split == "character":
            tokens = list(text)
        else:
            tokens = text.split()
        if self.ngrams is None:
            return tokens
        widths = range(1, self.ngrams + 1) if isinstance(self.ngrams, int) else self.ngrams
        return [" ".join(tokens[i : i + n]) for n in widths for i in range(len(tokens) - n + 1)]

    def _texts(self, inputs: Any) -> list[str]:
        strings = as_strings(inputs, self.encoding)
        if strings.ndim == 2 and strings.shape[1] == 1:
            strings = strings[:, 0]
        if strings.ndim > 1:
            raise ConfigurationError(
                f"TextVectorization expects a batch of strings (batch,) or (batch, 1), received "
                f"shape {strings.shape}"
            )
        return list(strings.reshape(-1))

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learn the vocabulary from texts (an array, a list or a Dataset of them)."""
        tokens = [t for text in _strings_of(data, self.encoding) for t in self._tokens(text)]
        self._lookup.adapt(np.array(tokens, dtype=object))

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[str]:
        return self._lookup.get_vocabulary(include_special_tokens)

    def vocabulary_size(self) -> int:
        return self._lookup.vocabulary_size()

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        self._lookup.set_vocabulary(vocabulary)

    def call(self, inputs: Any) -> Any:
        token_lists = [self._tokens(t) for t in self._texts(inputs)]
        ids = [self._lookup.lookup(np.array(ts, dtype=object)) for ts in token_lists]
        if self.output_mode != "int":
            pad_to = self.max_tokens if self.pad_to_max_tokens else None  # set (see __init__)
            depth = self.vocabulary_size() if pad_to is None else pad_to
            rows = [encode_ids(row.reshape(1, -1), self.output_mode, depth)[0] for row in ids]
            return np.stack(rows) if rows else np.zeros((0, depth), np.float32)
        length = self.output_sequence_length or max((len(r) for r in ids), default=0)
        out = np.zeros((len(ids), length), np.int64)
        for r, row in enumerate(ids):
            out[r, : min(length, row.size)] = row[:length]
        return out

    def get_config(self) -> dict[str, Any]:
        ngrams = list(self.ngrams) if isinstance(self.ngrams, tuple) else self.ngrams
        return {
            **super().get_config(),
            **fields(self, "max_tokens standardize split"),
            "ngrams": ngrams,
            **fields(self, "output_mode output_sequence_length pad_to_max_tokens"),
            "vocabulary": self.get_vocabulary(include_special_tokens=False),
            **fields(self, "sparse ragged encoding"),
        }
