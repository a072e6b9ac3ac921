"""String tensors on the host: ``tf.string``, string constants and the shape ops they take.

TensorFlow keeps a ``tf.string`` tensor as a numpy ``object`` array of ``bytes`` (``.numpy()``
gives ``array([b'graphcore', ...], dtype=object)``); ipusim does the same with
:class:`StringTensor`. Strings never go to the IPU: IPU TensorFlow runs string ops on the CPU
(the pre- and post-processing steps of a serving export) and cannot compile them for the IPU, so
a string reaching a device function or an IPU op raises :class:`~ipusim.errors.UnsupportedError`
(:func:`strings_on_ipu`). On the host, string tensors take ``==`` / ``!=`` (a Python ``str`` is
compared as its UTF-8 bytes, as TensorFlow converts it), the structural ops
(:data:`HOST_STRUCTURAL`: ``tf.unstack``, ``tf.stack``, ``tf.reshape``...) and ``tf.strings``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.compat.runtime.tensor import EagerTensor
from ipusim.data import dtypes as data_dtypes
from ipusim.data.dtypes import DType
from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError

__all__ = [
    "StringDType",
    "as_dtype",
    "StringTensor",
    "holds_strings",
    "is_string_array",
    "is_string_dtype",
    "string",
    "string_constant",
    "strings_on_ipu",
    "to_strings",
]


class StringDType(DType):
    """``tf.string``: bytes of any length per element, held on the host as numpy objects."""

    __slots__ = ()

    def __init__(self) -> None:
        object.__setattr__(self, "_name", "string")

    @property
    def as_numpy_dtype(self) -> type:
        return object

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(object)

    @property
    def size(self) -> int:
        return 0  # as tf.string.size: no fixed element size

    @property
    def is_floating(self) -> bool:
        return False

    @property
    def is_integer(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return is_string_dtype(other)

    def __hash__(self) -> int:
        return hash("string")

    def __reduce__(self) -> Any:
        return (StringDType, ())

    def __repr__(self) -> str:
        return "tf.string"


#: ``tf.string``.
string = StringDType()


def is_string_dtype(dtype: object) -> bool:
    """Whether ``dtype`` names ``tf.string`` ("string", ``tf.string``, numpy object / bytes)."""
    if isinstance(dtype, StringDType) or dtype in ("string", object, np.object_, bytes, np.bytes_):
        return True
    try:
        # any object may be asked about: np.dtype raises TypeError for those naming no dtype
        return np.dtype(dtype).kind in "OSU"  # type: ignore[call-overload]
    except TypeError:
        return False


def as_dtype(type_value: object) -> DType:
    """``tf.as_dtype``: :data:`string` for the string types, else the numeric ``DType``."""
    return string if is_string_dtype(type_value) else data_dtypes.as_dtype(type_value)


def holds_strings(value: Any) -> bool:
    """Whether ``value`` is a string tensor, a ``str`` / ``bytes`` or an array of them."""
    return isinstance(value, str | bytes) or is_string_array(value)


def is_string_array(value: Any) -> bool:
    """Whether ``value`` is a numpy array / scalar of strings (a concrete string tensor)."""
    return isinstance(value, np.ndarray | np.generic) and value.dtype.kind in "OSU"


def _encode(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, np.bytes_ | np.str_):
        return _encode(item.item())
    raise InvalidTypeError(
        f"a tf.string tensor holds str or bytes; received {type(item).__name__} {item!r:.40}"
    )


def to_strings(value: Any) -> np.ndarray:
    """``value`` (str, bytes, nested lists or arrays of them) as an object array of bytes."""
    array = np.asarray(value, dtype=object)
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        out[index] = _encode(item)
    return out


class StringTensor(EagerTensor):
    """A concrete ``tf.string`` tensor: an object array of ``bytes`` on the host."""

    def __eq__(self, other: Any) -> Any:
        return _compare(np.equal, self, other)

    def __ne__(self, other: Any) -> Any:
        return _compare(np.not_equal, self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        value = np.asarray(self).view(np.ndarray)
        shown = repr(value[()]) if value.ndim == 0 else repr(value)
        return f"<tf.Tensor: shape={self.shape}, dtype=string, numpy={shown}>"


def _compare(fn: Callable[..., Any], a: Any, b: Any) -> EagerTensor:
    left = to_strings(np.asarray(a).view(np.ndarray))
    right = to_strings(b.view(np.ndarray) if isinstance(b, np.ndarray) else b)
    return np.asarray(fn(left, right), dtype=bool).view(EagerTensor)


def string_constant(value: Any, shape: Any = None) -> StringTensor:
    """``tf.constant(value, tf.string, shape)``: filled or reshaped to ``shape`` when given
    (see :func:`fit_shape`)."""
    return fit_shape(to_strings(value), shape).view(StringTensor)


def fit_shape(array: np.ndarray, shape: Any, hint: str = "") -> np.ndarray:
    """``array`` for ``tf.constant(..., shape=shape)``: reshaped to ``shape`` when it holds as
    many elements, filled with its one element when a scalar, unchanged when ``shape`` is None.

    Raises:
        ValueError: ``array`` has neither one element nor as many as ``shape`` holds.
    """
    if shape is None:
        return array
    target = tuple(int(d) for d in shape)
    if array.size == int(np.prod(target, dtype=np.int64)):
        return array.reshape(target)
    if array.size == 1:
        return np.full(target, array.reshape(())[()], dtype=array.dtype)
    raise ConfigurationError(
        f"tf.constant: a value of {array.size} elements cannot have shape {list(target)}{hint}"
    )


def as_string_tensor(value: Any) -> StringTensor:
    """``value`` as a StringTensor (strings already held keep their bytes)."""
    if isinstance(value, StringTensor):
        return value
    return to_strings(value).view(StringTensor)


def strings_on_ipu(what: str) -> UnsupportedError:
    """The error for a string reaching the IPU (``what``: the function or op it reached)."""
    return UnsupportedError(
        f"{what} received a tf.string tensor, but strings do not exist on the IPU (IPU "
        "TensorFlow cannot compile string ops for it). Do string work on the host: in a "
        "serving export's preprocessing_step / postprocessing_step, in a tf.function called "
        "outside the IPUStrategy, or with NumPy, and feed the IPU numbers"
    )


def _stack(values: Any, axis: int = 0, name: Any = None) -> StringTensor:
    return np.stack([as_string_tensor(v).view(np.ndarray) for v in values], axis).view(StringTensor)


def _unstack(value: Any, num: Any = None, axis: int = 0, name: Any = None) -> list[StringTensor]:
    array = as_string_tensor(value).view(np.ndarray)
    # take [i] then squeeze: a 0-d array even for a vector (plain indexing gives the bytes)
    parts = [np.take(array, [i], axis=axis).squeeze(axis) for i in range(array.shape[axis])]
    return [p.view(StringTensor) for p in parts]


def _concat(values: Any, axis: int, name: Any = None) -> StringTensor:
    parts = [as_string_tensor(v).view(np.ndarray) for v in values]
    return np.concatenate(parts, axis=int(axis)).view(StringTensor)


def _unary(fn: Callable[..., np.ndarray]) -> Callable[..., StringTensor]:
    def run(value: Any, *args: Any, name: Any = None, **kwargs: Any) -> StringTensor:
        return np.asarray(fn(as_string_tensor(value).view(np.ndarray), *args, **kwargs),
                          dtype=object).view(StringTensor)  # fmt: skip

    return run


#: The runtime ops that take string tensors on the host: op name -> NumPy implementation.
HOST_STRUCTURAL: dict[str, Callable[..., Any]] = {
    "stack": _stack,
    "unstack": _unstack,
    "concat": _concat,
    "identity": _unary(lambda a: a.copy()),
    "reshape": _unary(lambda a, shape: a.reshape(tuple(int(d) for d in shape))),
    "transpose": _unary(lambda a, perm=None: np.transpose(a, perm)),
    "expand_dims": _unary(lambda a, axis: np.expand_dims(a, int(axis))),
    "squeeze": _unary(lambda a, axis=None: np.squeeze(a, axis)),
    "equal": lambda x, y, name=None: _compare(np.equal, as_string_tensor(x), y),
    "not_equal": lambda x, y, name=None: _compare(np.not_equal, as_string_tensor(x), y),
}


def host_strings(op: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for a runtime op: string tensors go to :data:`HOST_STRUCTURAL` ``[op]``."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        host = HOST_STRUCTURAL[op]

        def run(*args: Any, **kwargs: Any) -> Any:
            first = args[0] if args else next(iter(kwargs.values()), None)
            items = first if isinstance(first, list | tuple) else [first]
            if any(holds_strings(v) for v in items):
                return host(*args, **kwargs)
            return fn(*args, **kwargs)

        run.__name__, run.__doc__, run.__wrapped__ = fn.__name__, fn.__doc__, fn  # type: ignore[attr-defined]
        run.__module__, run.__qualname__ = fn.__module__, fn.__qualname__
        return run

    return wrap
