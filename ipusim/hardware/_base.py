"""Shared machinery of the hardware specs: field metadata, validation and provenance.

Every spec field carries metadata saying what kind of value it holds (``count``, ``size``, ``hz``,
``bandwidth``, ``time``, ``number``, ``table``, ``text``, ``choice`` or a nested ``spec``) and an
optional short key used in TOML files (``clock`` for ``clock_hz``). The loader uses the kind to pick
the unit parser; the constructors use it to validate.

Provenance: each spec stores ``field_sources``, the source of each of its own figures as
``"FLAG: text"``; :pyattr:`SpecBase.sources` merges the nested specs' sources under dotted paths.
Flags: ``S`` vendor specification or documentation, ``M`` measured, ``D`` derived by arithmetic,
``E`` estimate or assumption (a tunable parameter), ``2nd`` secondary source, ``U`` set by the user.
A source may combine flags: ``"2nd/E: HC33 notes, ..."``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from ipusim.errors import HardwareSpecError, InvalidTypeError, KeyNotFoundError
from ipusim.hardware.table import PrecisionTable

__all__ = ["FLAGS", "SpecBase", "is_estimate", "parse_flags", "spec_field"]

FLAGS = ("S", "M", "D", "E", "2nd", "U")
_FLAG_LOOKUP = {flag.lower(): flag for flag in FLAGS}

INT_KINDS = frozenset({"count", "size"})
FLOAT_KINDS = frozenset({"hz", "bandwidth", "time", "number"})
NUMERIC_KINDS = INT_KINDS | FLOAT_KINDS


def spec_field(
    kind: str,
    *,
    key: str | None = None,
    positive: bool = False,
    choices: tuple[str, ...] | None = None,
    spec: type | None = None,
    optional: bool = False,
) -> Any:
    """A dataclass field with hardware metadata.

    Args:
        kind: one of ``count``, ``size``, ``hz``, ``bandwidth``, ``time``, ``number``, ``table``,
            ``text``, ``choice``, ``spec``.
        key: short name accepted in TOML files and overrides besides the field name.
        positive: numbers must be > 0 (counts >= 1) rather than >= 0.
        choices: allowed strings for ``choice``.
        spec: the nested spec class for ``spec``.
        optional: a nested spec may be None.
    """
    metadata = {
        "kind": kind,
        "key": key,
        "positive": positive,
        "choices": choices,
        "spec": spec,
        "optional": optional,
    }
    return dataclasses.field(metadata=metadata)


def sources_field() -> Any:
    """The ``field_sources`` field: excluded from repr, equality and hashing."""
    return dataclasses.field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False
    )


def parse_flags(source: object) -> frozenset[str]:
    """Return the flags of a source string ``"FLAG[/FLAG...]: text"``.

    Raises:
        ValueError: no ``FLAG:`` prefix, or an unknown flag.
    """
    if not isinstance(source, str) or ":" not in source:
        raise HardwareSpecError(
            f"source {source!r} must look like 'FLAG: text' with FLAG one of {', '.join(FLAGS)} "
            "(combine with '/', e.g. '2nd/E: HC33 notes')"
        )
    head = source.split(":", 1)[0]
    flags = set()
    for part in re.split(r"[/,+]", head):
        flag = _FLAG_LOOKUP.get(part.strip().lower())
        if flag is None:
            raise HardwareSpecError(
                f"source {source!r}: unknown flag {part.strip()!r}; expected flags from "
                f"{', '.join(FLAGS)} separated by '/'"
            )
        flags.add(flag)
    return frozenset(flags)


def is_estimate(source: str) -> bool:
    """True when the source string carries the ``E`` (estimate) flag."""
    return "E" in parse_flags(source)


def _label(obj: object, name: str) -> str:
    return f"{type(obj).__name__}.{name}"


def _check_int(obj: object, name: str, value: object, positive: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(
            f"{_label(obj, name)}: got {type(value).__name__} {value!r}; expected an int "
            "(parse human strings with ipusim.hardware.load_system or ipusim.hardware.units)"
        )
    low = 1 if positive else 0
    if value < low:
        raise HardwareSpecError(f"{_label(obj, name)}: got {value!r}; expected an int >= {low}")


def _check_float(obj: object, name: str, value: object, positive: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(
            f"{_label(obj, name)}: got {type(value).__name__} {value!r}; expected a number in "
            "base units (parse human strings such as '1.325GHz' with ipusim.hardware.units or "
            "ipusim.hardware.load_system)"
        )
    ok = math.isfinite(value) and (value > 0 if positive else value >= 0)
    if not ok:
        bound = "> 0" if positive else ">= 0"
        raise HardwareSpecError(
            f"{_label(obj, name)}: got {value!r}; expected a finite number {bound}"
        )
    object.__setattr__(obj, name, float(value))


def validate_fields(obj: SpecBase) -> None:
    """Check (and normalise ints to floats for float kinds) every metadata-carrying field."""
    names = set()
    for f in dataclasses.fields(obj):
        names.add(f.name)
        md = f.metadata
        kind = md.get("kind")
        if kind is None:
            continue
        value = getattr(obj, f.name)
        if kind in INT_KINDS:
            _check_int(obj, f.name, value, md["positive"])
        elif kind in FLOAT_KINDS:
            _check_float(obj, f.name, value, md["positive"])
        elif kind == "table":
            if not isinstance(value, PrecisionTable):
                raise InvalidTypeError(
                    f"{_label(obj, f.name)}: got {type(value).__name__}; expected a "
                    "PrecisionTable, e.g. PrecisionTable({'fp32': 32, 'fp16.16': 128})"
                )
            zero = [p for p, rate in value.items() if md["positive"] and rate <= 0]
            if zero:
                # The cost model divides FLOPs by these rates: a zero rate would make every
                # compute set of that precision take forever (a division by zero).
                raise HardwareSpecError(
                    f"{_label(obj, f.name)}.{zero[0]}: got {value[zero[0]]!r}; expected a "
                    "rate > 0 (FLOPs per cycle per tile). Leave the precision out of the table "
                    "if the chip does not support it."
                )
        elif kind in ("text", "choice"):
            if not isinstance(value, str):
                raise InvalidTypeError(
                    f"{_label(obj, f.name)}: got {type(value).__name__} {value!r}; expected a string"
                )
            choices = md["choices"]
            if choices is not None and value not in choices:
                raise HardwareSpecError(
                    f"{_label(obj, f.name)}: got {value!r}; expected one of {', '.join(choices)}"
                )
        elif kind == "spec":
            if value is None and md["optional"]:
                continue
            if not isinstance(value, md["spec"]):
                allowed = md["spec"].__name__ + (" or None" if md["optional"] else "")
                raise InvalidTypeError(
                    f"{_label(obj, f.name)}: got {type(value).__name__}; expected {allowed}"
                )
    _freeze_sources(obj, names)


def _freeze_sources(obj: SpecBase, names: set[str]) -> None:
    raw = obj.field_sources
    if not isinstance(raw, Mapping):
        raise InvalidTypeError(
            f"{_label(obj, 'field_sources')}: got {type(raw).__name__}; expected a mapping "
            "{field path: 'FLAG: source'}"
        )
    frozen: dict[str, str] = {}
    for path, text in raw.items():
        if not isinstance(path, str) or path.split(".", 1)[0] not in names:
            raise HardwareSpecError(
                f"{_label(obj, 'field_sources')}: key {path!r} does not name a field of "
                f"{type(obj).__name__}"
            )
        parse_flags(text)
        frozen[path] = text
    object.__setattr__(obj, "field_sources", MappingProxyType(dict(sorted(frozen.items()))))


class SpecBase:
    """Provenance helpers shared by all specs (mixed into the frozen, slotted dataclasses)."""

    __slots__ = ()

    if TYPE_CHECKING:  # what the frozen dataclasses this is mixed into provide
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
        field_sources: Mapping[str, str]

        def __init__(self, **fields: object) -> None: ...

    def __post_init__(self) -> None:
        validate_fields(self)

    @property
    def sources(self) -> Mapping[str, str]:
        """Source of every figure in this spec and its nested specs, by dotted field path.

        Example: ``system.sources["ipu.clock_hz"]`` → ``"2nd/D: HC33 notes; ..."``.
        """
        merged: dict[str, str] = dict(self.field_sources)
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, SpecBase):
                for path, text in value.sources.items():
                    merged[f"{f.name}.{path}"] = text
        return MappingProxyType(dict(sorted(merged.items())))

    def source_of(self, path: str) -> str:
        """The ``"FLAG: text"`` source of one dotted field path.

        Raises:
            KeyError: no source is recorded for ``path``.
        """
        sources = self.sources
        if path not in sources:
            raise KeyNotFoundError(f"no source recorded for {path!r} in {type(self).__name__}")
        return sources[path]

    def estimates(self) -> list[str]:
        """Dotted paths of the figures flagged ``E`` (estimates: tunable parameters), sorted."""
        return [path for path, text in self.sources.items() if is_estimate(text)]

    def numeric_field_paths(self) -> list[str]:
        """Dotted paths of every numeric figure, including precision-table entries."""
        paths: list[str] = []
        for f in dataclasses.fields(self):
            kind = f.metadata.get("kind")
            value = getattr(self, f.name)
            if kind in NUMERIC_KINDS:
                paths.append(f.name)
            elif kind == "table":
                paths.extend(f"{f.name}.{key}" for key in value)
            elif isinstance(value, SpecBase):
                paths.extend(f"{f.name}.{sub}" for sub in value.numeric_field_paths())
        return paths

    def missing_sources(self) -> list[str]:
        """Numeric field paths that have no recorded source (empty for every preset)."""
        sources = self.sources
        return [path for path in self.numeric_field_paths() if path not in sources]
