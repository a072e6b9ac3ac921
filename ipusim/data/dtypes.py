"""TensorFlow-style dtype objects (``float32``, ``int32``, ...) and ``cast`` for numpy values.

The objects mirror ``tf.float32`` and friends closely enough for ported scripts: they carry the
numpy ``name`` (so :func:`ipusim.graph.spec.canonical_dtype` understands them), compare equal to
the matching string / numpy dtype, and numpy accepts them wherever it takes a dtype
(``np.zeros(3, dtype=float32)``, ``x.astype(float32)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import InvalidTypeError
from ipusim.graph.spec import DTYPE_BYTES, FLOAT_DTYPES, canonical_dtype

__all__ = [
    "DType",
    "as_dtype",
    "bool_",
    "cast",
    "float16",
    "float32",
    "float64",
    "int32",
    "int64",
    "newaxis",
    "uint8",
]

#: Insert a new axis of size 1 when indexing, as ``tf.newaxis``: ``x[..., newaxis]``.
newaxis = None


class DType:
    """A tensor element type, named after its numpy dtype (``DType("float32")``).

    Instances are immutable and compare equal to anything naming the same dtype: another
    ``DType``, the string ``"float32"``, ``np.float32`` or ``np.dtype("float32")``.

    Attributes:
        name: numpy name of the dtype, e.g. ``"float32"`` or ``"bool"``.
    """

    __slots__ = ("_name",)
    _name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", canonical_dtype(name))

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"DType objects are immutable; cannot set {key!r}")

    @property
    def name(self) -> str:
        return self._name

    @property
    def as_numpy_dtype(self) -> type[np.generic]:
        """The numpy scalar type, e.g. ``np.float32``."""
        return np.dtype(self._name).type

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype; this attribute is what lets numpy accept a ``DType`` as a dtype."""
        return np.dtype(self._name)

    @property
    def size(self) -> int:
        """Bytes per element."""
        return DTYPE_BYTES[self._name]

    @property
    def is_floating(self) -> bool:
        return self._name in FLOAT_DTYPES

    @property
    def is_integer(self) -> bool:
        return np.issubdtype(np.dtype(self._name), np.integer)

    @property
    def is_bool(self) -> bool:
        return self._name == "bool"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return other._name == self._name
        try:
            return canonical_dtype(other) == self._name
        except (TypeError, ValueError):
            return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        # Same hash as the name so that dict lookups with strings and DTypes agree.
        return hash(self._name)

    def __reduce__(self) -> tuple[type[DType], tuple[str]]:
        return (DType, (self._name,))

    def __repr__(self) -> str:
        return f"ipusim.{_PUBLIC_NAME.get(self._name, self._name)}"


#: The numpy name "bool" is exported as ``bool_`` so it does not shadow the builtin.
_PUBLIC_NAME = {"bool": "bool_"}

float16 = DType("float16")
float32 = DType("float32")
float64 = DType("float64")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
bool_ = DType("bool")


def as_dtype(dtype: object) -> DType:
    """Return the ``DType`` for a ``DType``, a dtype name, a numpy dtype or a numpy type.

    Raises:
        TypeError: if the dtype is not one a tensor may have.
    """
    if isinstance(dtype, DType):
        return dtype
    return DType(canonical_dtype(dtype))


def cast(x: Any, dtype: object) -> Any:
    """Convert ``x`` to ``dtype``, like ``tf.cast`` but on numpy values.

    Arrays keep their shape (no copy when the dtype already matches), numpy and Python scalars
    come back as numpy scalars, lists are converted to arrays, and tuples / dicts are cast
    element by element, keeping their structure. Float to integer casts truncate toward zero,
    and casts to ``bool`` test for non-zero, as in TensorFlow.

    Args:
        x: a numpy array, a scalar, a list, or a (nested) tuple / dict of those.
        dtype: the target dtype: a ``DType`` (``float32``), a name (``"float32"``) or a numpy
            dtype.

    Returns:
        The cast value, with the same nesting as ``x``.

    Raises:
        TypeError: if ``dtype`` is not supported or ``x`` holds values that are not numbers.
    """
    target = np.dtype(canonical_dtype(dtype))
    return _cast(x, target)


def _cast(x: Any, target: np.dtype) -> Any:
    if isinstance(x, dict):
        return {key: _cast(value, target) for key, value in x.items()}
    if isinstance(x, tuple):
        items = [_cast(value, target) for value in x]
        if hasattr(type(x), "_fields"):  # namedtuple
            return type(x)(*items)
        return tuple(items)
    if isinstance(x, np.ndarray | np.generic):
        _require_numeric(x, x.dtype)
        return x.astype(target, copy=False)
    array = np.asarray(x)
    _require_numeric(x, array.dtype)
    result = array.astype(target)
    return result[()] if result.ndim == 0 else result


def _require_numeric(x: Any, dtype: np.dtype) -> None:
    # numpy would parse strings ("1.5" -> 1.5); tf.cast refuses them, and so does ipusim.
    if dtype.kind not in "biuf":
        raise InvalidTypeError(
            f"cast() expected numbers (an array, a scalar or a nested tuple/dict of them) but "
            f"received {type(x).__name__} of dtype {dtype} ({x!r:.60}); convert it to a numeric "
            f"numpy array first"
        )
