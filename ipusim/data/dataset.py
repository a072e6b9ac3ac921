"""A tf.data-like ``Dataset``: immutable, re-iterable input pipelines over numpy arrays.

Elements are numpy arrays (numpy scalars for rank 0), or tuples / dicts nesting them, exactly as
``tf.data`` structures go. Every transformation returns a new ``Dataset``; each ``iter()`` starts
a fresh pass.

ipusim is deterministic by default: ``shuffle(seed=None)`` uses :data:`DEFAULT_SHUFFLE_SEED`
rather than fresh entropy, so two runs of one script see the same order. With
``reshuffle_each_iteration=True`` (the default) each pass over a shuffle draws its own order
from ``(seed, number of passes that shuffle has started so far)``: epochs differ from each
other, and a freshly built pipeline replays the same sequence of epochs.

``from_tensor_slices(...).shuffle(...).batch(b)`` gathers whole batches with numpy fancy
indexing instead of stacking elements one by one; the order and the random draws are the same
as on the element-by-element path.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator
from typing import Any

from ipusim.data import _nest, _order, _sources, _transforms
from ipusim.data._node import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Node
from ipusim.errors import InputDataError, InvalidTypeError, UnsupportedError
from ipusim.graph.spec import TensorSpec, canonical_dtype

__all__ = [
    "AUTOTUNE",
    "DEFAULT_SHUFFLE_SEED",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Cardinality",
    "Dataset",
    "DatasetIterator",
]

#: Seed used by ``shuffle(seed=None)``; fixed so that ipusim runs are reproducible.
DEFAULT_SHUFFLE_SEED = 0


class Cardinality(int):
    """An ``int`` that also answers ``.numpy()``, as the scalar tensor TF returns does."""

    def numpy(self) -> int:
        return int(self)


class DatasetIterator:
    """One pass over a dataset; ``next()`` (or ``get_next()``) returns the next element."""

    __slots__ = ("_elements", "_node")

    def __init__(self, elements: Iterator[Any], node: Node) -> None:
        self._elements = elements
        self._node = node

    @property
    def element_spec(self) -> Any:
        return self._node.element_spec

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        if _next_hook is not None:
            traced = _next_hook(self)
            if traced is not NotImplemented:
                return traced
        return next(self._elements)

    def get_next(self) -> Any:
        return next(self)


#: Called by ``next()`` on every DatasetIterator; returns the element to use instead of reading
#: one, or NotImplemented to read as usual (the compat runtime traces a dequeue here when an
#: iterator captured by a traced function is read while tracing).
_next_hook: Callable[[DatasetIterator], Any] | None = None


def set_iterator_next_hook(hook: Callable[[DatasetIterator], Any] | None) -> None:
    """Install (or remove, with None) the :data:`_next_hook` of dataset iterators."""
    global _next_hook
    _next_hook = hook


class Dataset:
    """A sequence of elements and the operations that produced it.

    Build one with :meth:`from_tensor_slices`, :meth:`from_tensors`, :meth:`range`,
    :meth:`from_generator` or :meth:`zip`; the constructor itself is internal.
    """

    AUTOTUNE = AUTOTUNE

    def __init__(self, node: Node) -> None:
        if not isinstance(node, Node):
            raise InvalidTypeError(
                "Dataset() is not built directly; use Dataset.from_tensor_slices(), "
                "from_tensors(), range() or from_generator()"
            )
        self._node = node

    # -- construction ---------------------------------------------------------------------------

    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> Dataset:
        """One element per row of ``tensors`` (sliced along the first dimension).

        Args:
            tensors: an array (or anything ``np.asarray`` accepts), or a tuple / dict nesting of
                arrays that all have the same first dimension. The data is copied. Python
                numbers follow ``tf.constant``: floats become float32, ints int32.
            name: ignored; accepted for TF compatibility.

        Raises:
            ValueError: if a component is a scalar or the first dimensions differ.
        """
        return Dataset(_sources.TensorSlices(tensors))

    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> Dataset:
        """A dataset of exactly one element, ``tensors``."""
        return Dataset(_sources.from_tensors(tensors))

    @staticmethod
    def range(*args: int, output_type: object = "int64", name: str | None = None) -> Dataset:
        """Integers like Python's ``range(stop)`` / ``range(start, stop[, step])`` (int64).

        Raises:
            TypeError: for a wrong number of arguments or non-integers.
            ValueError: if ``step`` is 0.
        """
        if not 1 <= len(args) <= 3:
            raise InvalidTypeError(
                f"range() takes 1 to 3 integers (stop | start, stop[, step]) but received "
                f"{len(args)}: {args}"
            )
        for arg in args:
            _require_int("range() argument", arg)
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        if step == 0:
            raise InputDataError("range() step must not be 0; pass a positive or negative step")
        dtype = canonical_dtype(output_type)
        return Dataset(_sources.Range(int(start), int(stop), int(step), dtype))

    @staticmethod
    def from_generator(
        generator: Callable[..., Any],
        output_types: Any = None,
        output_shapes: Any = None,
        args: tuple[Any, ...] | None = None,
        output_signature: Any = None,
        name: str | None = None,
    ) -> Dataset:
        """Elements yielded by ``generator(*args)``, called afresh on every pass.

        Each element is checked against the signature: values are converted to the signature's
        dtype (as TF does, so float64 data fits a float32 spec), and shapes must agree wherever
        the signature gives a size. The cardinality is unknown.

        Args:
            generator: a callable returning an iterator, typically a generator function.
            output_types: deprecated TF form of the signature (dtype structure); needs
                ``output_shapes``.
            output_shapes: shapes matching ``output_types``.
            args: arguments for ``generator``.
            output_signature: a (nested) ``TensorSpec`` structure.
            name: ignored; accepted for TF compatibility.

        Raises:
            TypeError: if ``generator`` is not callable or the signature is malformed.
            ValueError: if both or neither signature forms are given.
        """
        if not callable(generator):
            raise InvalidTypeError(
                f"from_generator() expects `generator` to be a callable returning an iterator, "
                f"but received {type(generator).__name__}; pass the generator function itself "
                f"(`gen`, not `gen()`)"
            )
        signature = _generator_signature(output_types, output_shapes, output_signature)
        return Dataset(_sources.Generator(generator, tuple(args or ()), signature))

    @staticmethod
    def zip(*args: Any, datasets: Any = None, name: str | None = None) -> Dataset:
        """Combine datasets element by element; stops with the shortest.

        Call as ``Dataset.zip((a, b))``, ``Dataset.zip(a, b)``, ``Dataset.zip({"x": a})`` or
        ``Dataset.zip(datasets=...)``. Elements nest like the datasets do.
        """
        if datasets is not None and args:
            raise InvalidTypeError("zip() takes the datasets either positionally or as `datasets=`")
        if datasets is None:
            if not args:
                raise InvalidTypeError("zip() needs at least one dataset")
            datasets = args[0] if len(args) == 1 else args
        leaves = _nest.flatten(datasets)
        for path, leaf in _nest.flatten_with_paths(datasets):
            if not isinstance(leaf, Dataset):
                raise InvalidTypeError(
                    f"zip() expects a (nested) tuple or dict of Datasets, but the entry at "
                    f"{path or 'the top'} is {type(leaf).__name__}; wrap arrays with "
                    f"Dataset.from_tensor_slices() first"
                )
        return Dataset(_transforms.Zip(datasets, [ds._node for ds in leaves]))

    # -- transformations ------------------------------------------------------------------------

    def map(
        self,
        map_func: Callable[..., Any],
        num_parallel_calls: int | None = None,
        deterministic: bool | None = None,
        name: str | None = None,
    ) -> Dataset:
        """Apply ``map_func`` to every element.

        A tuple element is passed as positional arguments (``lambda x, y: ...``); a dict or an
        array as one argument. A returned list becomes a tuple, as in TF. The output spec is
        inferred by calling ``map_func`` on zero-filled example elements.

        Args:
            map_func: the function to apply.
            num_parallel_calls: accepted for TF compatibility (``None``, ``AUTOTUNE`` or a
                positive int); elements are processed in order either way.
            deterministic: accepted for TF compatibility; the output is always deterministic.
            name: ignored; accepted for TF compatibility.
        """
        _require_callable("map", "map_func", map_func)
        _check_parallel_calls(num_parallel_calls)
        return Dataset(_transforms.Map(self._node, map_func, num_parallel_calls=num_parallel_calls))

    def filter(self, predicate: Callable[..., Any], name: str | None = None) -> Dataset:
        """Keep the elements for which ``predicate`` returns a scalar boolean True."""
        _require_callable("filter", "predicate", predicate)
        return Dataset(_transforms.Filter(self._node, predicate))

    def batch(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_calls: int | None = None,
        deterministic: bool | None = None,
        name: str | None = None,
    ) -> Dataset:
        """Stack ``batch_size`` consecutive elements along a new leading axis.

        Nested elements are batched component by component. The last batch is smaller unless
        ``drop_remainder`` is True, in which case it is dropped and the element spec's leading
        dimension is ``batch_size`` (otherwise ``None``).

        Raises:
            ValueError: if ``batch_size`` is not a positive integer.
        """
        _require_int("batch_size", batch_size, minimum=1, hint="e.g. batch(32)")
        _check_parallel_calls(num_parallel_calls)
        return Dataset(_transforms.Batch(self._node, int(batch_size), bool(drop_remainder)))

    def unbatch(self, name: str | None = None) -> Dataset:
        """Split each element along its first dimension into separate elements."""
        return Dataset(_transforms.Unbatch(self._node))

    def shuffle(
        self,
        buffer_size: int,
        seed: int | None = None,
        reshuffle_each_iteration: bool = True,
        name: str | None = None,
    ) -> Dataset:
        """Randomly shuffle with TF's buffer algorithm (a full shuffle when ``buffer_size >= n``).

        Args:
            buffer_size: number of elements held in the buffer.
            seed: seed of the ``numpy.random.Generator``; ``None`` means
                :data:`DEFAULT_SHUFFLE_SEED` (ipusim is deterministic by default).
            reshuffle_each_iteration: draw a new (reproducible) order on every pass; with False
                every pass repeats the first order.
            name: ignored; accepted for TF compatibility.

        Raises:
            ValueError: if ``buffer_size`` is not a positive integer.
        """
        _require_int("buffer_size", buffer_size, minimum=1, hint="e.g. shuffle(len(x_train))")
        if seed is None:
            seed = DEFAULT_SHUFFLE_SEED
        _require_int("seed", seed)
        node = _order.Shuffle(
            self._node, int(buffer_size), int(seed) % 2**64, bool(reshuffle_each_iteration)
        )
        return Dataset(node)

    def repeat(self, count: int | None = None, name: str | None = None) -> Dataset:
        """Repeat the dataset ``count`` times (``None`` or -1: forever)."""
        count = -1 if count is None else count
        _require_int("count", count, minimum=-1, hint="None or -1 repeats forever")
        return Dataset(_order.Repeat(self._node, int(count)))

    def take(self, count: int, name: str | None = None) -> Dataset:
        """The first ``count`` elements (-1: all of them)."""
        _require_int("count", count, minimum=-1, hint="-1 takes everything")
        return Dataset(_order.Take(self._node, int(count)))

    def skip(self, count: int, name: str | None = None) -> Dataset:
        """All but the first ``count`` elements (-1: skip everything)."""
        _require_int("count", count, minimum=-1, hint="-1 skips everything")
        return Dataset(_order.Skip(self._node, int(count)))

    def shard(self, num_shards: int, index: int, name: str | None = None) -> Dataset:
        """Every ``num_shards``-th element starting at element ``index``: the part of the data
        one of ``num_shards`` workers reads (``dataset.shard(popdist.getNumInstances(),
        popdist.getInstanceIndex())``).

        Raises:
            ValueError: ``num_shards`` below 1 or ``index`` below 0 (TypeError: not integers).
            InputDataError: ``index`` not below ``num_shards``.
        """
        _require_int("num_shards", num_shards, minimum=1, hint="the number of workers")
        _require_int("index", index, minimum=0, hint="this worker's index")
        if index >= num_shards:
            raise InputDataError(
                f"Dataset.shard: index ({index}) must be smaller than num_shards ({num_shards}); "
                "give this worker's index in [0, num_shards)."
            )
        return Dataset(_order.Shard(self._node, int(num_shards), int(index)))

    def prefetch(self, buffer_size: int, name: str | None = None) -> Dataset:
        """Pass-through that records ``buffer_size`` (``AUTOTUNE`` allowed) for timing models.

        The simulated host pipeline reads this value; no threads are started.
        """
        _require_int("buffer_size", buffer_size, minimum=-1, hint="AUTOTUNE (-1) or a count")
        return Dataset(_order.Prefetch(self._node, int(buffer_size)))

    def cache(self, filename: str = "", name: str | None = None) -> Dataset:
        """Keep the elements of the first complete pass in memory and replay them afterwards.

        Raises:
            NotImplementedError: for a ``filename`` other than ``""`` (no on-disk cache).
        """
        if filename != "":
            raise UnsupportedError(
                f"cache(filename={filename!r}): ipusim only caches in memory; call cache() "
                f"without a filename"
            )
        return Dataset(_order.Cache(self._node))

    def enumerate(self, start: int = 0, name: str | None = None) -> Dataset:
        """Pair each element with its int64 position: ``(i, element)``, counting from ``start``."""
        _require_int("start", start)
        return Dataset(_transforms.Enumerate(self._node, int(start)))

    def concatenate(self, dataset: Dataset, name: str | None = None) -> Dataset:
        """The elements of this dataset followed by those of ``dataset``.

        Raises:
            TypeError: if the element structures, dtypes or ranks differ.
        """
        if not isinstance(dataset, Dataset):
            raise InvalidTypeError(
                f"concatenate() expects a Dataset but received {type(dataset).__name__}; wrap "
                f"arrays with Dataset.from_tensor_slices() first"
            )
        return Dataset(_transforms.Concatenate(self._node, dataset._node))

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """Return ``transformation_func(self)``."""
        _require_callable("apply", "transformation_func", transformation_func)
        return transformation_func(self)

    # -- inspection -----------------------------------------------------------------------------

    @property
    def element_spec(self) -> Any:
        """The ``TensorSpec`` structure of one element."""
        return self._node.element_spec

    def cardinality(self) -> Cardinality:
        """Number of elements, or ``INFINITE_CARDINALITY`` (-1) / ``UNKNOWN_CARDINALITY`` (-2)."""
        return Cardinality(self._node.cardinality())

    def __len__(self) -> int:
        n = self._node.cardinality()
        if n == INFINITE_CARDINALITY:
            raise InvalidTypeError("The dataset is infinite, so it has no len(); use cardinality()")
        if n == UNKNOWN_CARDINALITY:
            raise InvalidTypeError(
                "The dataset length is unknown (it contains filter() or from_generator()); "
                "use cardinality(), or take(n) to fix the length"
            )
        return n

    def __bool__(self) -> bool:
        # Without this, `if dataset:` would call __len__, which raises for infinite datasets.
        return True

    def __iter__(self) -> DatasetIterator:
        return DatasetIterator(self._node.iterate(), self._node)

    def as_numpy_iterator(self) -> DatasetIterator:
        """An iterator over the elements as numpy values (the same as ``iter(dataset)``)."""
        return iter(self)

    def __repr__(self) -> str:
        try:
            spec = repr(self._node.element_spec)
        except (TypeError, ValueError) as exc:
            spec = f"<could not infer: {exc}>"
        return f"<{self._node.kind} element_spec={spec}>"


# ---------------------------------------------------------------------------------------------
# Argument checks


def _require_int(what: str, value: Any, minimum: int | None = None, hint: str = "") -> None:
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and (minimum is None or value >= minimum):
        return
    wanted = {None: "an integer", 1: "a positive integer", -1: "an integer >= -1"}.get(
        minimum, f"an integer >= {minimum}"
    )
    fix = f"; {hint}" if hint else ""
    error = ValueError if ok else TypeError
    raise error(f"{what} must be {wanted}, but received {value!r}{fix}")


def _require_callable(method: str, argument: str, value: Any) -> None:
    if not callable(value):
        raise InvalidTypeError(
            f"{method}() expects `{argument}` to be a function, but received "
            f"{type(value).__name__} {value!r:.60}; pass a function or lambda, e.g. "
            f"{method}(lambda x, y: ...)"
        )


def _check_parallel_calls(value: Any) -> None:
    if value is None or value == AUTOTUNE:
        return
    _require_int("num_parallel_calls", value, minimum=1, hint="use None, AUTOTUNE or a count")


def _generator_signature(output_types: Any, output_shapes: Any, output_signature: Any) -> Any:
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise InputDataError(
                "from_generator(): pass either output_signature or output_types/output_shapes, "
                "not both; output_signature is the preferred form"
            )
        for path, leaf in _nest.flatten_with_paths(output_signature):
            if not isinstance(leaf, TensorSpec):
                raise InvalidTypeError(
                    f"from_generator(): output_signature must be a (nested) TensorSpec "
                    f"structure, but the entry at {path or 'the top'} is "
                    f"{type(leaf).__name__}; use TensorSpec(shape=..., dtype=...)"
                )
        return output_signature
    if output_types is None:
        raise InputDataError(
            "from_generator() needs output_signature (a TensorSpec structure describing each "
            "element), e.g. output_signature=(TensorSpec((28, 28), 'float32'), "
            "TensorSpec((), 'int32'))"
        )
    if output_shapes is None:
        raise InputDataError(
            "from_generator(): output_types without output_shapes leaves the element ranks "
            "unknown, which ipusim cannot simulate; pass output_shapes too, or output_signature"
        )
    return _specs_from_types(output_types, output_shapes)


def _specs_from_types(types: Any, shapes: Any) -> Any:
    """Pair a dtype structure with a shape structure (shapes are tuples, so walk the types)."""
    if isinstance(types, tuple):
        if not isinstance(shapes, tuple | list) or len(shapes) != len(types):
            raise InputDataError(
                f"from_generator(): output_shapes {shapes} does not match the nesting of "
                f"output_types {types}; give one shape per dtype"
            )
        items = [_specs_from_types(t, s) for t, s in zip(types, shapes, strict=True)]
        return type(types)(*items) if _nest.is_namedtuple(types) else tuple(items)
    if isinstance(types, dict):
        if not isinstance(shapes, dict) or set(shapes) != set(types):
            raise InputDataError(
                f"from_generator(): output_shapes {shapes} does not have the keys of "
                f"output_types {types}; give one shape per key"
            )
        return {key: _specs_from_types(types[key], shapes[key]) for key in types}
    shape = getattr(shapes, "shape", shapes)  # accept a TensorSpec-like or a plain tuple
    return TensorSpec(tuple(shape), canonical_dtype(types))


def _opaque(dataset: Dataset) -> Dataset:
    """The same dataset without its index plan (forces the element-by-element path; tests)."""
    return Dataset(_transforms.Opaque(dataset._node))
