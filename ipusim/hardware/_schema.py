"""Apply settings (TOML tables or override mappings) to specs, keeping their sources right.

A document is a nested mapping whose keys are field names or their short keys (``clock`` for
``clock_hz``), possibly dotted (``"host.per_execution_overhead"``). Settings are resolved against the
dataclass fields, parsed with the unit parser for the field's kind, written into a plain nested-dict
copy of the base spec, and the spec is rebuilt (and so validated) from it. Every set figure gets a
source: the document's ``[sources]`` entry for it, else ``"U: set in <origin>"``.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import Field
from typing import Any, NamedTuple, TypeVar

from ipusim.errors import HardwareSpecError, InvalidTypeError
from ipusim.hardware import units
from ipusim.hardware._base import SpecBase, parse_flags
from ipusim.hardware._ranges import check_ranges
from ipusim.hardware.table import PrecisionTable

__all__ = ["apply_document", "resolve_path"]

_PARSERS = {
    "count": units.parse_count,
    "size": units.parse_size,
    "hz": units.parse_frequency,
    "bandwidth": units.parse_bandwidth,
    "time": units.parse_time,
    "number": units.parse_number,
}
_NONE_MARKERS = ("none", "null", "absent")
_PATH_ONLY = object()  # resolve_path's stand-in value

#: The spec class a document builds.
_Spec = TypeVar("_Spec", bound=SpecBase)


class _Setting(NamedTuple):
    path: tuple[str, ...]  # canonical field names; a table entry ends with the precision
    value: object
    field: Field[Any]
    table_entry: bool


def _spec_fields(cls: type) -> list[Field[Any]]:
    return [f for f in dataclasses.fields(cls) if "kind" in f.metadata]


def _keys(cls: type) -> dict[str, Field[Any]]:
    keys: dict[str, Field[Any]] = {}
    for f in _spec_fields(cls):
        keys[f.name] = f
        if f.metadata["key"]:
            keys[f.metadata["key"]] = f
    return keys


def _all_paths(cls: type, prefix: str = "") -> list[str]:
    paths = []
    for key, f in _keys(cls).items():
        path = prefix + key
        paths.append(path)
        if f.metadata["kind"] == "spec":
            paths.extend(_all_paths(f.metadata["spec"], path + "."))
    return paths


def _unknown(root: type, cls: type, prefix: tuple[str, ...], parts: list[str], origin: str) -> str:
    dotted = ".".join((*prefix, *parts))
    local = difflib.get_close_matches(parts[0], list(_keys(cls)), n=1, cutoff=0.6)
    guess: str | None
    if local:
        guess = ".".join((*prefix, local[0], *parts[1:]))
    else:
        everywhere = _all_paths(root)
        same_leaf = [p for p in everywhere if p.rsplit(".", 1)[-1] == parts[-1]]
        close = same_leaf or difflib.get_close_matches(dotted, everywhere, n=1, cutoff=0.6)
        guess = close[0] if close else None
    where = f"under {'.'.join(prefix)!r}" if prefix else "at the top level"
    hint = f"; did you mean {guess!r}?" if guess else "."
    valid = ", ".join(
        f.name + (f" (or {f.metadata['key']})" if f.metadata["key"] else "")
        for f in _spec_fields(cls)
    )
    return f"{origin}: unknown setting {dotted!r}{hint} Settings {where}: {valid}"


def _collect(
    root: type, cls: type, data: Mapping[str, object], prefix: tuple[str, ...], origin: str
) -> list[_Setting]:
    settings = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise InvalidTypeError(f"{origin}: setting names must be strings, got {key!r}")
        settings.extend(_collect_parts(root, cls, key.split("."), value, prefix, origin))
    return settings


def _collect_parts(
    root: type,
    cls: type,
    parts: list[str],
    value: object,
    prefix: tuple[str, ...],
    origin: str,
) -> list[_Setting]:
    f = _keys(cls).get(parts[0])
    if f is None:
        raise HardwareSpecError(_unknown(root, cls, prefix, parts, origin))
    path, rest, kind = (*prefix, f.name), parts[1:], f.metadata["kind"]
    dotted = ".".join(path)
    if value is _PATH_ONLY and not rest and kind in ("spec", "table"):
        raise HardwareSpecError(
            f"{origin}: {dotted!r} names a group of figures; name one figure in it"
        )
    if kind == "spec":
        sub = f.metadata["spec"]
        if rest:
            return _collect_parts(root, sub, rest, value, path, origin)
        if isinstance(value, Mapping):
            return _collect(root, sub, value, path, origin)
        if isinstance(value, sub) or (f.metadata["optional"] and _is_none(value)):
            return [_Setting(path, value, f, False)]
        none = " (or 'none' to remove it)" if f.metadata["optional"] else ""
        raise InvalidTypeError(
            f"{origin}: {dotted!r} is a group of settings; got {value!r}, expected a table such as "
            f"[{dotted}] or a {sub.__name__}{none}"
        )
    if kind == "table":
        if rest:
            return [_Setting((*path, ".".join(rest).strip().lower()), value, f, True)]
        if isinstance(value, Mapping):
            return [_Setting((*path, k), v, f, True) for k, v in _precisions(value)]
        raise InvalidTypeError(
            f"{origin}: {dotted!r} is a table of rates per precision; got {value!r}, expected "
            "e.g. {'fp32': 32, 'fp16.16': 128}"
        )
    if rest:
        raise HardwareSpecError(
            f"{origin}: {dotted!r} is a single value, not a group; cannot set "
            f"{'.'.join((*path, *rest))!r}"
        )
    if isinstance(value, Mapping):
        raise InvalidTypeError(
            f"{origin}: {dotted!r} expects a single value, got a table {value!r}"
        )
    return [_Setting(path, value, f, False)]


def _precisions(table: Mapping[object, object], prefix: str = "") -> list[tuple[str, object]]:
    """Flatten a rate table; an unquoted TOML key ``fp16.16 = 128`` arrives as nested tables."""
    entries: list[tuple[str, object]] = []
    for key, value in table.items():
        name = prefix + str(key).strip().lower()
        if isinstance(value, Mapping):
            entries.extend(_precisions(value, name + "."))
        else:
            entries.append((name, value))
    return entries


def _is_none(value: object) -> bool:
    return (
        value is None
        or value is False
        or (isinstance(value, str) and value.strip().lower() in _NONE_MARKERS)
    )


def resolve_path(root: type, dotted: str, origin: str) -> str:
    """Canonical dotted path of one figure (``"host.latency"`` → ``"host.latency_s"``).

    Raises:
        ValueError: unknown name (with a suggestion) or a path naming a group, not a figure.
    """
    settings = _collect_parts(root, root, dotted.split("."), _PATH_ONLY, (), origin)
    return ".".join(settings[0].path)


def _parse(setting: _Setting, origin: str) -> object:
    label = f"{'.'.join(setting.path)} (in {origin})"
    kind = setting.field.metadata["kind"]
    if setting.table_entry:
        return units.parse_number(setting.value, label)
    if kind == "spec":
        return None if _is_none(setting.value) else setting.value
    if kind in ("text", "choice"):
        if not isinstance(setting.value, str):
            raise InvalidTypeError(f"{label}: got {setting.value!r}; expected a string")
        return setting.value
    return _PARSERS[kind](setting.value, label)


def to_plain(spec: SpecBase) -> dict[str, object]:
    """Nested dict of a spec's fields (sources left out)."""
    plain: dict[str, object] = {}
    for f in _spec_fields(type(spec)):
        value = getattr(spec, f.name)
        if isinstance(value, SpecBase):
            value = to_plain(value)
        elif isinstance(value, PrecisionTable):
            value = dict(value)
        plain[f.name] = value
    return plain


def from_plain(
    cls: type[_Spec],
    data: Mapping[str, object],
    sources: Mapping[str, str],
    origin: str,
    prefix: str = "",
) -> _Spec:
    """Build (and so validate) a spec from :func:`to_plain` form and flat full-path sources."""
    kwargs: dict[str, object] = {}
    missing = []
    for f in _spec_fields(cls):
        kind = f.metadata["kind"]
        if f.name not in data:
            if kind == "spec" and f.metadata["optional"]:
                kwargs[f.name] = None
            else:
                missing.append(prefix + f.name)
            continue
        value = data[f.name]
        if kind == "spec" and isinstance(value, Mapping):
            value = from_plain(f.metadata["spec"], value, sources, origin, f"{prefix}{f.name}.")
        elif kind == "table" and isinstance(value, Mapping):
            value = PrecisionTable(value)  # type: ignore[arg-type]
        kwargs[f.name] = value
    if missing:
        raise HardwareSpecError(
            f"{origin}: missing settings {', '.join(missing)}; set them, or start from a preset "
            "(base = 'IPU' in a system file, base = 'GC200' in a chip file)"
        )
    spec_names = {f.name for f in _spec_fields(cls) if f.metadata["kind"] == "spec"}
    own = {
        path[len(prefix) :]: text
        for path, text in sources.items()
        if path.startswith(prefix) and path[len(prefix) :].split(".", 1)[0] not in spec_names
    }
    try:
        return cls(**kwargs, field_sources=own)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{origin}: {error}") from None


def _exists(plain: Mapping[str, object], path: list[str]) -> bool:
    node: object = plain
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def apply_document(
    root: type[_Spec],
    base: SpecBase | None,
    document: Mapping[str, object],
    sources: Mapping[str, object],
    origin: str,
    replacements: Mapping[str, SpecBase] | None = None,
) -> _Spec:
    """Apply ``document`` to ``base`` (None: build from scratch) and return the new spec.

    Args:
        root: the spec class being built (``SystemSpec`` or ``IPUSpec``).
        base: the spec to start from, or None.
        document: settings (field names or short keys, nested or dotted).
        sources: the document's ``[sources]`` table: ``{path: "FLAG: text"}``.
        origin: where the settings come from, for error messages and default sources.
        replacements: whole nested specs to swap in first, e.g. ``{"ipu": chip}``.
    """
    plain = to_plain(base) if base is not None else {}
    flat = dict(base.sources) if base is not None else {}

    def drop_sources(prefix: str) -> None:
        for path in [p for p in flat if p == prefix or p.startswith(prefix + ".")]:
            del flat[path]

    for name, spec in (replacements or {}).items():
        plain[name] = to_plain(spec)
        drop_sources(name)
        flat.update({f"{name}.{p}": text for p, text in spec.sources.items()})

    given: dict[str, str] = {}
    for key, text in sources.items():
        path = resolve_path(root, str(key), origin)
        try:
            parse_flags(text)
        except ValueError as error:
            raise HardwareSpecError(f"{origin}: [sources] {key!r}: {error}") from None
        given[path] = str(text)  # parse_flags took it, so it is a str

    new_tables: set[tuple[str, ...]] = set()
    for setting in _collect(root, root, document, (), origin):
        value = _parse(setting, origin)
        *parents, leaf = setting.path
        node = plain
        for depth, part in enumerate(parents):
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
                if setting.table_entry and depth == len(parents) - 1:
                    new_tables.add(tuple(parents))
            node = child
        dotted = ".".join(setting.path)
        if setting.table_entry and tuple(parents) not in new_tables and leaf not in node:
            guess = difflib.get_close_matches(leaf, list(node), n=1, cutoff=0.5)
            hint = f"; did you mean {guess[0]!r}?" if guess else "."
            raise HardwareSpecError(
                f"{origin}: unknown precision {leaf!r} in {'.'.join(parents)!r}{hint} "
                f"Precisions: {', '.join(node)}"
            )
        if isinstance(value, SpecBase):
            node[leaf] = to_plain(value)
            drop_sources(dotted)
            flat.update({f"{dotted}.{p}": text for p, text in value.sources.items()})
            continue
        node[leaf] = value
        if value is None:
            drop_sources(dotted)
        elif setting.table_entry or setting.field.metadata["kind"] in _PARSERS:
            flat[dotted] = given.get(dotted, f"U: set in {origin}")
        else:  # names, descriptions and choices need no source; an old one no longer applies
            flat.pop(dotted, None)

    for path, text in given.items():
        if not _exists(plain, path.split(".")) and not _table_entry_exists(plain, path):
            raise HardwareSpecError(f"{origin}: [sources] names {path!r}, which is not set")
        flat[path] = text
    return check_ranges(from_plain(root, plain, flat, origin), origin)


def _table_entry_exists(plain: Mapping[str, object], path: str) -> bool:
    # Precision names contain dots ("fp16.16"): try each split point.
    parts = path.split(".")
    for cut in range(1, len(parts)):
        head, tail = parts[:cut], ".".join(parts[cut:])
        node: object = plain
        for part in head:
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping) and tail in node:
            return True
    return False
