"""Parse human-readable quantities ("624KiB", "1.325GHz", "100Gb/s", "2.8ms") into base units.

Hardware figures are written for people in preset files and overrides, and stored in base units in
the specs: bytes, hertz, bytes per second and seconds. Every parser here takes the field name so an
error can say which setting was wrong::

    >>> parse_size("624KiB", "sram_per_tile")
    638976
    >>> parse_bandwidth("100Gb/s", "gw_link.bandwidth")
    12500000000.0

Rules:

* Plain ``int`` / ``float`` values pass through unchanged: they are already in base units.
* Strings need a unit; a bare number in a string ("1.325") is rejected because it is ambiguous.
* Sizes: ``B``; decimal ``kB`` (or ``KB``), ``MB``, ``GB``, ``TB``; binary ``KiB``, ``MiB``,
  ``GiB``, ``TiB``. Bits are not accepted for sizes.
* Bandwidths: a size unit or a bit unit (``b``, ``kb``, ``Mb``, ``Gb``, ``Tb``) followed by ``/s``
  or ``ps``: "32GB/s", "15.8 GB/s", "100Gb/s", "100Gbps". A lower-case ``b`` means bits.
* Frequencies: ``Hz``, ``kHz``, ``MHz``, ``GHz``, ``THz`` (any letter case).
* Times: ``s``, ``ms``, ``us`` (or ``µs``), ``ns``, ``ps``.
* Negative, NaN and infinite values are rejected, as are booleans.
"""

from __future__ import annotations

import math
import re

from ipusim.errors import HardwareSpecError, InvalidTypeError

__all__ = [
    "parse_bandwidth",
    "parse_count",
    "parse_frequency",
    "parse_number",
    "parse_size",
    "parse_time",
]

_NUMBER_WITH_UNIT = re.compile(
    r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[A-Za-zµμ].*?)?\s*$"
)

_DECIMAL = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}

_SIZE_UNITS: dict[str, int] = {"B": 1}
for _p, _f in _DECIMAL.items():
    if _p:
        _SIZE_UNITS[_p + "B"] = _f
        _SIZE_UNITS[_p.upper() + "B"] = _f
for _p, _f in _BINARY.items():
    _SIZE_UNITS[_p[0].upper() + "iB"] = _f

_BIT_UNITS: dict[str, float] = {"b": 1 / 8}
for _p, _f in _DECIMAL.items():
    if _p:
        _BIT_UNITS[_p + "b"] = _f / 8
        _BIT_UNITS[_p.upper() + "b"] = _f / 8

_FREQ_UNITS = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "thz": 1e12}
# Divisors rather than factors: 5 / 1e6 is exactly the float 5e-06, 5 * 1e-6 is not.
_TIME_DIVISORS = {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "μs": 1e6, "ns": 1e9, "ps": 1e12}


def _fail(field: str, value: object, expected: str) -> HardwareSpecError:
    return HardwareSpecError(f"{field}: cannot use {value!r}; expected {expected}")


def _check_number(field: str, value: object, number: float, expected: str) -> float:
    if math.isnan(number) or math.isinf(number):
        raise _fail(field, value, expected + " (a finite number)")
    if number < 0:
        raise HardwareSpecError(f"{field}: {value!r} is negative; expected {expected}")
    return number


def _split(field: str, value: object, expected: str) -> tuple[float, str | None]:
    """Return ``(number, unit)``; ``unit`` is None for a plain int/float."""
    if isinstance(value, bool):
        raise InvalidTypeError(f"{field}: got the boolean {value!r}; expected {expected}")
    if isinstance(value, int | float):
        return _check_number(field, value, float(value), expected), None
    if not isinstance(value, str):
        raise InvalidTypeError(
            f"{field}: got {type(value).__name__} {value!r}; expected {expected} "
            "(a string with a unit, or a plain number in base units)"
        )
    match = _NUMBER_WITH_UNIT.match(value)
    if match is None:
        raise _fail(field, value, expected)
    number = _check_number(field, value, float(match["num"]), expected)
    unit = match["unit"]
    if not unit:
        raise HardwareSpecError(
            f"{field}: {value!r} has no unit; expected {expected} "
            "(write the unit, or pass a plain number in base units)"
        )
    return number, unit


def _whole(field: str, value: object, number: float, what: str) -> int:
    rounded = round(number)
    if abs(number - rounded) > 1e-9 * max(1.0, abs(number)):
        raise HardwareSpecError(f"{field}: {value!r} is not a whole number of {what} ({number!r})")
    return int(rounded)


def parse_size(value: object, field: str) -> int:
    """Parse a memory size.

    Args:
        value: "624KiB", "897MiB", "128GB", "1.5 GiB", or a plain number of bytes.
        field: name of the setting, used in error messages.

    Returns:
        The size in bytes (a whole number).

    Raises:
        ValueError: unparseable, unknown unit, negative, or not a whole number of bytes.
        TypeError: not a string or a number.
    """
    expected = "a size such as '624KiB', '897MiB' or '128GB' (or a number of bytes)"
    number, unit = _split(field, value, expected)
    if unit is not None:
        factor = _SIZE_UNITS.get(unit)
        if factor is None:
            hint = " (sizes are in bytes: use 'B', not 'b')" if unit in _BIT_UNITS else ""
            raise HardwareSpecError(
                f"{field}: unknown size unit {unit!r} in {value!r}{hint}; expected one of "
                f"{', '.join(_SIZE_UNITS)}"
            )
        number *= factor
    return _whole(field, value, number, "bytes")


def parse_frequency(value: object, field: str) -> float:
    """Parse a frequency ("1.325GHz", "1600MHz", or a plain number of Hz) into hertz.

    Raises:
        ValueError: unparseable, unknown unit or negative.
        TypeError: not a string or a number.
    """
    expected = "a frequency such as '1.325GHz' or '1600MHz' (or a number of Hz)"
    number, unit = _split(field, value, expected)
    if unit is None:
        return number
    factor = _FREQ_UNITS.get(unit.lower())
    if factor is None:
        raise HardwareSpecError(
            f"{field}: unknown frequency unit {unit!r} in {value!r}; expected Hz, kHz, MHz, GHz or THz"
        )
    return number * factor


def parse_bandwidth(value: object, field: str) -> float:
    """Parse a bandwidth into bytes per second.

    Args:
        value: "32GB/s", "15.8 GB/s", "64GiB/s", "100Gb/s" (bits), "100Gbps", or a plain number
            of bytes per second.
        field: name of the setting, used in error messages.

    Raises:
        ValueError: unparseable, unknown unit or negative.
        TypeError: not a string or a number.
    """
    expected = "a bandwidth such as '32GB/s' or '100Gb/s' (or a number of bytes/s)"
    number, unit = _split(field, value, expected)
    if unit is None:
        return number
    for suffix in ("/s", "ps"):
        if unit.endswith(suffix):
            amount = unit[: -len(suffix)].strip()
            factor = _SIZE_UNITS.get(amount) or _BIT_UNITS.get(amount)
            if factor is not None:
                return number * factor
    raise HardwareSpecError(
        f"{field}: unknown bandwidth unit {unit!r} in {value!r}; expected a size or bit unit "
        "followed by '/s' or 'ps', e.g. 'GB/s', 'GiB/s', 'Gb/s' (bits), 'Gbps'"
    )


def parse_time(value: object, field: str) -> float:
    """Parse a duration ("150ns", "2.8ms", "1.2us", "0.5s", or a plain number of seconds).

    Raises:
        ValueError: unparseable, unknown unit or negative.
        TypeError: not a string or a number.
    """
    expected = "a time such as '150ns', '1.2us', '2.8ms' or '0.5s' (or a number of seconds)"
    number, unit = _split(field, value, expected)
    if unit is None:
        return number
    divisor = _TIME_DIVISORS.get(unit)
    if divisor is None:
        raise HardwareSpecError(
            f"{field}: unknown time unit {unit!r} in {value!r}; expected s, ms, us, ns or ps"
        )
    return number / divisor


def parse_count(value: object, field: str) -> int:
    """Parse a whole count (tiles, IPUs, cycles): an ``int``, or a whole ``float`` such as 1472.0.

    Raises:
        ValueError: negative or fractional.
        TypeError: a string, a boolean or another type.
    """
    number = parse_number(value, field, "a whole number >= 0")
    return value if isinstance(value, int) else _whole(field, value, number, "units")


def parse_number(value: object, field: str, expected: str = "a number >= 0") -> float:
    """Parse a plain non-negative number (FLOPs or bytes per cycle); strings are rejected.

    Args:
        expected: what the error messages say the field takes.

    Raises:
        ValueError: negative, NaN or infinite.
        TypeError: a string, a boolean or another type.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(
            f"{field}: got {type(value).__name__} {value!r}; expected {expected}"
        )
    return _check_number(field, value, float(value), expected)
