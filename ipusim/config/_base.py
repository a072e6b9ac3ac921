"""The attribute-tree machinery behind :class:`~ipusim.config.IPUConfig`.

A config is a tree: categories are nested :class:`_ConfigBase` objects reached by attribute
access (``cfg.io_tiles.num_io_tiles``) and options are the leaves. Each class declares its
children in ``_FIELDS`` (:class:`Option` and :class:`Category` entries, in display order), so
names, defaults, documentation and types live in one table instead of being recovered from
source code as IPU TensorFlow does. The behaviour follows IPU TensorFlow's ``_ConfigBase``:

* assignment is strictly type checked: ``type(value) is type(default)`` (no int→float or
  bool→int conversion) unless the option declares its own check;
* unknown names, read or written, raise :class:`ConfigAttributeError` (a ``ValueError``) with a
  "Did you mean ...?" suggestion naming the full dotted attribute;
* categories cannot be assigned to; deprecated options warn when set;
* ``to_dict``/``from_dict``/``to_json``/``from_json`` use a flat dict keyed by full dotted
  name, enums stored as their ``.value``.
"""

from __future__ import annotations

import builtins
import copy
import difflib
import enum
import json
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError, IPUSimError

__all__ = ["AttributeMetadata", "Category", "ConfigAttributeError", "Option"]


class ConfigAttributeError(IPUSimError, ValueError, AttributeError):
    """A name that is not an attribute of the config was read or written.

    A ``ValueError`` as in IPU TensorFlow; also an ``AttributeError`` so that ``hasattr``,
    ``getattr(obj, name, default)``, ``copy`` and ``pickle`` behave normally.
    """


@dataclass(frozen=True)
class Option:
    """Declaration of one option (a leaf of the config tree).

    Attributes:
        name: Attribute name inside its category.
        default: Default value; copied for every new config.
        doc: What the option means.
        type_str: Type shown to users; defaults to the default's type name.
        check: Custom type check (for annotated options); defaults to an exact type match
            with the default.
        hint: Extra advice appended to type errors.
        deprecated_msg: Set for a deprecated option; shown when it is assigned.
    """

    name: str
    default: Any
    doc: str
    type_str: str | None = None
    check: Callable[[Any], bool] | None = None
    hint: str = ""
    deprecated_msg: str | None = None


@dataclass(frozen=True)
class Category:
    """Declaration of a nested category: a ``_ConfigBase`` subclass reached by ``name``."""

    name: str
    cls: type[_ConfigBase]
    doc: str
    deprecated_msg: str | None = None


def _type_advice(value: Any, actual_type: type | None) -> str:
    """A sentence saying how to write ``value`` so that it has ``actual_type``."""
    got = type(value)
    if actual_type is float and got is int:
        return f" Write it as a float, for example {float(value)!r}."
    if actual_type is int and got is float and value.is_integer():
        return f" Write it as an int, for example {int(value)}."
    if actual_type is int and got is bool:
        return " A bool is not accepted where an int is expected."
    if actual_type is bool:
        return " Use True or False."
    if isinstance(actual_type, type) and issubclass(actual_type, enum.Enum):
        members = ", ".join(f"{actual_type.__name__}.{m.name}" for m in actual_type)
        return f" Use one of {members}."
    if actual_type is dict:
        return " Pass a dict mapping option names to values."
    return ""


class AttributeMetadata:
    """Metadata of one attribute (option or category) of a config.

    Returned by :meth:`_ConfigBase.get_attribute_metadata`. ``__doc__`` holds the attribute's
    description.
    """

    def __init__(
        self,
        name: str,
        doc: str = "",
        depth: int = 0,
        default: Any = None,
        deprecated_msg: str | None = None,
        attr_type: str | None = None,
        check_type_fn: Callable[[Any], bool] | None = None,
        actual_type: type | None = None,
        hint: str = "",
    ) -> None:
        self._name = name
        self.__doc__ = doc
        self._depth = depth
        self._default = default
        self._deprecated_msg = deprecated_msg
        self._type = attr_type
        self._check_type_fn = check_type_fn if check_type_fn is not None else _accept_any
        self._actual_type = actual_type
        self._hint = hint

    @property
    def name(self) -> str:
        """Full dotted name relative to the root config, e.g. ``"io_tiles.num_io_tiles"``."""
        return self._name

    @property
    def type(self) -> str | None:
        """Allowed type as text (``"int"``, ``"SelectionOrder"``, ...); ``None`` for categories."""
        return self._type

    @property
    def actual_type(self) -> builtins.type | None:  # `type` here is the property above
        """Python type of the default for plain options; ``None`` otherwise."""
        return self._actual_type

    @property
    def default(self) -> Any:
        """Default value (a copy); ``None`` for categories."""
        return copy.deepcopy(self._default)

    @property
    def deprecated(self) -> bool:
        """Whether the attribute is deprecated."""
        return self._deprecated_msg is not None

    @property
    def deprecated_msg(self) -> str | None:
        """Deprecation message, or ``None`` if the attribute is not deprecated."""
        return self._deprecated_msg

    def check_type(self, value: Any) -> bool:
        """Check that ``value`` may be assigned to this attribute.

        Returns:
            True when it may.

        Raises:
            TypeError: ``value`` does not have the attribute's type.
        """
        if not self._check_type_fn(value):
            raise InvalidTypeError(
                f"Cannot set {self._name} to {value!r} (of type {type(value).__name__}): it "
                f"must be of type {self._type}, and values are not converted between types."
                f"{_type_advice(value, self._actual_type)}{self._hint}"
            )
        return True

    def warn_if_deprecated(self, stacklevel: int = 2) -> None:
        """Emit a ``FutureWarning`` if the attribute is deprecated."""
        if self._deprecated_msg is not None:
            warnings.warn(
                f"{self._name} is deprecated: {self._deprecated_msg}",
                FutureWarning,
                stacklevel=stacklevel + 1,
            )

    def __repr__(self) -> str:
        return f"AttributeMetadata(name={self._name!r}, type={self._type!r})"


class _ExactType:
    """Picklable check ``type(v) is expected`` (no subclasses, no conversion)."""

    def __init__(self, expected: type) -> None:
        self.expected = expected

    def __call__(self, value: Any) -> bool:
        return type(value) is self.expected


def _accept_any(value: Any) -> bool:
    return True


class _ConfigBase:
    """A node of the config tree. Subclasses declare their children in ``_FIELDS``."""

    _FIELDS: ClassVar[tuple[Option | Category, ...]] = ()
    # Set in __init__ through ``__dict__`` (``__setattr__`` only accepts declared attributes).
    _user_attributes: dict[str, AttributeMetadata]
    _nested_configs: list[str]
    _frozen: bool

    def __init__(
        self, _prefix: str = "", _depth: int = 0, _parent_deprecation: str | None = None
    ) -> None:
        d = self.__dict__
        d["_user_attributes"] = {}
        d["_nested_configs"] = []
        d["_frozen"] = False
        for field in type(self)._FIELDS:
            full = _prefix + field.name
            deprecated = field.deprecated_msg or _parent_deprecation
            if isinstance(field, Category):
                child = field.cls(
                    _prefix=full + ".", _depth=_depth + 1, _parent_deprecation=deprecated
                )
                meta = AttributeMetadata(full, field.doc, _depth, deprecated_msg=deprecated)
                d["_nested_configs"].append(field.name)
                d[field.name] = child
            else:
                default = field.default
                meta = AttributeMetadata(
                    full,
                    field.doc,
                    _depth,
                    default=copy.deepcopy(default),
                    deprecated_msg=deprecated,
                    attr_type=field.type_str or type(default).__name__,
                    check_type_fn=field.check or _ExactType(type(default)),
                    actual_type=None if field.check else type(default),
                    hint=field.hint,
                )
                d[field.name] = copy.deepcopy(default)
            d["_user_attributes"][field.name] = meta

    # -- attribute access ---------------------------------------------------------------

    def _full_name(self, attr: str) -> str:
        return self._user_attributes[attr].name

    def _unknown(self, k: str) -> ConfigAttributeError:
        names = list(self._user_attributes)
        # Candidates are this category's attributes and, deeper down, options by their last
        # name part: `cfg.num_io_tile` most likely means `io_tiles.num_io_tiles`.
        candidates = {m.name.rsplit(".", 1)[-1]: m.name for _, m in self._iter_options()}
        candidates.update((n, self._full_name(n)) for n in names)
        close = difflib.get_close_matches(k, list(candidates), n=1)
        sugg = f" Did you mean '{candidates[close[0]]}'?" if close else ""
        where = self._prefix_text()
        return ConfigAttributeError(
            f"'{k}' is not an attribute of {where}.{sugg} Its attributes are: {', '.join(names)}."
        )

    def _prefix_text(self) -> str:
        if not self._user_attributes:
            return "this config"
        first = next(iter(self._user_attributes.values())).name
        return f"'{first.rsplit('.', 1)[0]}'" if "." in first else "IPUConfig"

    def __getattr__(self, k: str) -> Any:
        # Only reached when normal lookup fails.
        if (k.startswith("__") and k.endswith("__")) or "_user_attributes" not in self.__dict__:
            raise AttributeError(k)
        raise self._unknown(k)

    def __setattr__(self, k: str, v: Any) -> None:
        if k not in self._user_attributes:
            raise self._unknown(k)
        meta = self._user_attributes[k]
        if self._frozen:
            raise IncompatibleStateError(
                f"Cannot set {meta.name}: this config is the active configuration registered "
                "by configure_ipu_system() and is read-only. Copy it with copy.deepcopy(), "
                "change the copy and call configure_ipu_system() with it."
            )
        meta.warn_if_deprecated(stacklevel=2)
        if k in self._nested_configs:
            raise InvalidTypeError(
                f"{meta.name} is a category of options and cannot be assigned to; set the "
                f"options inside it instead, for example {meta.name}."
                f"{next(iter(getattr(self, k)._user_attributes))} = ..."
            )
        meta.check_type(v)
        self.__dict__[k] = v

    def __delattr__(self, k: str) -> None:
        if k not in self._user_attributes:
            raise self._unknown(k)
        raise InvalidTypeError(
            f"Cannot delete {self._full_name(k)}: config attributes can only be reassigned."
        )

    def _iter_options(self) -> Iterator[tuple[_ConfigBase, AttributeMetadata]]:
        """Yield ``(owner, metadata)`` for every option below this node, in display order."""
        for k, meta in self._user_attributes.items():
            if k in self._nested_configs:
                yield from self.__dict__[k]._iter_options()
            else:
                yield self, meta

    def _set_frozen(self, frozen: bool) -> None:
        self.__dict__["_frozen"] = frozen
        for k in self._nested_configs:
            self.__dict__[k]._set_frozen(frozen)

    def _validate(self) -> None:
        """Check the values at configure time; categories with rules override and recurse."""
        for k in self._nested_configs:
            self.__dict__[k]._validate()

    # -- public methods -----------------------------------------------------------------

    def get_attribute_metadata(self, attr: str) -> AttributeMetadata:
        """Metadata of an attribute.

        Args:
            attr: Dotted name relative to this category, e.g. ``"io_tiles.num_io_tiles"``.

        Returns:
            The attribute's :class:`AttributeMetadata`.

        Raises:
            ValueError: ``attr`` does not name an attribute.
        """
        if not isinstance(attr, str) or not attr:
            raise ConfigurationError(
                f"get_attribute_metadata() needs a dotted attribute name such as "
                f"'io_tiles.num_io_tiles'; received {attr!r}."
            )
        node: _ConfigBase = self
        parts = attr.split(".")
        try:
            for part in parts[:-1]:
                node = getattr(node, part)
                if not isinstance(node, _ConfigBase):
                    raise ConfigAttributeError(f"'{part}' is an option, not a category.")
            if parts[-1] not in node._user_attributes:
                raise node._unknown(parts[-1])
        except ConfigAttributeError as e:
            raise ConfigurationError(f"No metadata for '{attr}': {e}") from None
        return node._user_attributes[parts[-1]]

    def to_dict(self) -> dict[str, Any]:
        """Flat dict of every option, keyed by full dotted name; enums as their ``.value``."""
        out: dict[str, Any] = {}
        for owner, meta in self._iter_options():
            value = owner.__dict__[meta.name.rsplit(".", 1)[-1]]
            out[meta.name] = value.value if isinstance(value, enum.Enum) else copy.deepcopy(value)
        return out

    def from_dict(self, dct: dict[str, Any]) -> None:
        """Set options from a flat dict as produced by :meth:`to_dict`.

        Enum options accept a member or its ``.value``. Every value is type checked before any
        is assigned, so a bad dict leaves the config unchanged. Options missing from ``dct``
        keep their current value and keys that name no option are ignored; both cases warn.

        Raises:
            TypeError: ``dct`` is not a dict, or a value has the wrong type.
            ValueError: a value is not a valid member of an enum option.
        """
        if not isinstance(dct, dict):
            raise InvalidTypeError(
                f"from_dict() expects a dict keyed by dotted option names (as returned by "
                f"to_dict()); received a {type(dct).__name__}."
            )
        pending: list[tuple[_ConfigBase, str, Any]] = []
        missing: list[str] = []
        known: set[str] = set()
        for owner, meta in self._iter_options():
            known.add(meta.name)
            if meta.name not in dct:
                missing.append(meta.name)
                continue
            value = dct[meta.name]
            typ = meta.actual_type
            if typ is not None and issubclass(typ, enum.Enum) and not isinstance(value, typ):
                try:
                    value = typ(value)
                except ValueError:
                    valid = ", ".join(f"{m.value!r} ({m.name})" for m in typ)
                    raise ConfigurationError(
                        f"{meta.name} = {value!r} is not a {typ.__name__} value; valid values "
                        f"are {valid}."
                    ) from None
            meta.check_type(value)
            pending.append((owner, meta.name.rsplit(".", 1)[-1], value))
        unknown = [k for k in dct if k not in known]
        if missing:
            warnings.warn(
                f"from_dict(): no value given for {', '.join(missing)}; keeping the current "
                "value(s).",
                UserWarning,
                stacklevel=2,
            )
        if unknown:
            warnings.warn(
                f"from_dict(): ignoring key(s) that name no option: {', '.join(unknown)}.",
                UserWarning,
                stacklevel=2,
            )
        for owner, name, value in pending:
            if value != owner.__dict__[name]:
                setattr(owner, name, value)

    def to_json(self) -> str:
        """The :meth:`to_dict` dict as a JSON string."""
        return json.dumps(self.to_dict())

    def from_json(self, json_cfg: str) -> None:
        """Set options from a JSON string produced by :meth:`to_json` (see :meth:`from_dict`)."""
        if not isinstance(json_cfg, str | bytes | bytearray):
            raise InvalidTypeError(
                f"from_json() expects a JSON string (as returned by to_json()); received a "
                f"{type(json_cfg).__name__}."
            )
        self.from_dict(json.loads(json_cfg))

    # -- copying, comparison, display ---------------------------------------------------

    def __deepcopy__(self, memo: dict[int, Any]) -> _ConfigBase:
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        new._set_frozen(False)  # a copy of the active config is the user's to change
        return new

    def __copy__(self) -> _ConfigBase:
        # A shallow copy would share categories with the original; always copy deeply.
        return copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __str__(self) -> str:
        lines = []
        for owner, meta in self._iter_options():
            value = owner.__dict__[meta.name.rsplit(".", 1)[-1]]
            shown = value if isinstance(value, enum.Enum) else repr(value)
            lines.append(f"{meta.name} = {shown}")
        return os.linesep.join(lines)

    def __repr__(self) -> str:
        body = ["  " + line for line in str(self).split(os.linesep)]
        return os.linesep.join([f"{type(self).__name__}:", *body])


def describe_fields(cls: type[_ConfigBase], prefix: str = "") -> list[str]:
    """Documentation lines for every attribute declared below ``cls``, for class docstrings."""
    lines: list[str] = []
    for field in cls._FIELDS:
        full = prefix + field.name
        first = field.doc.strip().split("\n\n")[0].replace("\n", " ")
        if isinstance(field, Category):
            lines.append(f"    {full} (category): {first}")
            lines.extend(describe_fields(field.cls, full + "."))
        else:
            kind = field.type_str or type(field.default).__name__
            default = field.default
            shown = default if isinstance(default, enum.Enum) else repr(default)
            note = " DEPRECATED." if field.deprecated_msg else ""
            lines.append(f"    {full} ({kind}, default {shown}):{note} {first}")
    return lines
