"""Transformation nodes that touch the elements: map, filter, enumerate, batch, unbatch, zip,
concatenate. (Shuffle, repeat, take, skip, prefetch and cache live in ``_order``.)
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ipusim.data import _nest
from ipusim.data._node import (
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Node,
    group_chunks,
)
from ipusim.errors import InputDataError, InvalidTypeError
from ipusim.graph.spec import TensorSpec


def fn_name(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def call_unpacked(fn: Callable[..., Any], element: Any) -> Any:
    """Call ``fn`` the way tf.data does: a plain tuple is spread over positional arguments."""
    if type(element) is tuple:
        return fn(*element)
    return fn(element)


# ---------------------------------------------------------------------------------------------
# Element-wise


class Map(Node):
    kind = "MapDataset"

    def __init__(self, input_: Node, fn: Callable[..., Any], **params: Any) -> None:
        super().__init__(input_, fn=fn, **params)
        self.fn = fn

    def _apply(self, element: Any) -> Any:
        result = call_unpacked(self.fn, element)
        if isinstance(result, list):  # tf.data packs a returned list into a tuple
            result = tuple(result)
        if result is None:
            raise InvalidTypeError(
                f"map(): the function {fn_name(self.fn)} returned None; it must return an array "
                f"or a tuple/dict of arrays (did it forget a `return`?)"
            )
        return _nest.normalize(result)

    def iterate(self) -> Iterator[Any]:
        return map(self._apply, self.input.iterate())

    def compute_spec(self) -> Any:
        """Trace the function on zero-filled examples (TF traces it symbolically instead).

        Unknown input dimensions are filled with 1 and then with 2; output dimensions that
        change between the two calls depend on them and are reported as ``None``.
        """
        input_spec = self.input.element_spec
        first = self._trace(input_spec, 1)
        has_unknown = any(None in spec.shape for spec in _nest.flatten(input_spec))
        if not has_unknown:
            return first
        second = self._trace(input_spec, 2)
        if not _nest.same_structure(first, second):
            return first
        return _nest.map_structure(_merge_unknown, first, second)

    def _trace(self, input_spec: Any, fill: int) -> Any:
        example = _nest.zeros_like_spec(input_spec, fill)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                output = self._apply(example)
        except Exception as exc:
            raise InputDataError(
                f"map(): could not infer the element_spec of {fn_name(self.fn)}; ipusim calls it "
                f"once on a zero-filled element shaped like {input_spec} (unknown sizes set to "
                f"{fill}) and that raised {type(exc).__name__}: {exc}. Make the function accept "
                f"such an element"
            ) from exc
        return _nest.element_structure_spec(output)


def _merge_unknown(a: TensorSpec, b: TensorSpec) -> TensorSpec:
    if a.rank != b.rank:
        return a
    shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape, strict=True))
    return a.with_shape(shape)


class Filter(Node):
    kind = "FilterDataset"

    def __init__(self, input_: Node, predicate: Callable[..., Any], **params: Any) -> None:
        super().__init__(input_, predicate=predicate, **params)
        self.predicate = predicate

    def cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def iterate(self) -> Iterator[Any]:
        return filter(self._keep, self.input.iterate())

    def _keep(self, element: Any) -> bool:
        verdict = call_unpacked(self.predicate, element)
        if isinstance(verdict, bool | np.bool_):
            return bool(verdict)
        array = np.asarray(verdict)
        if array.dtype != np.bool_ or array.ndim != 0:
            raise InvalidTypeError(
                f"filter(): the predicate {fn_name(self.predicate)} must return a scalar boolean, "
                f"but returned {type(verdict).__name__} with dtype {array.dtype} and shape "
                f"{array.shape}; return e.g. `label == 3` or `np.all(...)`"
            )
        return bool(array)


class Enumerate(Node):
    kind = "ZipDataset"  # TF builds enumerate() as zip(range(start, inf), dataset)

    def __init__(self, input_: Node, start: int, **params: Any) -> None:
        super().__init__(input_, start=start, **params)
        self.start = start

    def compute_spec(self) -> Any:
        return (TensorSpec((), "int64"), self.input.element_spec)

    def iterate(self) -> Iterator[Any]:
        elements = self.input.iterate()
        return ((np.int64(i), el) for i, el in zip(itertools.count(self.start), elements))


# ---------------------------------------------------------------------------------------------
# Batching


class Batch(Node):
    kind = "BatchDataset"

    def __init__(self, input_: Node, batch_size: int, drop_remainder: bool, **params: Any):
        super().__init__(input_, batch_size=batch_size, drop_remainder=drop_remainder, **params)
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder

    def compute_spec(self) -> Any:
        lead = self.batch_size if self.drop_remainder else None
        return _nest.map_structure(
            lambda s: s.with_shape((lead, *s.shape)), self.input.element_spec
        )

    def cardinality(self) -> int:
        n = self.input.cardinality()
        if n < 0:
            return n
        full, rest = divmod(n, self.batch_size)
        return full + (1 if rest and not self.drop_remainder else 0)

    def iterate(self) -> Iterator[Any]:
        source = self.input.index_source()
        if source is not None:
            groups = group_chunks(self.input.indices(), self.batch_size, self.drop_remainder)
            return map(source.gather, groups)
        return self._stacked(self.input.iterate())

    def _stacked(self, elements: Iterator[Any]) -> Iterator[Any]:
        size = self.batch_size
        while True:
            group = list(itertools.islice(elements, size))
            if not group or (len(group) < size and self.drop_remainder):
                return
            yield stack(group)
            if len(group) < size:
                return


def stack(group: list[Any]) -> Any:
    """Stack elements component-wise along a new leading axis."""
    template = group[0]
    if not _nest.is_nested(template):
        columns: list[Sequence[Any]] = [group]
    else:
        columns = list(zip(*(_nest.flatten(el) for el in group), strict=True))
    stacked = []
    for path_leaf, column in zip(_nest.flatten_with_paths(template), columns, strict=True):
        try:
            stacked.append(np.stack(column))
        except ValueError:
            shapes = sorted({np.shape(v) for v in column})
            where = f"component {path_leaf[0]}" if path_leaf[0] else "elements"
            raise InputDataError(
                f"batch(): cannot stack {where} of different shapes {shapes} into one batch; "
                f"make every element the same shape first (e.g. with map()) or batch(1)"
            ) from None
    return _nest.pack_as(template, stacked)


class Unbatch(Node):
    kind = "UnbatchDataset"

    def __init__(self, input_: Node, **params: Any) -> None:
        super().__init__(input_, **params)
        for spec in _nest.flatten(input_.element_spec):
            if spec.rank == 0:
                raise InputDataError(
                    f"unbatch() splits every component along its first dimension, but the input "
                    f"has a scalar component ({spec}); only unbatch datasets of arrays"
                )

    def compute_spec(self) -> Any:
        return _nest.map_structure(lambda s: s.with_shape(s.shape[1:]), self.input.element_spec)

    def cardinality(self) -> int:
        leading = {spec.shape[0] for spec in _nest.flatten(self.input.element_spec)}
        if len(leading) != 1 or None in leading:
            return UNKNOWN_CARDINALITY
        n = self.input.cardinality()
        return n if n < 0 else n * leading.pop()

    def iterate(self) -> Iterator[Any]:
        return self._split(self.input.iterate())

    def _split(self, elements: Iterator[Any]) -> Iterator[Any]:
        for element in elements:
            leaves = _nest.flatten(element)
            sizes = {np.shape(leaf)[0] for leaf in leaves}
            if len(sizes) != 1:
                raise InputDataError(
                    f"unbatch(): the components of one element have different first dimensions "
                    f"{sorted(sizes)}; every component must hold the same number of rows"
                )
            pack = _nest.make_packer(element)
            for row in range(sizes.pop()):
                yield pack([leaf[row] for leaf in leaves])


# ---------------------------------------------------------------------------------------------
# Several inputs


class Zip(Node):
    kind = "ZipDataset"

    def __init__(self, structure: Any, nodes: list[Node], **params: Any) -> None:
        super().__init__(*nodes, **params)
        self.structure = structure

    def compute_spec(self) -> Any:
        return _nest.pack_as(self.structure, [node.element_spec for node in self.inputs])

    def cardinality(self) -> int:
        result = INFINITE_CARDINALITY
        for node in self.inputs:
            n = node.cardinality()
            if n == UNKNOWN_CARDINALITY:
                return n
            if n != INFINITE_CARDINALITY and (result == INFINITE_CARDINALITY or n < result):
                result = n
        return result

    def iterate(self) -> Iterator[Any]:
        passes = [node.iterate() for node in self.inputs]
        pack = _nest.make_packer(self.structure)
        return (pack(list(elements)) for elements in zip(*passes, strict=False))


class Concatenate(Node):
    kind = "ConcatenateDataset"

    def __init__(self, first: Node, second: Node, **params: Any) -> None:
        super().__init__(first, second, **params)
        a, b = first.element_spec, second.element_spec
        if not _nest.same_structure(a, b) or any(
            x.dtype != y.dtype or x.rank != y.rank
            for x, y in zip(_nest.flatten(a), _nest.flatten(b), strict=True)
        ):
            raise InvalidTypeError(
                f"concatenate() needs datasets with the same structure, dtypes and ranks, but "
                f"this dataset has element_spec {a} and the other has {b}; map one of them to "
                f"match the other first"
            )

    def compute_spec(self) -> Any:
        a, b = (node.element_spec for node in self.inputs)
        return _nest.map_structure(_merge_unknown, a, b)

    def cardinality(self) -> int:
        n1, n2 = (node.cardinality() for node in self.inputs)
        if INFINITE_CARDINALITY in (n1, n2):
            return INFINITE_CARDINALITY
        if UNKNOWN_CARDINALITY in (n1, n2):
            return UNKNOWN_CARDINALITY
        return n1 + n2

    def iterate(self) -> Iterator[Any]:
        first, second = self.inputs
        return itertools.chain(first.iterate(), _deferred(second))


def _deferred(node: Node) -> Iterator[Any]:
    yield from node.iterate()


class Opaque(Node):
    """Hides the index plan of its input, forcing the element-by-element path (for tests)."""

    kind = "OpaqueDataset"

    def iterate(self) -> Iterator[Any]:
        return self.input.iterate()
