"""Synthetic stand-ins with the shapes, dtypes, vocabularies and label ranges of the Keras data
sets (used only when the real files are not on disk; see :mod:`ipusim.data.datasets._store`).

Each generator is deterministic (a fixed seed per data set), so runs on synthetic data repeat
exactly. The figures that shape them are the real data sets' published sizes:

* MNIST / Fashion-MNIST: 60,000 + 10,000 uint8 images of 28x28, uint8 labels 0-9 (S: Keras
  docs, keras.io/api/datasets/mnist and fashion_mnist).
* CIFAR-10 / CIFAR-100: 50,000 + 10,000 uint8 images 32x32x3; labels (N, 1), 10 classes;
  100 fine / 20 coarse classes (S: cs.toronto.edu/~kriz/cifar.html and Keras' loaders).
* IMDB: 25,000 + 25,000 reviews, binary labels, a word index of 88,584 words (S: Keras docs,
  keras.io/api/datasets/imdb); review lengths log-normal with median 178 and mean ~235 words
  (M: the real training split's median is 178 and mean 238.7).
* Reuters: 11,228 newswires in 46 topics, a word index of 30,979 words (S: keras.io/api/
  datasets/reuters); lengths log-normal, median 95 (M: median 95, mean 145.5).
* Boston housing: 506 samples of 13 float64 features, float64 prices in thousands of dollars
  (S: keras.io/api/datasets/boston_housing); 5.0-50.0 as in the original data.
"""

from __future__ import annotations

import numpy as np

from ipusim.data.datasets._ragged import Ragged

__all__ = [
    "IMDB",
    "REUTERS",
    "TextSpec",
    "boston_housing",
    "images",
    "text",
    "word_index",
]

_SEEDS = {"mnist": 1, "fashion_mnist": 2, "cifar10": 3, "cifar100": 4, "imdb": 5, "reuters": 6}


class TextSpec:
    """The figures of a Keras text data set that its synthetic stand-in reproduces."""

    def __init__(self, name: str, samples: int, words: int, classes: int, median: float,
                 sigma: float, max_len: int) -> None:  # fmt: skip
        self.name = name
        self.samples = samples
        self.words = words
        self.classes = classes
        self.median = median
        self.sigma = sigma
        self.max_len = max_len


#: IMDB: 50,000 reviews (25,000 per split, stored as two arrays), labels 0/1.
IMDB = TextSpec("imdb", 50_000, 88_584, 2, 178.0, 0.75, 2_494)
#: Reuters: 11,228 newswires, 46 topics.
REUTERS = TextSpec("reuters", 11_228, 30_979, 46, 95.0, 0.85, 2_376)


def images(
    name: str, count: int, shape: tuple[int, ...], classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` uint8 images of ``shape`` and uint8 labels in ``[0, classes)``.

    Each class has its own mean brightness pattern plus noise, so a model can fit them (the
    data is learnable, not the real task).
    """
    rng = np.random.default_rng([_SEEDS[name], count])
    labels = rng.integers(0, classes, count).astype(np.uint8)
    patterns = rng.integers(40, 216, (classes, *shape), dtype=np.int16)
    pixels = np.empty((count, *shape), dtype=np.uint8)
    for start in range(0, count, 5_000):  # in chunks: the int16 sums of all 60,000 would be big
        part = labels[start : start + 5_000]
        noise = rng.integers(-40, 41, (part.size, *shape), dtype=np.int16)
        pixels[start : start + part.size] = np.clip(patterns[part] + noise, 0, 255)
    return pixels, labels


def text(spec: TextSpec) -> tuple[Ragged, np.ndarray]:
    """Raw sequences of word ranks (1 = most frequent, as in Keras' files) and int64 labels.

    Ranks follow Zipf's law (probability ~ 1/rank), as word frequencies in text do.
    """
    rng = np.random.default_rng(_SEEDS[spec.name])
    lengths = np.clip(
        np.rint(rng.lognormal(np.log(spec.median), spec.sigma, spec.samples)), 10, spec.max_len
    ).astype(np.int64)
    total = int(lengths.sum())
    ranks = np.floor(np.exp(rng.uniform(0.0, np.log(spec.words + 1), total))).astype(np.int64)
    labels = rng.integers(0, spec.classes, spec.samples).astype(np.int64)
    return Ragged(np.clip(ranks, 1, spec.words), lengths), labels


def word_index(spec: TextSpec) -> dict[str, int]:
    """A word index of the real size: ``"word<rank>"`` -> rank (the real words are not known)."""
    return {f"word{rank}": rank for rank in range(1, spec.words + 1)}


def boston_housing() -> tuple[np.ndarray, np.ndarray]:
    """506 samples of 13 float64 features in the real columns' ranges, float64 prices 5-50."""
    rng = np.random.default_rng(7)
    # Column ranges of the original data (CRIM ... LSTAT), S: Harrison & Rubinfeld (1978) via
    # the UCI description; drawn uniformly inside them.
    low = np.array([0.006, 0, 0.46, 0, 0.385, 3.56, 2.9, 1.13, 1, 187, 12.6, 0.32, 1.73])
    high = np.array([89.0, 100, 27.7, 1, 0.871, 8.78, 100, 12.1, 24, 711, 22.0, 396.9, 37.97])
    x = rng.uniform(low, high, (506, 13))
    x[:, 3] = np.round(x[:, 3])  # CHAS is a 0/1 dummy
    x[:, 8] = np.round(x[:, 8])  # RAD is an index
    y = np.clip(np.round(rng.normal(22.5, 9.2, 506), 1), 5.0, 50.0)
    return x, y
