"""``tf.strings``: string ops on the host, as TensorFlow computes them on the CPU.

String tensors are :class:`~ipusim.compat.runtime.strings.StringTensor` s (numpy object arrays
of ``bytes``); these functions take them, Python ``str`` / ``bytes`` or (nested) lists of them.
``lower`` / ``upper`` change ASCII letters only and ``length`` counts bytes unless
``unit="UTF8_CHAR"``, as TensorFlow's defaults. ``regex_full_match`` / ``regex_replace`` use
Python's ``re`` for TensorFlow's RE2 patterns (the same for the common syntax; RE2 has no
backreferences in patterns). Strings never go to the IPU
(:func:`~ipusim.compat.runtime.strings.strings_on_ipu`).
"""

from __future__ import annotations

import builtins
import re
from typing import Any

import numpy as np

from ipusim.compat.runtime.strings import StringTensor, as_string_tensor, to_strings
from ipusim.compat.runtime.tensor import EagerTensor
from ipusim.errors import ConfigurationError, InputDataError, UnsupportedError
from ipusim.graph.spec import canonical_dtype

__all__ = [
    "as_string",
    "join",
    "length",
    "lower",
    "reduce_join",
    "regex_full_match",
    "regex_replace",
    "strip",
    "substr",
    "to_number",
    "upper",
]

_UNITS = ("BYTE", "UTF8_CHAR")


def _strings(value: Any) -> np.ndarray:
    return as_string_tensor(value).view(np.ndarray)


def _map(fn: Any, value: Any, dtype: Any = object) -> np.ndarray:
    """``fn`` of every element of the string tensor ``value``, as an array of ``dtype``."""
    array = _strings(value)
    out = np.empty(array.shape, dtype=dtype)
    for index, item in np.ndenumerate(array):
        out[index] = fn(item)
    return out


def _scalar(value: Any) -> bytes:
    """The one element of the string tensor of ``value`` (a ``str`` or ``bytes``)."""
    # numpy's stubs type ``x[()]`` as an array; of a 0-d array it is the element (bytes here)
    element: bytes = to_strings(value)[()]  # type: ignore[assignment]  # see above
    return element


def _text(array: np.ndarray) -> StringTensor:
    return array.view(StringTensor)


def _number(array: np.ndarray) -> EagerTensor:
    return array.view(EagerTensor)


def _unit(unit: str) -> str:
    if unit not in _UNITS:
        raise ConfigurationError(f"tf.strings: unit must be one of {_UNITS}, received {unit!r}")
    return unit


def length(input: Any, name: Any = None, unit: str = "BYTE") -> EagerTensor:  # noqa: A002
    """``tf.strings.length``: bytes (or UTF-8 characters) of each element, int32."""
    chars = _unit(unit) == "UTF8_CHAR"
    return _number(_map(lambda b: len(b.decode("utf-8")) if chars else len(b), input, np.int32))


def lower(input: Any, encoding: str = "", name: Any = None) -> StringTensor:  # noqa: A002
    """``tf.strings.lower``: ASCII letters to lower case (all letters with encoding="utf-8")."""
    if encoding:
        return _text(_map(lambda b: b.decode(encoding).lower().encode(encoding), input))
    return _text(_map(bytes.lower, input))


def upper(input: Any, encoding: str = "", name: Any = None) -> StringTensor:  # noqa: A002
    """``tf.strings.upper``: ASCII letters to upper case (all letters with encoding="utf-8")."""
    if encoding:
        return _text(_map(lambda b: b.decode(encoding).upper().encode(encoding), input))
    return _text(_map(bytes.upper, input))


def strip(input: Any, name: Any = None) -> StringTensor:  # noqa: A002
    """``tf.strings.strip``: leading and trailing whitespace removed."""
    return _text(_map(bytes.strip, input))


def join(inputs: Any, separator: str = "", name: Any = None) -> StringTensor:
    """``tf.strings.join``: the tensors joined element by element (broadcasting)."""
    parts = np.broadcast_arrays(*[_strings(v) for v in inputs])
    sep = _scalar(separator)
    out = np.empty(parts[0].shape, dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = sep.join(p.item(index) for p in parts)
    return _text(out)


def reduce_join(
    inputs: Any, axis: Any = None, keepdims: bool = False, separator: str = "", name: Any = None
) -> StringTensor:
    """``tf.strings.reduce_join``: elements joined along ``axis`` (all axes when None)."""
    array = _strings(inputs)
    sep = _scalar(separator)
    axes = tuple(range(array.ndim)) if axis is None else tuple(np.atleast_1d(axis).tolist())
    axes = tuple(int(a) % max(array.ndim, 1) for a in axes)
    kept = [a for a in range(array.ndim) if a not in axes]
    moved = np.transpose(array, kept + list(axes))
    flat = moved.reshape(*[array.shape[a] for a in kept], -1)
    out = np.empty(flat.shape[:-1], dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = sep.join(flat[index])
    if keepdims:
        out = np.expand_dims(out, axes)
    return _text(out)


def to_number(string_tensor: Any, out_type: Any = "float32", name: Any = None) -> EagerTensor:
    """``tf.strings.to_number``: each element parsed as ``out_type`` (float32 by default).

    Raises:
        InputDataError: an element is not a number of that type (TensorFlow's
            InvalidArgumentError "StringToNumberOp could not correctly convert string").
    """
    dtype = np.dtype(canonical_dtype(out_type))
    parse = float if dtype.kind == "f" else int

    def convert(item: bytes) -> Any:
        try:
            return parse(item.decode("utf-8").strip())
        except ValueError:
            raise InputDataError(
                f"tf.strings.to_number: could not correctly convert string {item!r} to {dtype.name}"
            ) from None

    return _number(_map(convert, string_tensor, dtype))


def as_string(
    input: Any,  # noqa: A002
    precision: int = -1,
    scientific: bool = False,
    shortest: bool = False,
    width: int = -1,
    fill: str = "",
    name: Any = None,
) -> StringTensor:
    """``tf.strings.as_string``: numbers and booleans as strings (``printf`` formats, as TF)."""
    array = np.asarray(input)
    if array.dtype.kind == "b":
        return _text(to_strings(np.where(array, "true", "false")))
    if fill not in ("", " ", "0"):
        raise UnsupportedError(
            f"tf.strings.as_string: fill {fill!r} is not simulated; ipusim pads with spaces "
            "(fill='' or ' ') or zeros (fill='0')"
        )
    pad = ("0" if fill == "0" else "") + (str(width) if width >= 0 else "")
    if array.dtype.kind == "f":
        kind = "g" if shortest else ("e" if scientific else "f")
        spec = f"%{pad}{'.' + str(precision) if precision >= 0 else ''}{kind}"
    else:
        spec = f"%{pad}d"
    out = np.empty(array.shape, dtype=object)
    for index, value in np.ndenumerate(array):
        out[index] = (spec % value).encode()
    return _text(out)


def regex_full_match(input: Any, pattern: str, name: Any = None) -> EagerTensor:  # noqa: A002
    """``tf.strings.regex_full_match``: whether each element matches ``pattern`` entirely."""
    compiled = re.compile(_scalar(pattern))
    return _number(_map(lambda b: compiled.fullmatch(b) is not None, input, bool))


def regex_replace(
    input: Any,  # noqa: A002
    pattern: str,
    rewrite: str,
    replace_global: bool = True,
    name: Any = None,
) -> StringTensor:
    """``tf.strings.regex_replace``: ``pattern`` replaced by ``rewrite`` (``\\1`` groups)."""
    compiled = re.compile(_scalar(pattern))
    repl = _scalar(rewrite)
    count = 0 if replace_global else 1
    return _text(_map(lambda b: compiled.sub(repl, b, count=count), input))


def substr(
    input: Any,  # noqa: A002
    pos: int,
    len: int,  # noqa: A002
    name: Any = None,
    unit: str = "BYTE",
) -> StringTensor:
    """``tf.strings.substr``: ``len`` bytes (or UTF-8 characters) from ``pos`` (negative: from
    the end).

    Raises:
        InputDataError: ``pos`` is outside an element (TensorFlow's InvalidArgumentError).
    """
    chars = _unit(unit) == "UTF8_CHAR"

    def cut(item: bytes) -> bytes:
        text: Any = item.decode("utf-8") if chars else item
        start = int(pos) + (builtins.len(text) if int(pos) < 0 else 0)
        if not 0 <= start <= builtins.len(text):
            raise InputDataError(
                f"tf.strings.substr: pos {pos} is out of range for {item!r} "
                f"({builtins.len(text)} {'characters' if chars else 'bytes'})"
            )
        part = text[start : start + int(len)]
        return part.encode("utf-8") if isinstance(part, str) else part  # str when chars

    return _text(_map(cut, input))
