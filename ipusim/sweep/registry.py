"""Workloads of a sweep: the function run once per configuration, found by name or by import.

A workload is a callable ``fn(config: dict) -> dict`` returning one row of scalar figures. It may
carry a check of one configuration as its ``validate_config`` attribute (``fn.validate_config =
check``, where ``check(config)`` raises ValueError, TypeError or KeyError saying what is wrong):
a sweep checks every configuration with it before it runs any, so a misspelt key stops the sweep
at once instead of failing its rows one by one. It may also carry a ``warm_up`` attribute, a
function of no arguments that loads what every run needs (imports, Numba's compiler): a local
sweep calls it once in the sweep process before forking its workers, so they start warm instead
of each paying that cost. A study
names it either as ``"module:function"`` (imported, so it works in any worker process that can
import the module) or by a name given to :func:`register_workload`. Built-in names point to
``"module:function"`` strings, so importing this module imports no model code.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable
from typing import Any

from ipusim.sweep.errors import SweepError

__all__ = [
    "Workload",
    "config_validator",
    "warm_up_of",
    "register_workload",
    "resolve_workload",
    "workload_label",
    "workload_names",
]

#: A workload: one configuration in, one row of scalar figures out.
Workload = Callable[[dict[str, Any]], dict[str, Any]]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")

#: Name → callable, or "module:function" imported on first use.
_REGISTRY: dict[str, Workload | str] = {
    "mlp_timing": "ipusim.sweep.workloads:mlp_timing",
}


def register_workload(name: str, fn: Workload | str) -> None:
    """Make ``fn`` available to studies as ``workload = "name"``.

    The registry belongs to one process. Worker processes receive the resolved function itself
    (pickled by reference), so a registered function must be defined at the top level of an
    importable module to run on a process pool or a Dask cluster.

    Args:
        name: letters, digits, ``_``, ``.`` and ``-``, not starting with a digit (no ``:``, which
            marks a ``"module:function"`` reference).
        fn: the workload, or a ``"module:function"`` string imported when first used.

    Raises:
        SweepError: if the name is malformed or ``fn`` is neither callable nor a reference.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise SweepError(
            f"register_workload: name must be letters, digits, '_', '.' or '-' (no ':'), not "
            f"starting with a digit; got {name!r}"
        )
    if not callable(fn) and not (isinstance(fn, str) and ":" in fn):
        raise SweepError(
            f"register_workload({name!r}, fn): fn must be a callable fn(config) -> dict or a "
            f"'module:function' string; got {fn!r}"
        )
    _REGISTRY[name] = fn


def workload_names() -> list[str]:
    """The registered workload names, sorted."""
    return sorted(_REGISTRY)


def workload_label(workload: str | Workload) -> str:
    """How a workload is recorded in result files: its name, reference, or ``module:qualname``."""
    if isinstance(workload, str):
        return workload
    module = getattr(workload, "__module__", None) or "?"
    return f"{module}:{getattr(workload, '__qualname__', repr(workload))}"


def _import_reference(reference: str, what: str) -> Workload:
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise SweepError(
            f"workload {what}: expected 'module:function' with both parts; got {reference!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SweepError(
            f"workload {what}: cannot import module {module_name!r} ({exc}). Check the name and "
            "that the module is on sys.path (PYTHONPATH) of every process that runs the sweep."
        ) from None
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise SweepError(
                f"workload {what}: module {module_name!r} has no attribute {attribute!r}"
            ) from None
    if not callable(target):
        raise SweepError(
            f"workload {what}: {reference!r} is a {type(target).__name__}, not a function"
        )
    workload: Workload = target  # callable; its signature is the caller's promise
    return workload


def resolve_workload(workload: str | Workload) -> Workload:
    """The callable a study's ``workload`` names.

    Args:
        workload: a callable (returned as is), ``"module:function"`` (imported) or a registered
            name (see :func:`register_workload`).

    Raises:
        SweepError: if the name is unknown, the module cannot be imported or the attribute is not
            callable.
    """
    if callable(workload):
        return workload
    if not isinstance(workload, str) or not workload:
        raise SweepError(
            "workload must be a registered name, a 'module:function' string or a callable; "
            f"got {workload!r}"
        )
    if ":" in workload:
        return _import_reference(workload, repr(workload))
    entry = _REGISTRY.get(workload)
    if entry is None:
        close = difflib.get_close_matches(workload, _REGISTRY, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise SweepError(
            f"workload {workload!r} is not registered (registered: "
            f"{', '.join(workload_names())}); give 'module:function' or call "
            f"ipusim.sweep.register_workload first.{hint}"
        )
    if isinstance(entry, str):
        return _import_reference(entry, repr(workload))
    return entry


def config_validator(fn: Workload) -> Callable[[dict[str, Any]], Any] | None:
    """The workload's check of one configuration (its ``validate_config`` attribute), if any."""
    check = getattr(fn, "validate_config", None)
    return check if callable(check) else None


def warm_up_of(fn: Workload) -> Callable[[], Any] | None:
    """The workload's warm-up (its ``warm_up`` attribute), if any."""
    warm = getattr(fn, "warm_up", None)
    return warm if callable(warm) else None
