"""A study: the workload to run and the configurations to run it on, from TOML or a dict.

A study file names the workload and gives the configurations either as a grid (every
combination of the listed values) or as an explicit list; ``[fixed]`` values go into every
configuration::

    workload = "mlp_timing"          # a registered name, or "module:function"
    name = "batch size vs IPUs"      # optional

    [fixed]
    steps_per_execution = 10

    [grid]                           # cartesian product, the last key varying fastest
    ipus = [1, 2, 4]
    batch_size = [16, 32, 64]

or, instead of ``[grid]``::

    [[configs]]
    ipus = 1
    batch_size = 16

    [[configs]]
    ipus = 4
    batch_size = 64

Configuration values are plain data (bool, int, finite float, str, lists and tables of these),
so each configuration has a canonical JSON text and a stable :func:`config_key`.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import os
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipusim.errors import MissingFileError
from ipusim.sweep.errors import SweepError
from ipusim.sweep.registry import Workload

__all__ = ["Study", "canonical_json", "config_key", "describe_config"]

#: Configurations a study may hold at most. E: a million runs is days of CPU even for the
#: timing-only workload (~0.1 s each); a larger grid is a typo, and its list would not fit memory.
MAX_CONFIGS = 1_000_000

_TOP_LEVEL = ("workload", "name", "description", "fixed", "grid", "configs")
#: Key length of :func:`config_key`, in hex characters.
KEY_HEX_CHARS = 16


def canonical_json(config: Mapping[str, Any]) -> str:
    """The canonical JSON text of a configuration: sorted keys, no spaces, ASCII only."""
    return json.dumps(
        config, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def config_key(config: Mapping[str, Any]) -> str:
    """First 16 hex characters of the SHA-256 of :func:`canonical_json` of ``config``."""
    digest = hashlib.sha256(canonical_json(config).encode("ascii")).hexdigest()
    return digest[:KEY_HEX_CHARS]


def _check_value(where: str, value: Any) -> Any:
    """``value`` if it is plain data (bool, int, finite float, str, lists and tables of them)."""
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SweepError(f"{where} = {value!r}: configuration values must be finite numbers")
        return value
    if isinstance(value, list | tuple):
        return [_check_value(f"{where}[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise SweepError(f"{where} has key {k!r}; table keys must be strings")
            out[k] = _check_value(f"{where}.{k}", v)
        return out
    raise SweepError(
        f"{where} = {value!r} ({type(value).__name__}): configuration values must be a bool, "
        "int, finite float, str, or a list or table of these"
    )


def _check_table(where: str, table: Any) -> dict[str, Any]:
    if not isinstance(table, Mapping):
        raise SweepError(f"{where} must be a table of key = value; got {table!r}")
    out = {}
    for key, value in table.items():
        if not isinstance(key, str) or not key:
            raise SweepError(f"{where} has key {key!r}; keys must be non-empty strings")
        out[key] = _check_value(f"{where}.{key}", value)
    return out


def describe_config(config: Mapping[str, Any], limit: int = 4) -> str:
    items = [f"{k} = {v!r}" for k, v in list(config.items())[:limit]]
    return ", ".join(items) + (", ..." if len(config) > limit else "")


@dataclass(frozen=True)
class Study:
    """A workload and the ordered configurations to run it on.

    Build one with :meth:`from_toml`, :meth:`from_dict` or :meth:`from_configs`; the constructor
    checks the configurations (plain data, all distinct).

    Attributes:
        workload: a registered name, ``"module:function"``, or a callable ``fn(config) -> dict``.
        configs: the configurations, in the order the results are reported.
        name: a title for the study (optional).
        source: where the study came from (a file path or ``"<dict>"``), used in messages.
    """

    workload: str | Workload
    configs: tuple[dict[str, Any], ...]
    name: str = ""
    source: str = "<study>"

    def __post_init__(self) -> None:
        if not (callable(self.workload) or (isinstance(self.workload, str) and self.workload)):
            raise SweepError(
                f"{self.source}: workload must be a registered name such as 'mlp_timing', a "
                f"'module:function' string or a callable; got {self.workload!r}"
            )
        if isinstance(self.configs, Mapping) or not isinstance(self.configs, Sequence):
            raise SweepError(
                f"{self.source}: configs must be a list of tables (dicts); got {self.configs!r}"
            )
        configs = tuple(
            _check_table(f"{self.source}: configs[{i}]", c) for i, c in enumerate(self.configs)
        )
        if not configs:
            raise SweepError(f"{self.source}: the study has no configurations")
        seen: dict[str, int] = {}
        for i, config in enumerate(configs):
            text = canonical_json(config)
            if text in seen:
                raise SweepError(
                    f"{self.source}: configs[{i}] ({describe_config(config)}) is the same configuration "
                    f"as configs[{seen[text]}]; every configuration must be distinct"
                )
            seen[text] = i
        object.__setattr__(self, "configs", configs)
        object.__setattr__(self, "name", str(self.name))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Study:
        """Read a study file (see the module docstring for its layout).

        Raises:
            FileNotFoundError: if there is no such file.
            SweepError: if the file is not valid TOML or not a valid study.
        """
        path = Path(path)
        if not path.is_file():
            raise MissingFileError(f"no study file at {str(path)!r}")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SweepError(f"{path}: not valid TOML ({exc})") from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> Study:
        """Build a study from the same layout as a study file, as a dict.

        Args:
            data: ``workload``, optional ``name`` / ``description``, optional ``fixed`` (a dict),
                and exactly one of ``grid`` (key → non-empty list of values) or ``configs``
                (a list of dicts).
            source: named in error messages.

        Raises:
            SweepError: naming the offending key.
        """
        if not isinstance(data, Mapping):
            raise SweepError(f"{source}: a study must be a table (dict); got {data!r}")
        for key in data:
            if key not in _TOP_LEVEL:
                close = difflib.get_close_matches(str(key), _TOP_LEVEL, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise SweepError(
                    f"{source}: unknown key {key!r} at the top level; allowed: "
                    f"{', '.join(_TOP_LEVEL)}.{hint}"
                )
        if "workload" not in data:
            raise SweepError(
                f"{source}: missing 'workload': give a registered name (workload = "
                '"mlp_timing") or a function (workload = "package.module:function")'
            )
        workload = data["workload"]
        if not callable(workload) and not (isinstance(workload, str) and workload):
            raise SweepError(
                f"{source}: workload must be a non-empty string (a registered name or "
                f"'module:function'); got {workload!r}"
            )
        name = data.get("name", "")
        if not isinstance(name, str):
            raise SweepError(f"{source}: name must be a string; got {name!r}")
        fixed = _check_table(f"{source}: [fixed]", data.get("fixed", {}))
        has_grid, has_configs = "grid" in data, "configs" in data
        if has_grid == has_configs:
            raise SweepError(
                f"{source}: give the configurations either as a [grid] table (key = [values]) "
                "or as [[configs]] entries, "
                + ("not both" if has_grid else "but neither was found")
            )
        if has_grid:
            configs = _grid_configs(source, data["grid"], fixed)
        else:
            configs = _listed_configs(source, data["configs"], fixed)
        return cls(workload=workload, configs=tuple(configs), name=name, source=source)

    @classmethod
    def from_configs(
        cls,
        workload: str | Workload,
        configs: Sequence[Mapping[str, Any]],
        fixed: Mapping[str, Any] | None = None,
        name: str = "",
    ) -> Study:
        """A study of an explicit list of configurations (``fixed`` merged into each)."""
        data: dict[str, Any] = {"workload": workload, "configs": list(configs), "name": name}
        if fixed:
            data["fixed"] = dict(fixed)
        return cls.from_dict(data, source="<configs>")

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.configs)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.configs)

    @property
    def keys(self) -> list[str]:
        """Every configuration key, in first-seen order."""
        return list(dict.fromkeys(k for config in self.configs for k in config))

    def config_keys(self) -> list[str]:
        """:func:`config_key` of each configuration, in order."""
        return [config_key(config) for config in self.configs]


def _grid_configs(source: str, grid: Any, fixed: dict[str, Any]) -> list[dict[str, Any]]:
    if not isinstance(grid, Mapping) or not grid:
        raise SweepError(
            f"{source}: [grid] must be a non-empty table of key = [values], for example "
            f"batch_size = [16, 32]; got {grid!r}"
        )
    axes: dict[str, list[Any]] = {}
    for key, values in grid.items():
        if not isinstance(key, str) or not key:
            raise SweepError(f"{source}: [grid] has key {key!r}; keys must be non-empty strings")
        if not isinstance(values, list | tuple) or not values:
            raise SweepError(
                f"{source}: [grid] {key} must be a non-empty list of values, for example "
                f"{key} = [1, 2]; got {values!r}"
            )
        if key in fixed:
            raise SweepError(
                f"{source}: key {key!r} is in both [fixed] and [grid]; keep it in one of them"
            )
        axes[key] = [_check_value(f"{source}: [grid] {key}[{i}]", v) for i, v in enumerate(values)]
    size = math.prod(len(values) for values in axes.values())
    if size > MAX_CONFIGS:
        raise SweepError(
            f"{source}: [grid] makes {size:,} configurations ("
            + " x ".join(f"{len(v)} {k}" for k, v in axes.items())
            + f"), more than a sweep runs ({MAX_CONFIGS:,}); split the study or list fewer values"
        )
    combos = itertools.product(*axes.values())
    return [{**fixed, **dict(zip(axes, combo))} for combo in combos]


def _listed_configs(source: str, configs: Any, fixed: dict[str, Any]) -> list[dict[str, Any]]:
    if not isinstance(configs, list | tuple) or not configs:
        raise SweepError(
            f"{source}: configs must be a non-empty list of tables ([[configs]] entries in "
            f"TOML); got {configs!r}"
        )
    out = []
    for i, config in enumerate(configs):
        table = _check_table(f"{source}: configs[{i}]", config)
        for key in table:
            if key in fixed:
                raise SweepError(
                    f"{source}: configs[{i}] sets {key!r}, which [fixed] also sets; keep it in "
                    "one of them"
                )
        out.append({**fixed, **table})
    return out
