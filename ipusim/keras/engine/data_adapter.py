"""Turn what ``fit``/``evaluate``/``predict`` receive into batches: numpy arrays or a Dataset."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from itertools import islice
from operator import itemgetter
from typing import Any

import numpy as np

from ipusim.data import Dataset
from ipusim.data.dataset import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from ipusim.errors import InputDataError
from ipusim.keras import backend
from ipusim.keras.engine.nest import flatten, map_structure
from ipusim.keras.utils_data import Sequence

Batch = tuple[Any, Any, Any]  # (x, y, sample_weight), each a structure of arrays or None


def unpack_x_y_sample_weight(data: Any) -> Batch:
    """``x`` / ``(x,)`` / ``(x, y)`` / ``(x, y, sample_weight)`` as Keras unpacks them."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if 1 <= len(data) <= 3:
        return (*data, None, None)[:3]  # y and sample_weight None when not given
    raise InputDataError(
        f"Data is expected to be (x,), (x, y) or (x, y, sample_weight); received a "
        f"tuple of {len(data)} elements"
    )


_SCALARS = (bool, int, float, complex, str, bytes, np.generic)


def is_list_of_scalars(value: Any) -> bool:
    """Whether ``value`` is a (nested) list of numbers, which Keras reads as one array (its
    ``ListsOfScalarsDataAdapter``), rather than a list of several inputs."""
    while isinstance(value, list | tuple):
        if not value:
            return False
        value = value[0]
    return isinstance(value, _SCALARS)


def as_arrays(data: Any) -> Any:
    """The arrays of ``x`` / ``y`` / ``sample_weight`` as Keras reads them: a (nested) list of
    numbers is one array; any other structure is kept and each of its leaves made an array."""
    if data is None or isinstance(data, Dataset | Sequence) or _is_iterator(data):
        return data
    if isinstance(data, list | tuple) and is_list_of_scalars(data):
        return np.asarray(data)
    return map_structure(np.asarray, data)


def check_batch_size(batch_size: Any, what: str, argument: str = "batch_size") -> int:
    """``batch_size`` (32 when None) after checking it is a positive integer.

    Raises:
        InputDataError: zero, negative, or not an integer.
    """
    if batch_size is None:
        return 32
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, int | np.integer)
        or batch_size <= 0
    ):
        raise InputDataError(
            f"{what}: `{argument}` must be a positive integer (samples per batch), received "
            f"{batch_size!r}. Pass e.g. {argument}=32, or leave it unset for 32."
        )
    return int(batch_size)


def check_steps(steps: Any, what: str) -> int | None:
    """``steps_per_epoch`` (fit) or ``steps`` (evaluate / predict) after checking it.

    Raises:
        InputDataError: zero, negative, or not an integer.
    """
    if steps is None:
        return None
    name = "steps_per_epoch" if what == "fit" else "steps"
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps <= 0:
        raise InputDataError(
            f"{what}: `{name}` must be a positive integer (batches per epoch) or None for one "
            f"pass over the data, received {steps!r}."
        )
    return int(steps)


def check_dataset_not_empty(dataset: Dataset, what: str) -> None:
    """Raise a clear error for a Dataset that yields nothing (cardinality 0).

    Raises:
        InputDataError: the dataset is empty, e.g. fewer elements than one batch with
            ``drop_remainder=True``.
    """
    if int(dataset.cardinality()) == 0:
        raise InputDataError(
            f"{what}: the Dataset passed as `x` yields no elements (its cardinality is 0), so "
            "there is nothing to run. If it was batched with drop_remainder=True it holds fewer "
            "elements than one batch: batch it with a smaller batch size, or give it more data "
            "(e.g. .repeat())."
        )


def _num_samples(arrays: Any, what: str) -> int:
    shapes = [np.shape(a) for a in flatten(arrays) if a is not None]
    if any(len(shape) == 0 for shape in shapes):
        raise InputDataError(
            f"{what}: every input array needs a first (batch) dimension, but one is a scalar; "
            "pass arrays of shape (samples, ...)."
        )
    sizes = {int(shape[0]) for shape in shapes}
    if len(sizes) != 1:
        raise InputDataError(
            f"all {what} arrays must have the same number of samples (first "
            f"dimension); received sizes {sorted(sizes)}"
        )
    return sizes.pop()


class DataHandler:
    """Yields per-epoch iterators of batches and knows how many steps an epoch has.

    Args:
        x, y, sample_weight: numpy arrays (or structures of them), or x a Dataset.
        batch_size: batch size for arrays (default 32); ignored for a Dataset, as in tf.keras.
        steps_per_epoch: steps per epoch; default: one pass over the data.
        shuffle: shuffle arrays each epoch (ignored for Datasets).
    """

    def __init__(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        batch_size: int | None = None,
        steps_per_epoch: int | None = None,
        shuffle: bool = False,
        what: str = "fit",
    ) -> None:
        self._iterator: Iterator[Any] | None = None
        self.dataset: Dataset | None = None
        self.arrays: Batch | None = None
        if isinstance(x, Sequence):  # keras.utils.Sequence: a Dataset of its batches
            x = sequence_dataset(x)
        self.user_steps = check_steps(steps_per_epoch, what)
        if isinstance(x, Dataset):
            if y is not None:
                raise InputDataError(
                    f"{what}: `y` must not be given when `x` is a Dataset (the "
                    "dataset yields (x, y) pairs)"
                )
            # tf.keras ignores `batch_size` with a Dataset (its DatasetAdapter takes it among
            # **kwargs and never reads it), silently: the dataset's own batches are used.
            self.dataset = x
            check_dataset_not_empty(x, what)
            cardinality = int(x.cardinality())
            if cardinality == INFINITE_CARDINALITY and self.user_steps is None:
                raise InputDataError(
                    f"{what}: the dataset is infinite; pass `steps_per_epoch` "
                    "(or `steps`) to say how many batches make an epoch"
                )
            if cardinality == UNKNOWN_CARDINALITY and self.user_steps is None:
                raise InputDataError(
                    "Could not infer the size of the data. You must specify the "
                    "number of steps to run."
                )
            self.cardinality = cardinality
            self.steps = self.user_steps if self.user_steps is not None else cardinality
            # Keras keeps one iterator across epochs when the user's steps do not cover the
            # dataset exactly; otherwise every epoch starts the dataset anew.
            self._recreate = self.user_steps is None or cardinality == self.user_steps
            self.arrays = None
            return
        if _is_iterator(x):
            raise InputDataError(
                f"{what}: the provided data is of type {type(x).__name__}, whose shapes cannot be "
                "known ahead of time. Wrap it with ipusim.data.Dataset.from_generator() giving "
                "an output_signature."
            )
        if x is None:
            raise InputDataError(f"{what}: no input data was provided (`x` is None)")
        self.batch_size = check_batch_size(batch_size, what)
        x, y = as_arrays(x), as_arrays(y)
        sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        n = _num_samples([a for a in (x, y, sample_weight) if a is not None], "input")
        if n == 0:
            raise InputDataError(
                f"{what}: `x` holds 0 samples; there is nothing to "
                f"{'train on' if what == 'fit' else 'run'}. Pass arrays with at least one "
                "sample (shape (samples, ...))."
            )
        self.arrays = (x, y, sample_weight)
        self.num_samples = n
        self.shuffle = shuffle
        self.steps = -(-n // self.batch_size) if self.user_steps is None else self.user_steps
        self.dataset = None
        self._recreate = True

    def epoch_iterator(self) -> Iterator[Batch]:
        """An iterator over the batches of the next epoch (exactly ``steps`` of them at most)."""
        if self.dataset is not None:
            if self._recreate or self._iterator is None:
                self._iterator = iter(self.dataset)
            return _take(map(unpack_x_y_sample_weight, self._iterator), self.steps)
        assert self.arrays is not None  # set whenever there is no dataset
        x, y, sw = self.arrays
        n = self.num_samples
        order = backend.make_rng().permutation(n) if self.shuffle else None

        def batches() -> Iterator[Batch]:
            produced = 0
            while produced < self.steps:
                for start in range(0, n, self.batch_size):
                    if produced >= self.steps:
                        return
                    idx = (
                        order[start : start + self.batch_size]
                        if order is not None
                        else slice(start, start + self.batch_size)
                    )
                    rows = itemgetter(idx)  # a -> a[idx]
                    yield (
                        map_structure(rows, x),
                        None if y is None else map_structure(rows, y),
                        None if sw is None else sw[idx],
                    )
                    produced += 1
                if self.user_steps is None:
                    return

        return batches()


def _take(iterator: Iterator[Batch], steps: int) -> Iterator[Batch]:
    count = 0
    for item in islice(iterator, steps):
        count += 1
        yield item
    if count < steps:
        warnings.warn(
            "Your input ran out of data; interrupting training. Make sure that your "
            "dataset can generate at least `steps_per_epoch * epochs` batches (you may "
            "need to use the repeat() function when building your dataset).",
            stacklevel=3,
        )


def _is_iterator(x: Any) -> bool:
    return hasattr(x, "__next__") or (callable(getattr(x, "send", None)))


def train_validation_split(
    arrays: tuple[Any, ...], validation_split: float
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Split numpy arrays: the last ``validation_split`` fraction becomes validation data."""
    if not 0 < validation_split < 1:
        raise InputDataError(f"`validation_split` must be in (0, 1), received {validation_split}")
    n = _num_samples([a for a in arrays if a is not None], "input")
    split = int(n * (1.0 - validation_split))
    if split == 0 or split == n:
        raise InputDataError(
            f"validation_split={validation_split} leaves no samples for training or "
            f"for validation ({n} samples in all)"
        )

    def part(index: slice) -> tuple[Any, ...]:
        return tuple(
            None if a is None else map_structure(lambda v: np.asarray(v)[index], a) for a in arrays
        )

    return part(slice(None, split)), part(slice(split, None))


def _class_weights(class_weight: dict[int, float], y: Any, sample_weight: Any) -> np.ndarray:
    """Keras' per-sample weights from ``class_weight`` for labels ``y`` (class ids, or one-hot
    / probabilities on the last axis), multiplied into ``sample_weight`` when given."""
    table = np.asarray([class_weight[c] for c in range(len(class_weight))], dtype=np.float32)
    labels = np.asarray(y)
    if labels.ndim >= 2:
        labels = labels.argmax(-1) if labels.shape[-1] > 1 else np.round(labels[..., 0])
    else:
        labels = np.round(labels)
    labels = labels.astype(np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= len(table)):
        raise InputDataError(
            f"fit: `class_weight` has weights for classes 0..{len(table) - 1} but the labels "
            f"hold class {int(labels.max() if labels.max() >= len(table) else labels.min())}"
        )
    weights: np.ndarray = table[labels]
    if sample_weight is None:
        return weights
    sw = np.asarray(sample_weight)
    expanded = sw.reshape(sw.shape + (1,) * (weights.ndim - sw.ndim))
    weighted: np.ndarray = expanded * weights.astype(sw.dtype)
    return weighted


def apply_class_weight(class_weight: Any, x: Any, y: Any, sample_weight: Any) -> Batch:
    """``fit(class_weight=...)`` as tf.keras: the weights become sample weights.

    Returns:
        ``(x, y, sample_weight)``; for a Dataset ``x``, a Dataset yielding ``(x, y, weights)``.

    Raises:
        InputDataError: the keys are not exactly ``0 .. n-1`` (Keras' rule), the model has
            several outputs, or a label has no weight.
    """
    if not isinstance(class_weight, dict) or sorted(class_weight) != list(range(len(class_weight))):
        raise InputDataError(
            "Expected `class_weight` to be a dict with keys from 0 to one less than the number "
            f"of classes, found {class_weight}"
        )
    if isinstance(x, Dataset):

        def weigh(*element: Any) -> Batch:
            ex, ey, esw = unpack_x_y_sample_weight(element)
            if isinstance(ey, list | tuple | dict):
                raise InputDataError(
                    "`class_weight` is only supported for Models with a single output."
                )  # noqa: E501
            return ex, ey, _class_weights(class_weight, ey, esw)

        return x.map(weigh), None, None
    if isinstance(y, list | tuple | dict):
        raise InputDataError("`class_weight` is only supported for Models with a single output.")
    return x, y, _class_weights(class_weight, y, sample_weight)


def sequence_dataset(sequence: Any) -> Dataset:
    """A ``keras.utils.Sequence`` as a Dataset of its ``len(sequence)`` batches (one pass per
    epoch; ``on_epoch_end`` runs after the last batch of each pass).

    Batches must keep the first batch's shapes: the IPU runs one compiled program, so a smaller
    last batch is refused, as IPU Keras refuses partial batches.
    """
    count = len(sequence)
    if count == 0:
        raise InputDataError("the Sequence has no batches (len(sequence) == 0)")

    def batch(index: Any) -> Any:
        item = sequence[int(index)]
        if int(index) == count - 1:
            sequence.on_epoch_end()
        return tuple(item) if isinstance(item, list) else item

    return Dataset.range(count).map(batch)
