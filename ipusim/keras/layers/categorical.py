"""Numeric categorical preprocessing layers of tf.keras 2: CategoryEncoding, Discretization,
Hashing (integer inputs) and IntegerLookup (vocabulary given or learned with ``adapt``).

Lookups and bucketing are graph ops (binary searches, :mod:`ipusim.graph.ops.lookup`); the
encodings are one-hot ops and reductions. Inputs out of range are not checked at run time (Keras
raises InvalidArgumentError there): CategoryEncoding gives them an all-zero row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.graph.ops import shape as s
from ipusim.graph.ops.lookup import bucketize, hash_bucket, table_lookup
from ipusim.keras.engine.layer import Layer
from ipusim.keras.keyword_init import fields
from ipusim.keras.layers.core import _positive_int

ENCODINGS = ("one_hot", "multi_hot", "count")


def encode(inputs: Any, mode: str, depth: int, dtype: str, count_weights: Any = None) -> Any:
    """Keras' ``encode_categorical_inputs`` for dense inputs (``int`` passes the ids through)."""
    if mode == "int":
        return m.cast(inputs, "int64")
    ids = m.cast(inputs, "int32")
    if ids.ndim == 0:
        ids = s.expand_dims(ids, -1)
    if mode == "one_hot" and ids.shape[-1] != 1:
        ids = s.expand_dims(ids, -1)
    if ids.ndim > 2:
        raise ConfigurationError(
            f"When output_mode is not 'int', maximum supported output rank is 2. Received "
            f"output_mode {mode} and input shape {inputs.shape}"
        )
    hot = nn.one_hot(ids, depth, dtype=dtype)  # (..., n, depth)
    if count_weights is not None:
        hot = m.multiply(hot, s.expand_dims(m.cast(count_weights, dtype), -1))
    axis = hot.ndim - 2
    return m.reduce_sum(hot, axis=axis) if mode == "count" else m.reduce_max(hot, axis=axis)


def _mode(
    layer: str, mode: str, sparse: bool, allowed: tuple[str, ...] = ("int", *ENCODINGS)
) -> str:
    """``mode`` checked: one of ``allowed`` (tf_idf is not simulated), and dense outputs."""
    if sparse:
        raise UnsupportedError(
            f"{layer}: sparse=True is not simulated by ipusim (IPU tensors are dense); "
            "use sparse=False"
        )
    if mode == "tf_idf":
        raise UnsupportedError(f"{layer}: output_mode='tf_idf' is not simulated by ipusim")
    if mode not in allowed:
        raise ConfigurationError(
            f"{layer}: Unknown arg for output_mode: {mode!r}; expected one of {allowed}"
        )
    return mode


class CategoryEncoding(Layer):
    """Encodes integer ids in [0, num_tokens) as one-hot, multi-hot or count vectors."""

    def __init__(
        self,
        num_tokens: int | None = None,
        output_mode: str = "multi_hot",
        sparse: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if output_mode == "binary":  # Keras' old name
            output_mode = "multi_hot"
        self.output_mode = _mode("CategoryEncoding", output_mode, sparse, ENCODINGS)
        self.num_tokens = _positive_int("CategoryEncoding", "num_tokens", num_tokens)
        self.sparse = False

    def call(self, inputs: Any, count_weights: Any = None) -> Any:
        if count_weights is not None and self.output_mode != "count":
            raise ConfigurationError(
                "`count_weights` is not used when `output_mode` is not 'count'"
            )
        return encode(inputs, self.output_mode, self.num_tokens, self.compute_dtype, count_weights)

    _config_names = "num_tokens output_mode sparse"


class Discretization(Layer):
    """Buckets continuous values by ``bin_boundaries`` (or ``num_bins`` quantile boundaries
    learned with :meth:`adapt`); ``output_mode`` "int" gives bucket indices (int64), the others
    encode them like CategoryEncoding.

    ``adapt`` takes exact quantiles of the data; Keras' uses an approximate quantile sketch
    (``epsilon``), so on large data sets the boundaries may differ slightly.
    """

    def __init__(
        self,
        bin_boundaries: Any = None,
        num_bins: int | None = None,
        epsilon: float = 0.01,
        output_mode: str = "int",
        sparse: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.output_mode = _mode("Discretization", output_mode, sparse)
        if (bin_boundaries is None) == (num_bins is None):
            raise ConfigurationError(
                "Discretization: pass exactly one of `bin_boundaries` and `num_bins` "
                f"(received {bin_boundaries!r} and {num_bins!r})"
            )
        if num_bins is not None:  # so bin_boundaries is None
            self.bin_boundaries: list[float] | None = None
            self.num_bins = num_bins
        else:
            self.bin_boundaries = [float(b) for b in bin_boundaries]
            self.num_bins = len(self.bin_boundaries) + 1
        self.epsilon, self.sparse = float(epsilon), False

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Set ``num_bins - 1`` boundaries at the data's quantiles i / num_bins."""
        values = np.sort(np.asarray(_materialise(data), dtype=np.float64).reshape(-1))
        if values.size == 0:
            raise ConfigurationError("Discretization.adapt received no data")
        quantiles = np.arange(1, self.num_bins) / self.num_bins
        self.bin_boundaries = [float(b) for b in np.quantile(values, quantiles, method="lower")]

    def call(self, inputs: Any) -> Any:
        if self.bin_boundaries is None:
            raise ConfigurationError("Discretization: call adapt() first or pass `bin_boundaries`")
        buckets = bucketize(inputs, self.bin_boundaries)
        return encode(buckets, self.output_mode, self.num_bins, self.compute_dtype)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "bin_boundaries": self.bin_boundaries,
            "num_bins": None if self.bin_boundaries is not None else self.num_bins,
            **fields(self, "epsilon output_mode sparse"),
        }


def _materialise(data: Any) -> Any:
    """Arrays from ``data``: an array, a list, or an ipusim Dataset of arrays."""
    if hasattr(data, "as_numpy_iterator"):
        return np.concatenate([np.asarray(b).reshape(-1) for b in data.as_numpy_iterator()])
    return data


class VocabularyLayer(Layer):
    """What Keras' lookup layers (IntegerLookup, StringLookup) share: the index layout (the mask
    token at 0 in "int" mode, then the ``num_oov_indices`` OOV indices, then the vocabulary) and
    the config; ``_token_type`` names the attribute (and config key) of the tokens' type.
    Subclasses set ``output_mode`` and call :meth:`_init_vocabulary` from ``__init__``."""

    _token_type: str
    output_mode: str

    def _init_vocabulary(
        self, max_tokens: Any, num_oov_indices: int, mask_token: Any, oov_token: Any, invert: bool
    ) -> None:
        self.max_tokens, self.num_oov_indices = max_tokens, num_oov_indices
        self.mask_token, self.oov_token = mask_token, oov_token
        self.invert, self.sparse = bool(invert), False
        self._vocabulary: list[Any] = []

    def _oov_start(self) -> int:
        # The mask has an index of its own only in "int" mode, as in Keras.
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start(self) -> int:
        return self._oov_start() + self.num_oov_indices

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[Any]:
        special = [self.mask_token] if self._oov_start() else []
        special += [self.oov_token] * self.num_oov_indices
        return (special if include_special_tokens else []) + list(self._vocabulary)

    def vocabulary_size(self) -> int:
        return self._token_start() + len(self._vocabulary)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            **fields(self, "max_tokens num_oov_indices mask_token oov_token"),
            "vocabulary": list(self._vocabulary),
            self._token_type: getattr(self, self._token_type),
            **fields(self, "invert output_mode sparse"),
        }


class IntegerLookup(VocabularyLayer):
    """Maps integer tokens to contiguous indices by a vocabulary (given, or learned with
    :meth:`adapt`: most frequent first, ties by the larger token, as Keras); ``invert`` maps
    indices back to tokens.

    Index layout (as Keras): the mask token (if ``mask_token`` is set) at 0, then the
    ``num_oov_indices`` OOV indices (a token not in the vocabulary takes OOV index
    ``floormod(token, num_oov_indices)``; with none, it is an error), then the vocabulary. In the
    encoding output modes the mask token has no index and is dropped.
    """

    _token_type = "vocabulary_dtype"

    def __init__(
        self,
        max_tokens: int | None = None,
        num_oov_indices: int = 1,
        mask_token: int | None = None,
        oov_token: int = -1,
        vocabulary: Any = None,
        vocabulary_dtype: str = "int64",
        idf_weights: Any = None,
        invert: bool = False,
        output_mode: str = "int",
        sparse: bool = False,
        pad_to_max_tokens: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(num_oov_indices, bool) or not isinstance(num_oov_indices, int):
            raise ConfigurationError(
                f"IntegerLookup: `num_oov_indices` must be an int >= 0, received "
                f"{num_oov_indices!r}"
            )
        if num_oov_indices < 0:
            raise ConfigurationError(
                "`num_oov_indices` must be greater than or equal to 0. Received: "
                f"num_oov_indices={num_oov_indices}"
            )
        if idf_weights is not None or pad_to_max_tokens:
            raise UnsupportedError(
                "IntegerLookup: idf_weights and pad_to_max_tokens are not simulated by ipusim"
            )
        self.output_mode = _mode("IntegerLookup", output_mode, sparse)
        if invert and self.output_mode != "int":
            raise ConfigurationError("IntegerLookup: invert=True needs output_mode='int'")
        self.vocabulary_dtype = vocabulary_dtype
        self._init_vocabulary(max_tokens, num_oov_indices, mask_token, int(oov_token), invert)
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Use ``vocabulary`` (unique integers, without the mask and OOV tokens)."""
        if isinstance(vocabulary, str):
            raise UnsupportedError(
                "IntegerLookup: a vocabulary file is not read by ipusim; pass a list of ints"
            )
        tokens = [int(t) for t in np.asarray(vocabulary).reshape(-1)]
        if len(set(tokens)) != len(tokens):
            raise ConfigurationError("IntegerLookup: the vocabulary has repeated tokens")
        reserved = {self.oov_token, self.mask_token}
        if reserved & set(tokens):
            raise ConfigurationError(
                f"IntegerLookup: the vocabulary must not contain the OOV or mask token "
                f"({sorted(t for t in reserved if t is not None)})"
            )
        self._vocabulary = tokens

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learn the vocabulary: tokens by descending count (ties: larger token first)."""
        values = np.asarray(_materialise(data)).reshape(-1).astype(np.int64)
        keep = values != self.oov_token
        if self.mask_token is not None:
            keep &= values != self.mask_token
        values = values[keep]
        tokens, counts = np.unique(values, return_counts=True)
        order = np.lexsort((tokens, counts))[::-1]
        if self.max_tokens:
            order = order[: self.max_tokens - self._token_start()]
        self._vocabulary = [int(t) for t in tokens[order]]

    def call(self, inputs: Any) -> Any:
        start = self._token_start()
        indices = range(start, start + len(self._vocabulary))
        if self.invert:
            keys, values = list(indices), list(self._vocabulary)
            if self.mask_token is not None:
                keys, values = [0, *keys], [self.mask_token, *values]
            return table_lookup(inputs, keys, values, default=self.oov_token)
        keys, values = list(self._vocabulary), list(indices)
        if self.mask_token is not None:  # 0 in "int" mode, dropped (-1) by the encodings
            keys, values = (
                [self.mask_token, *keys],
                [0 if self.output_mode == "int" else -1, *values],
            )
        oov = self._oov_start()
        ids = table_lookup(
            inputs,
            keys,
            values,
            default=oov if self.num_oov_indices else -1,
            oov_buckets=self.num_oov_indices,
            strict=self.num_oov_indices == 0,
        )
        return encode(ids, self.output_mode, self.vocabulary_size(), self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self.output_mode == "int":
            return tuple(input_shape)
        last = input_shape[-1] if len(input_shape) else None
        keep_last = self.output_mode == "one_hot" and last != 1  # one_hot adds an axis
        return (*tuple(input_shape)[: None if keep_last else -1], self.vocabulary_size())


class Hashing(Layer):
    """Hashes integer inputs into ``num_bins`` buckets with TensorFlow's fast string hash of
    their decimal text (FarmHash, bit-exact with ``tf.strings.to_hash_bucket_fast``).
    ``mask_value`` maps to bucket 0 and the rest to 1..num_bins-1, as Keras."""

    def __init__(
        self,
        num_bins: int,
        mask_value: int | None = None,
        salt: Any = None,
        output_mode: str = "int",
        sparse: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        num_bins = _positive_int("Hashing", "num_bins", num_bins)
        if salt is not None:
            raise UnsupportedError(
                "Hashing: a `salt` selects SipHash (to_hash_bucket_strong), which ipusim does "
                "not implement; use salt=None"
            )
        self.num_bins, self.mask_value, self.salt = num_bins, mask_value, None
        self.output_mode, self.sparse = _mode("Hashing", output_mode, sparse), False

    def call(self, inputs: Any) -> Any:
        if inputs.dtype not in ("int8", "uint8", "int16", "int32", "int64"):
            raise UnsupportedError(
                f"Hashing: ipusim hashes integer inputs; received dtype {inputs.dtype} "
                "(strings are not IPU tensors)"
            )
        if self.mask_value is None or self.num_bins == 1:
            buckets = hash_bucket(inputs, self.num_bins)
        else:
            hashed = m.add(hash_bucket(inputs, self.num_bins - 1), 1)
            keep = m.subtract(1, m.cast(m.equal(inputs, self.mask_value), "int64"))
            buckets = m.multiply(hashed, keep)
        return encode(buckets, self.output_mode, self.num_bins, self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self.output_mode == "int":
            return tuple(input_shape)
        return (*tuple(input_shape)[:-1], self.num_bins)

    _config_names = "num_bins mask_value salt output_mode sparse"
