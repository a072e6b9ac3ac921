"""``keras.preprocessing.sequence``: padding, time-series windows, skip-gram sampling tables.

Pure NumPy, with tf.keras' semantics (``pad_sequences`` is also ``keras.utils.pad_sequences``).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InputDataError, InvalidTypeError
from ipusim.keras.keyword_init import fields
from ipusim.keras.utils_data import Sequence

__all__ = ["TimeseriesGenerator", "make_sampling_table", "pad_sequences"]


def _lengths_and_sample_shape(sequences: Any) -> tuple[list[int], tuple[int, ...]]:
    lengths: list[int] = []
    sample_shape: tuple[int, ...] = ()
    found = False
    for item in sequences:
        try:
            lengths.append(len(item))
        except TypeError as exc:
            raise InputDataError(
                f"pad_sequences: `sequences` must be a list of iterables. Found non-iterable: "
                f"{item!r}"
            ) from exc
        if not found and len(item):
            sample_shape = np.asarray(item).shape[1:]
            found = True
    return lengths, sample_shape


def pad_sequences(
    sequences: Any,
    maxlen: int | None = None,
    dtype: Any = "int32",
    padding: str = "pre",
    truncating: str = "pre",
    value: Any = 0.0,
) -> np.ndarray:
    """Pad (or truncate) sequences to one length, as ``keras.utils.pad_sequences``.

    Args:
        sequences: a list of sequences (lists or arrays, whose items may be arrays too).
        maxlen: the length of every output row; default: the longest sequence.
        dtype: the output dtype (``object`` or a string dtype for strings).
        padding: ``"pre"`` or ``"post"``: where the padding goes.
        truncating: ``"pre"`` or ``"post"``: which end of a longer sequence is dropped.
        value: the padding value.

    Returns:
        An array of shape ``(len(sequences), maxlen) + item_shape``.

    Raises:
        InputDataError: items are not iterable or have different shapes (a ValueError).
        ConfigurationError: bad ``padding`` / ``truncating``, or a string ``value`` with a
            numeric dtype (a ValueError).
    """
    if not hasattr(sequences, "__len__"):
        raise InputDataError("pad_sequences: `sequences` must be iterable.")
    if padding not in ("pre", "post"):
        raise ConfigurationError(f'pad_sequences: Padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ConfigurationError(f'pad_sequences: Truncating type "{truncating}" not understood')
    lengths, sample_shape = _lengths_and_sample_shape(sequences)
    if maxlen is None:
        maxlen = int(np.max(lengths)) if lengths else 0
    is_str = dtype is not object and np.issubdtype(np.dtype(dtype), np.str_)
    if isinstance(value, str) and dtype is not object and not is_str:
        raise ConfigurationError(
            f"pad_sequences: `dtype` {dtype} is not compatible with `value`'s type: "
            f"{type(value)}. You should set `dtype=object` for variable length strings."
        )
    out = np.full((len(lengths), maxlen, *sample_shape), value, dtype=dtype)
    for idx, seq in enumerate(sequences):
        if not len(seq) or maxlen == 0:
            continue
        kept = np.asarray(seq[-maxlen:] if truncating == "pre" else seq[:maxlen], dtype=dtype)
        if kept.shape[1:] != sample_shape:
            raise InputDataError(
                f"pad_sequences: Shape of sample {kept.shape[1:]} of sequence at position "
                f"{idx} is different from expected shape {sample_shape}"
            )
        if padding == "post":
            out[idx, : len(kept)] = kept
        else:
            out[idx, -len(kept) :] = kept
    return out


def make_sampling_table(size: int, sampling_factor: float = 1e-5) -> np.ndarray:
    """Word-rank sampling probabilities for skip-grams (Zipf-based, as Keras / word2vec)."""
    gamma = 0.577  # S: Euler-Mascheroni, rounded as keras.preprocessing.sequence uses it
    rank = np.arange(size)
    rank[0] = 1
    inv_fq = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_fq
    return np.minimum(1.0, f / np.sqrt(f))


class TimeseriesGenerator(Sequence):
    """Batches of windows over a time series (``keras.preprocessing.sequence``'s class).

    Args:
        data: the series (indexable; axis 0 is time).
        targets: one target per time step (same length as ``data``).
        length: steps of history in each window.
        sampling_rate: take every ``sampling_rate``-th step inside a window.
        stride: steps between consecutive windows.
        start_index / end_index: the first / last steps used as window ends' targets.
        shuffle: draw windows at random (from NumPy's global generator, as Keras).
        reverse: windows in reverse time order.
        batch_size: windows per batch.
    """

    def __init__(
        self,
        data: Any,
        targets: Any,
        length: int,
        sampling_rate: int = 1,
        stride: int = 1,
        start_index: int = 0,
        end_index: int | None = None,
        shuffle: bool = False,
        reverse: bool = False,
        batch_size: int = 128,
    ) -> None:
        if len(data) != len(targets):
            raise InputDataError(
                f"TimeseriesGenerator: Data and targets have to be of same length. Data "
                f"length is {len(data)} while target length is {len(targets)}"
            )
        self.data, self.targets = data, targets
        self.length, self.sampling_rate, self.stride = length, sampling_rate, stride
        self.start_index = start_index + length
        self.end_index = len(data) - 1 if end_index is None else end_index
        self.shuffle, self.reverse, self.batch_size = shuffle, reverse, batch_size
        if self.start_index > self.end_index:
            raise ConfigurationError(
                f"TimeseriesGenerator: `start_index+length={self.start_index} > "
                f"end_index={self.end_index}` is disallowed, as no part of the sequence would "
                "be left to be used as current step."
            )

    def __len__(self) -> int:
        span = self.batch_size * self.stride
        return (self.end_index - self.start_index + span) // span

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            first = self.start_index + self.batch_size * self.stride * index
            last = min(first + self.batch_size * self.stride, self.end_index + 1)
            rows = np.arange(first, last, self.stride)
        samples = np.array(
            [self.data[row - self.length : row : self.sampling_rate] for row in rows]
        )
        targets = np.array([self.targets[row] for row in rows])
        return (samples[:, ::-1, ...], targets) if self.reverse else (samples, targets)

    def get_config(self) -> dict[str, Any]:
        def as_json(values: Any, what: str) -> str:
            values = values.tolist() if isinstance(values, np.ndarray) else values
            try:
                return json.dumps(values)
            except TypeError as exc:
                raise InvalidTypeError(f"{what} not JSON Serializable: {values!r:.80}") from exc

        return {
            "data": as_json(self.data, "Data"),
            "targets": as_json(self.targets, "Targets"),
            **fields(
                self, "length sampling_rate stride start_index end_index shuffle reverse batch_size"
            ),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(
            {"class_name": type(self).__name__, "config": self.get_config()}, **kwargs
        )
