"""Load chips and systems from the bundled presets, user TOML files and override mappings.

Presets live in ``ipusim/hardware/presets/*.toml`` (package data). A file is a chip
(``kind = "chip"``, the fields of :class:`IPUSpec`) or a system (``kind = "system"``, the fields of
:class:`SystemSpec`). Both accept:

* ``base = "M2000"``: start from a preset (or from another TOML file, relative to this one) and
  override only what the file sets. Without ``base`` every field must be given.
* ``chip = "Bow"`` (systems only): use that chip (a preset name or a chip TOML path) as ``ipu``.
* any field, by its name or its short key without the unit (``clock`` for ``clock_hz``), as nested
  tables (``[ipu] clock = "1.4GHz"``) or dotted keys (``host.per_execution_overhead = "1ms"``);
  values with units may be human strings ("624KiB", "1.325GHz", "100Gb/s", "2.8ms") or plain
  numbers in base units; ``streaming_memory = "none"`` removes an optional part.
* ``[sources]``: ``"field.path" = "FLAG: source text"`` (flags S, M, D, E, 2nd, U). Figures a file
  sets without a source are recorded as ``"U: set in <file>"``.

Example user file::

    base = "M2000"
    name = "M2000-fast"
    [ipu]
    clock = "1.4GHz"
    [host]
    per_execution_overhead = "1ms"
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from ipusim.errors import HardwareSpecError, InvalidTypeError, MissingFileError
from ipusim.hardware._base import SpecBase
from ipusim.hardware._schema import apply_document
from ipusim.hardware.specs import GENERATIONS, IPUSpec, SystemSpec

__all__ = ["DEFAULT_SYSTEM", "get_chip", "list_chips", "list_systems", "load_system"]

DEFAULT_SYSTEM = "IPU"
_META_KEYS = ("kind", "aliases", "base", "chip", "sources")

#: The spec a document builds: a chip (``IPUSpec``) or a system (``SystemSpec``).
_Spec = TypeVar("_Spec", IPUSpec, SystemSpec)
#: A document's ``kind`` for each spec class.
_KINDS: dict[type[SpecBase], str] = {IPUSpec: "chip", SystemSpec: "system"}


class _Preset(NamedTuple):
    name: str
    kind: str
    document: Mapping[str, Any]
    origin: str


def _key(name: str) -> str:
    """Case-, space-, dash- and underscore-insensitive look-up key: "Bow Pod_16" → "bowpod16"."""
    return re.sub(r"[\s_\-]", "", name.lower())


@functools.cache
def _registry() -> dict[str, dict[str, _Preset]]:
    """Presets by kind, then by look-up key (names and aliases)."""
    registry: dict[str, dict[str, _Preset]] = {"chip": {}, "system": {}}
    folder = resources.files("ipusim.hardware").joinpath("presets")
    for item in sorted(folder.iterdir(), key=lambda entry: entry.name):
        if not item.name.endswith(".toml"):
            continue
        origin = f"preset {item.name}"
        document = tomllib.loads(item.read_text(encoding="utf-8"))
        kind, name = document.get("kind"), document.get("name")
        if kind not in registry or not isinstance(name, str):
            raise HardwareSpecError(f"{origin}: needs kind = 'chip' or 'system' and a name")
        preset = _Preset(name, kind, document, origin)
        for alias in [name, *document.get("aliases", [])]:
            taken = registry[kind].get(_key(alias))
            if taken is not None and taken.origin != origin:
                raise HardwareSpecError(
                    f"{origin}: {kind} name {alias!r} is already taken by {taken.origin}"
                )
            registry[kind][_key(alias)] = preset
    return registry


def _names(kind: str) -> list[str]:
    return list(dict.fromkeys(preset.name for preset in _registry()[kind].values()))


def _unknown_name(kind: str, name: str) -> HardwareSpecError:
    names = list_systems() if kind == "system" else list_chips()
    keys = {_key(n): n for n in names}
    guess = difflib.get_close_matches(_key(name), list(keys), n=1, cutoff=0.5)
    hint = f"; did you mean {keys[guess[0]]!r}?" if guess else "."
    return HardwareSpecError(
        f"unknown {kind} {name!r}{hint} Presets: {', '.join(names)}; or pass the path of a "
        f"{kind} .toml file"
    )


def _looks_like_path(name: str) -> bool:
    return name.endswith(".toml") or "/" in name or os.sep in name or Path(name).is_file()


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MissingFileError(f"hardware file {str(path)!r} does not exist") from None
    except UnicodeDecodeError as error:
        raise HardwareSpecError(
            f"{path}: not a UTF-8 text file ({error}); hardware files are TOML text"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HardwareSpecError(f"{path}: not valid TOML: {error}") from None


def _build(
    root: type[_Spec],
    document: Mapping[str, Any],
    origin: str,
    folder: Path | None,
    stack: tuple[str, ...],
    base: _Spec | None = None,
) -> _Spec:
    """Apply one document (preset, file or overrides) on top of its base."""
    kind = _KINDS[root]
    settings = {k: v for k, v in document.items() if k not in _META_KEYS}
    declared = document.get("kind", kind)
    if declared != kind:
        raise HardwareSpecError(f"{origin}: kind is {declared!r}; expected {kind!r} here")
    if "base" in document:
        if base is not None:
            raise HardwareSpecError(f"{origin}: 'base' is only allowed in files")
        base = _resolve(root, document["base"], folder, stack, "base")
    replacements: dict[str, SpecBase] = {}
    if "chip" in document:
        if kind != "system":
            raise HardwareSpecError(f"{origin}: 'chip' is only allowed in system files")
        replacements["ipu"] = _resolve(IPUSpec, document["chip"], folder, stack, "chip")
    sources = document.get("sources", {})
    if not isinstance(sources, Mapping):
        raise InvalidTypeError(f"{origin}: [sources] must be a table of 'path' = 'FLAG: text'")
    return apply_document(root, base, settings, sources, origin, replacements)


def _resolve(
    root: type[_Spec], ref: object, folder: Path | None, stack: tuple[str, ...], argument: str
) -> _Spec:
    """A preset name or a file path (relative to ``folder``) → spec."""
    kind = _KINDS[root]
    if isinstance(ref, root):
        return ref
    if not isinstance(ref, str | os.PathLike):  # a spec of the other kind included
        got = type(ref).__name__ if isinstance(ref, SpecBase) else f"{type(ref).__name__} {ref!r}"
        raise InvalidTypeError(
            f"{argument}: got {got}; expected a {kind} name or path (or the {root.__name__} itself)"
        )
    preset = _registry()[kind].get(_key(ref)) if isinstance(ref, str) else None
    if preset is not None:
        return _preset(root, preset.name)
    if isinstance(ref, str) and not _looks_like_path(ref):
        raise _unknown_name(kind, ref)
    path = Path(ref)
    if folder is not None and not path.is_absolute():
        path = folder / path
    return _load_file(root, path.resolve(), stack)


def _load_file(root: type[_Spec], path: Path, stack: tuple[str, ...]) -> _Spec:
    if str(path) in stack:
        raise HardwareSpecError(
            f"{path}: 'base' files form a cycle: {' -> '.join((*stack, str(path)))}"
        )
    try:
        return _build(root, _read_file(path), str(path), path.parent, (*stack, str(path)))
    except TypeError as error:  # a value of the wrong type in the file is the file's fault
        raise HardwareSpecError(str(error)) from None


_IN_PROGRESS: set[tuple[str, str]] = set()
#: Presets built so far (specs are frozen, so one object serves every caller).
_BUILT: dict[tuple[type[SpecBase], str], SpecBase] = {}


def _preset(root: type[_Spec], name: str) -> _Spec:
    """The preset ``name`` of ``root``'s kind, built once."""
    built = _BUILT.get((root, name))
    if isinstance(built, root):
        return built
    kind = _KINDS[root]
    if (kind, name) in _IN_PROGRESS:
        raise HardwareSpecError(f"preset {kind} {name!r}: 'base' presets form a cycle")
    _IN_PROGRESS.add((kind, name))
    try:
        preset = _registry()[kind][_key(name)]
        spec = _build(root, preset.document, preset.origin, None, (f"preset {name}",))
    finally:
        _IN_PROGRESS.discard((kind, name))
    _BUILT[(root, name)] = spec
    return spec


def list_systems() -> list[str]:
    """Names of the system presets, by chip generation and then IPU count."""
    specs = [_preset(SystemSpec, name) for name in _names("system")]
    specs.sort(key=lambda s: (GENERATIONS.index(s.ipu.generation), s.num_ipus, s.name))
    return [spec.name for spec in specs]


def list_chips() -> list[str]:
    """Names of the chip presets, oldest generation first."""
    chips = [_preset(IPUSpec, name) for name in _names("chip")]
    chips.sort(key=lambda c: GENERATIONS.index(c.generation))
    return [chip.name for chip in chips]


def get_chip(name: str | os.PathLike[str]) -> IPUSpec:
    """A chip preset by name or alias ("GC2"/"ipu1"/"Mk1", "GC200"/"ipu2"/"Mk2", "Bow"), or a
    chip TOML file.

    Raises:
        ValueError: unknown name (with the closest preset) or an invalid file.
    """
    return _resolve(IPUSpec, name, None, (), "name")


def load_system(
    name_or_path_or_spec: str | os.PathLike[str] | SystemSpec | None = None,
    overrides: Mapping[str, object] | None = None,
    num_ipus: int | None = None,
) -> SystemSpec:
    """Load a system: a preset, a user TOML file, or a given spec, then apply overrides.

    Args:
        name_or_path_or_spec: a preset name (case-insensitive; see :func:`list_systems`), the
            path of a system TOML file, a :class:`SystemSpec`, or None for the default
            ``"IPU"`` system (one GC200 in an IPU-M2000 seat).
        overrides: settings applied last, as in a file: ``{"ipu.clock": "1.4GHz",
            "host": {"per_execution_overhead": "1ms"}, "chip": "Bow", "streaming_memory":
            "none"}``; a ``"sources"`` entry may give their sources.
        num_ipus: use this many IPUs (see :meth:`SystemSpec.with_num_ipus`).

    Returns:
        A validated, frozen :class:`SystemSpec`.

    Raises:
        ValueError: unknown preset or setting (with the closest match), a bad value or unit,
            missing settings, or num_ipus out of range.
        TypeError: a value of the wrong type.
        FileNotFoundError: the file does not exist.
    """
    ref = DEFAULT_SYSTEM if name_or_path_or_spec is None else name_or_path_or_spec
    spec = _resolve(SystemSpec, ref, None, (), "name_or_path_or_spec")
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise InvalidTypeError(
                f"overrides: got {type(overrides).__name__}; expected a mapping such as "
                "{'ipu.clock': '1.4GHz'}"
            )
        misplaced = sorted(set(overrides) & {"base", "kind", "aliases"})
        if misplaced:
            raise HardwareSpecError(
                f"overrides: {', '.join(misplaced)} cannot be overridden; pass the base system as "
                "the first argument instead"
            )
        spec = _build(SystemSpec, overrides, "overrides", None, (), base=spec)
    if num_ipus is not None:
        spec = spec.with_num_ipus(num_ipus)
    return spec
