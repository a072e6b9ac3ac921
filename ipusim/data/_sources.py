"""Source nodes: tensor slices, a single tensor, integer ranges and Python generators."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ipusim.data import _nest
from ipusim.data._node import UNKNOWN_CARDINALITY, Node, arange_chunks
from ipusim.data._transforms import fn_name
from ipusim.errors import InputDataError, InvalidTypeError
from ipusim.graph.spec import TensorSpec, canonical_dtype


class TensorSlices(Node):
    """Rows of one or more arrays sharing their first dimension (``from_tensor_slices``)."""

    kind = "TensorSliceDataset"

    def __init__(self, tensors: Any, *, kind: str | None = None) -> None:
        super().__init__()
        if kind is not None:
            self.kind = kind
        structure = _nest.normalize(tensors)
        pairs = _nest.flatten_with_paths(structure)
        leaves = []
        for path, leaf in pairs:
            array = np.array(leaf, copy=True)  # later edits to the caller's array don't leak in
            if array.ndim == 0:
                where = f"component {path} " if path else ""
                raise InputDataError(
                    f"from_tensor_slices() slices along the first dimension, but the {where}"
                    f"value is a scalar (shape ()); pass arrays with at least one dimension, or "
                    f"use from_tensors() for a dataset of one element"
                )
            array.flags.writeable = False
            leaves.append(array)
        sizes = {
            path or "tensors": leaf.shape[0] for (path, _), leaf in zip(pairs, leaves, strict=True)
        }
        if len(set(sizes.values())) > 1:
            listing = ", ".join(f"{path} has {size}" for path, size in sizes.items())
            raise InputDataError(
                f"from_tensor_slices() needs every component to have the same size in the first "
                f"dimension (the number of elements), but {listing}; slice or pad the arrays so "
                f"their first dimensions agree"
            )
        self.leaves: list[np.ndarray] = leaves
        self.n: int = leaves[0].shape[0]
        self._template = structure
        self._pack = _nest.make_packer(structure)
        self.params = {"n": self.n}

    def compute_spec(self) -> Any:
        specs = [TensorSpec(leaf.shape[1:], canonical_dtype(leaf.dtype)) for leaf in self.leaves]
        return _nest.pack_as(self._template, specs)

    def cardinality(self) -> int:
        return self.n

    def index_source(self) -> TensorSlices:
        return self

    def indices(self) -> Iterator[np.ndarray]:
        return arange_chunks(self.n)

    def get(self, index: int) -> Any:
        return self._pack([leaf[index] for leaf in self.leaves])

    def gather(self, indices: np.ndarray) -> Any:
        return self._pack([leaf[indices] for leaf in self.leaves])


def from_tensors(tensors: Any) -> TensorSlices:
    """A one-element dataset: slice each component after adding a leading axis of size 1."""
    structure = _nest.normalize(tensors)
    expanded = _nest.map_structure(lambda leaf: np.asarray(leaf)[np.newaxis], structure)
    return TensorSlices(expanded, kind="TensorDataset")


class Range(Node):
    """``range(start, stop, step)`` as scalars of an integer dtype."""

    kind = "RangeDataset"

    def __init__(self, start: int, stop: int, step: int, dtype: str) -> None:
        super().__init__(start=start, stop=stop, step=step, dtype=dtype)
        self.start, self.step = start, step
        self.n = len(range(start, stop, step))
        self.dtype: np.dtype[np.generic] = np.dtype(dtype)

    def compute_spec(self) -> TensorSpec:
        return TensorSpec((), self.dtype.name)

    def cardinality(self) -> int:
        return self.n

    def index_source(self) -> Range:
        return self

    def indices(self) -> Iterator[np.ndarray]:
        return arange_chunks(self.n)

    def get(self, index: int) -> np.generic:
        return self.dtype.type(self.start + index * self.step)

    def gather(self, indices: np.ndarray) -> np.ndarray:
        return (self.start + indices * self.step).astype(self.dtype)


class Generator(Node):
    """Elements yielded by a fresh call of ``generator(*args)`` on every pass."""

    kind = "FlatMapDataset"  # the class TF reports for from_generator datasets

    def __init__(
        self, generator: Callable[..., Any], args: tuple[Any, ...], signature: Any
    ) -> None:
        super().__init__(generator=generator, args=args)
        self.generator = generator
        self.args = args
        self._spec = signature

    def cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def iterate(self) -> Iterator[Any]:
        source = self.generator(*self.args)
        try:
            values = iter(source)
        except TypeError:
            raise InvalidTypeError(
                f"from_generator() calls `generator` to get an iterator, but "
                f"{fn_name(self.generator)} returned {type(source).__name__}, which is not "
                f"iterable; make it a generator function (one that uses `yield`)"
            ) from None
        return self._checked(values)

    def _checked(self, values: Iterator[Any]) -> Iterator[Any]:
        spec = self.element_spec
        for count, value in enumerate(values):
            yield conform(value, spec, count)


def conform(value: Any, spec: Any, count: int) -> Any:
    """Check a generator's element against the signature and cast it to the signature dtypes."""
    if isinstance(spec, tuple):
        if not isinstance(value, tuple | list) or len(value) != len(spec):
            raise _structure_error(value, spec, count)
        items = [conform(v, s, count) for v, s in zip(value, spec, strict=True)]
        return type(spec)(*items) if _nest.is_namedtuple(spec) else tuple(items)
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise _structure_error(value, spec, count)
        return {key: conform(value[key], spec[key], count) for key in spec}
    try:
        array = np.asarray(value, dtype=spec.dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidTypeError(
            f"from_generator(): element {count} could not be converted to the signature's dtype "
            f"{spec.dtype} (received {type(value).__name__} {value!r:.60}: {exc}); yield values "
            f"of that dtype or change output_signature"
        ) from None
    shape = array.shape
    if len(shape) != spec.rank or any(
        want is not None and got != want for got, want in zip(shape, spec.shape, strict=True)
    ):
        raise InputDataError(
            f"from_generator(): element {count} has shape {shape} but output_signature expects "
            f"{spec.shape} (None matches any size); yield arrays of that shape or relax the "
            f"signature"
        )
    return array[()] if array.ndim == 0 else array


def _structure_error(value: Any, spec: Any, count: int) -> InvalidTypeError:
    return InvalidTypeError(
        f"from_generator(): element {count} does not match the structure of output_signature: "
        f"expected {_nest.describe(spec)} but the generator yielded {type(value).__name__} "
        f"{value!r:.80}; yield elements nested like the signature"
    )
