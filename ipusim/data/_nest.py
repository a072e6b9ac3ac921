"""Nested structures of dataset elements: tuples (and namedtuples) and dicts of leaves.

This follows ``tf.nest`` as ``tf.data`` uses it: tuples and dicts are structure, everything
else (arrays, scalars, and lists, which tf.data converts to tensors) is a leaf. Dict leaves are
flattened in sorted key order, so two dicts with the same keys flatten alike whatever their
insertion order; packing rebuilds the dict in the template's own key order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ipusim.errors import InputDataError, InvalidTypeError
from ipusim.graph.spec import TensorSpec, canonical_dtype


def is_namedtuple(value: object) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_nested(value: object) -> bool:
    return isinstance(value, tuple | dict)


def _sorted_keys(mapping: dict[Any, Any]) -> list[Any]:
    try:
        return sorted(mapping)
    except TypeError:  # keys of mixed types: keep insertion order
        return list(mapping)


def flatten(structure: Any) -> list[Any]:
    """Return the leaves of ``structure`` in a fixed order."""
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in _sorted_keys(structure) for leaf in flatten(structure[key])]
    return [structure]


def flatten_with_paths(structure: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Return ``(path, leaf)`` pairs; paths read like indexing code, e.g. ``[0]['image']``."""
    if isinstance(structure, tuple):
        return [
            pair
            for i, item in enumerate(structure)
            for pair in flatten_with_paths(item, f"{prefix}[{i}]")
        ]
    if isinstance(structure, dict):
        return [
            pair
            for key in _sorted_keys(structure)
            for pair in flatten_with_paths(structure[key], f"{prefix}[{key!r}]")
        ]
    return [(prefix, structure)]


def pack_as(template: Any, leaves: list[Any]) -> Any:
    """Rebuild ``template``'s nesting around ``leaves`` (as produced by :func:`flatten`)."""
    return _pack(template, iter(leaves))


def _pack(template: Any, leaves: Iterator[Any]) -> Any:
    if isinstance(template, tuple):
        items = [_pack(item, leaves) for item in template]
        return type(template)(*items) if is_namedtuple(template) else tuple(items)
    if isinstance(template, dict):
        values = {key: _pack(template[key], leaves) for key in _sorted_keys(template)}
        return {key: values[key] for key in template}
    return next(leaves)


def make_packer(template: Any) -> Callable[[list[Any]], Any]:
    """Return a fast ``leaves -> structure`` function for a fixed template."""
    if not is_nested(template):
        return lambda leaves: leaves[0]
    if type(template) is tuple and not any(is_nested(item) for item in template):
        return tuple
    return lambda leaves: pack_as(template, leaves)


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """Apply ``fn`` to matching leaves of structures that share one nesting."""
    first = structures[0]
    for other in structures[1:]:
        assert_same_structure(first, other)
    flat = [flatten(s) for s in structures]
    return pack_as(first, [fn(*leaves) for leaves in zip(*flat, strict=True)])


def describe(structure: Any) -> str:
    """Short text for a structure's nesting, leaves shown as ``*``."""
    if isinstance(structure, tuple):
        inner = ", ".join(describe(item) for item in structure)
        return f"({inner},)" if len(structure) == 1 else f"({inner})"
    if isinstance(structure, dict):
        return "{" + ", ".join(f"{k!r}: {describe(structure[k])}" for k in structure) + "}"
    return "*"


def same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_structure(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same_structure(a[k], b[k]) for k in a)
    return not is_nested(a) and not is_nested(b)


def assert_same_structure(a: Any, b: Any, what: str = "structures") -> None:
    if not same_structure(a, b):
        raise InputDataError(
            f"{what} must have the same nesting, but one is {describe(a)} "
            f"and the other is {describe(b)}"
        )


# ---------------------------------------------------------------------------------------------
# Leaves


def to_leaf(value: Any) -> np.ndarray | np.generic:
    """Convert one leaf to a numpy array or numpy scalar, with tf's dtype rules for Python data.

    numpy values keep their dtype (0-d arrays become numpy scalars, like TF's
    ``as_numpy_iterator``). Python numbers and lists are converted as ``tf.constant`` would:
    floats become float32 and ints int32 (int64 when they do not fit).

    Raises:
        TypeError: if the value is not numeric (``None``, strings, objects).
    """
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, np.generic):
        _check_dtype(value.dtype, value)
        return value
    else:
        array = np.asarray(value)
        if _is_python_data(value):
            if array.dtype == np.float64:
                array = array.astype(np.float32)
            elif array.dtype == np.int64 and _fits_int32(array):
                array = array.astype(np.int32)
    _check_dtype(array.dtype, value)
    return array[()] if array.ndim == 0 else array


def _is_python_data(value: Any) -> bool:
    """True for Python numbers and (nested) lists of them: the data tf.constant would type."""
    if isinstance(value, list | tuple):  # inside a list leaf, tuples are rows of data too
        return all(_is_python_data(item) for item in value)
    return isinstance(value, int | float) and not isinstance(value, np.generic)


def _fits_int32(array: np.ndarray) -> bool:
    if array.size == 0:
        return True
    info = np.iinfo(np.int32)
    return bool(array.min() >= info.min and array.max() <= info.max)


def _check_dtype(dtype: np.dtype, value: Any) -> None:
    try:
        canonical_dtype(dtype)
    except TypeError:
        raise InvalidTypeError(
            f"dataset elements must be numeric arrays (float16/32/64, int8/16/32/64, uint8 or "
            f"bool), but received {type(value).__name__} with dtype {dtype} ({value!r:.60}); "
            f"convert it to one of those dtypes"
        ) from None


def spec_of(value: np.ndarray | np.generic) -> TensorSpec:
    return TensorSpec(tuple(np.shape(value)), canonical_dtype(value.dtype))


def element_structure_spec(element: Any) -> Any:
    """Return the TensorSpec structure describing one (already normalised) element."""
    return pack_as(element, [spec_of(leaf) for leaf in flatten(element)])


def normalize(element: Any) -> Any:
    """Convert every leaf of a user-supplied structure with :func:`to_leaf`."""
    if isinstance(element, tuple):
        items = [normalize(item) for item in element]
        return type(element)(*items) if is_namedtuple(element) else tuple(items)
    if isinstance(element, dict):
        return {key: normalize(value) for key, value in element.items()}
    return to_leaf(element)


def zeros_like_spec(spec_structure: Any, unknown: int) -> Any:
    """Build a zero-filled element for a TensorSpec structure; ``None`` dims get ``unknown``."""

    def zeros(spec: TensorSpec) -> np.ndarray | np.generic:
        shape = tuple(unknown if d is None else d for d in spec.shape)
        array = np.zeros(shape, dtype=spec.dtype)
        return array[()] if array.ndim == 0 else array

    return map_structure(zeros, spec_structure)
