"""Lists of word-id sequences held flat (one int64 array plus the lengths), so Keras' text data
set steps (shuffle, offsets, length filter, vocabulary limit) run as NumPy array operations on
millions of ids instead of Python loops, with the same results."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Ragged"]


@dataclass(frozen=True)
class Ragged:
    """Sequences ``flat[starts[i] : starts[i] + lengths[i]]``."""

    flat: np.ndarray
    lengths: np.ndarray

    @classmethod
    def from_lists(cls, seqs: Any) -> Ragged:
        """From a list or object array of sequences of ints."""
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        flat = np.fromiter(
            itertools.chain.from_iterable(seqs), dtype=np.int64, count=int(lengths.sum())
        )
        return cls(flat, lengths)

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    def take(self, order: np.ndarray) -> Ragged:
        """The sequences ``order`` (indices), in that order."""
        lengths = self.lengths[order]
        first = np.repeat(self.starts[order], lengths)
        within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return Ragged(self.flat[first + within], lengths)

    def offset(self, start_char: int | None, index_from: int) -> Ragged:
        """Every id plus ``index_from``, and ``start_char`` first in each (Keras' order)."""
        flat = self.flat + index_from if index_from else self.flat.copy()
        if start_char is None:
            return Ragged(flat, self.lengths)
        return Ragged(np.insert(flat, self.starts, start_char), self.lengths + 1)

    def limit_words(self, num_words: int, skip_top: int, oov_char: int | None) -> Ragged:
        """Ids outside ``[skip_top, num_words)`` become ``oov_char`` (or are dropped)."""
        inside = (self.flat >= skip_top) & (self.flat < num_words)
        if oov_char is not None:
            return Ragged(np.where(inside, self.flat, oov_char), self.lengths)
        segment = np.repeat(np.arange(len(self)), self.lengths)
        return Ragged(self.flat[inside], np.bincount(segment[inside], minlength=len(self)))

    def concat(self, other: Ragged) -> Ragged:
        return Ragged(
            np.concatenate([self.flat, other.flat]), np.concatenate([self.lengths, other.lengths])
        )

    def split(self, index: int) -> tuple[Ragged, Ragged]:
        """The first ``index`` sequences and the rest."""
        cut = int(self.lengths[:index].sum())
        return Ragged(self.flat[:cut], self.lengths[:index]), Ragged(
            self.flat[cut:], self.lengths[index:]
        )

    def to_object_array(self) -> np.ndarray:
        """As Keras returns them: an object array of Python lists of ints."""
        ids = self.flat.tolist()
        bounds = np.concatenate([[0], np.cumsum(self.lengths)]).tolist()
        out = np.empty(len(self), dtype=object)
        out[:] = [ids[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        return out
