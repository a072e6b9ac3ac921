"""Resolve the listed TensorFlow / Keras names against ipusim's compatibility namespaces.

A name is looked up as ``ipusim run`` lets a script reach it: under
:func:`ipusim.compat.runner.redirect_imports`, the longest importable module prefix of its
dotted path (``tensorflow.keras.layers``) is imported and the rest is read attribute by
attribute. Each name is then

* ``covered``: it resolves;
* ``not simulated``: it does not, and :data:`ipusim.compat.not_simulated.NOT_SIMULATED` has it
  (with the reason and what to use instead);
* ``missing``: neither.

:func:`tf_api_statuses` reads ``tf_api.json`` (``generate.py``; a name missing there that IPU
TensorFlow 2 itself lacks, per ``ipu_tf_api.json`` from ``ipu_api.py``, is not simulated for
that reason), :func:`used_statuses` reads ``used_api.json`` (``scan.py``).
"""

from __future__ import annotations

import importlib
import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipusim.compat.not_simulated import NOT_SIMULATED as NOT_SIMULATED_TABLE
from ipusim.compat.not_simulated import lookup, public_name
from ipusim.compat.runner import redirect_imports

HERE = Path(__file__).resolve().parent
TF_API = HERE / "tf_api.json"
USED_API = HERE / "used_api.json"
IPU_API = HERE / "ipu_tf_api.json"

COVERED, NOT_SIMULATED, MISSING = "covered", "not simulated", "missing"


@dataclass(frozen=True)
class Status:
    """One public name and what ipusim does with it.

    Attributes:
        module: the public module it is listed under (``tf.keras.layers``).
        name: its public dotted name (``tf.keras.layers.Dense``).
        status: ``covered``, ``not simulated`` or ``missing``.
        note: for ``not simulated``, the reason and what to use instead.
        used_by: the programs using it (used-by-examples listing only).
        lacks: for a covered callable, TensorFlow's named arguments ipusim's does not accept.
    """

    module: str
    name: str
    status: str
    note: str = ""
    used_by: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()


def script_path(public: str) -> str:
    """``tf.keras.layers.Dense`` -> ``tensorflow.keras.layers.Dense`` (as scripts import it)."""
    return "tensorflow" + public[2:] if public == "tf" or public.startswith("tf.") else public


def _import(dotted: str) -> Any | None:
    try:
        return importlib.import_module(dotted)
    except ImportError:
        return None


def resolves(dotted: str, module: bool = False) -> bool:
    """Whether the script spelling ``dotted`` resolves (call inside ``redirect_imports``).

    Args:
        dotted: e.g. ``tensorflow.keras.layers.Dense`` or ``keras.optimizer_v2``.
        module: ``dotted`` must import as a module (``import dotted``).
    """
    parts = dotted.split(".")
    if module:
        return _import(dotted) is not None
    for end in range(len(parts), 0, -1):
        value = _import(".".join(parts[:end]))
        if value is None:
            continue
        for attribute in parts[end:]:
            try:
                value = getattr(value, attribute)
            except Exception:  # noqa: BLE001 - any failure to produce the name is "missing"
                return False
        return True
    return False


def signature_names(signature: str) -> list[str] | None:
    """The named parameters of a signature text ``(a, b=(1, 2), *args, c=None, **kw)``
    (``["a", "b", "c"]``); None when the text accepts ``**kwargs`` or is unknown."""
    if not signature or not signature.startswith("("):
        return None
    depth, quote, start, pieces = 0, "", 1, []
    for i, ch in enumerate(signature):
        if quote:
            quote = "" if ch == quote and signature[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
            if depth == 0:
                pieces.append(signature[start:i])
        elif ch == "," and depth == 1:
            pieces.append(signature[start:i])
            start = i + 1
    names = [p.strip().split("=")[0].split(":")[0].strip() for p in pieces]
    if any(n.startswith("**") for n in names):
        return None
    return [n for n in names if n and not n.startswith("*") and n != "/"]


def missing_arguments(
    value: Any, signature: str | None, ipu_params: list[str] | None = None
) -> list[str]:
    """TensorFlow's named parameters that ipusim's ``value`` does not accept: those of IPU
    TensorFlow's 2.6 definition when known (``ipu_params``), else those of ``signature``
    (none when ipusim takes ``**kwargs`` or a signature cannot be read)."""
    theirs = ipu_params or signature_names(signature or "")
    if not theirs or not callable(value):
        return []
    try:
        ours = inspect.signature(value)
    except (TypeError, ValueError):
        return []
    kinds = {p.kind for p in ours.parameters.values()}
    if inspect.Parameter.VAR_KEYWORD in kinds:
        return []
    return [name for name in theirs if name not in ours.parameters and name != "self"]


def resolve(dotted: str) -> Any:
    """The object ``dotted`` names (call inside ``redirect_imports``), or :data:`UNRESOLVED`."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        value = _import(".".join(parts[:end]))
        if value is None:
            continue
        for attribute in parts[end:]:
            try:
                value = getattr(value, attribute)
            except Exception:  # noqa: BLE001 - any failure to produce the name is "missing"
                return UNRESOLVED
        return value
    return UNRESOLVED


UNRESOLVED = object()


def classify(dotted: str, module: bool = False) -> tuple[str, str]:
    """(status, note) of the script spelling ``dotted`` (call inside ``redirect_imports``).

    A name that resolves is covered even when the table lists it (a stale entry: see
    :func:`stale_entries`), so a name implemented later is counted at once.
    """
    if resolves(dotted, module):
        return COVERED, ""
    entry = lookup(public_name(dotted))
    if entry is not None:
        reason, instead = entry
        return NOT_SIMULATED, f"{reason}. Instead: {instead}"
    return MISSING, ""


def stale_entries() -> list[str]:
    """Exact names of the not-simulated table that resolve now (to be removed from it)."""
    with redirect_imports():
        return [
            name
            for name in sorted(NOT_SIMULATED_TABLE)
            if not name.endswith(".*") and resolves(script_path(name))
        ]


#: Modules whose IPU TensorFlow names the export scan cannot see (TensorBoard provides them).
UNCHECKED = ("tf.summary",)

LATER = (
    "not in IPU TensorFlow 2 (TensorFlow and Keras 2.6 of Poplar SDK 3.4): added to TensorFlow "
    "later, so no IPU program can use it. Instead: what TensorFlow / Keras 2.6 offer"
)


def ipu_names(path: Path = IPU_API) -> frozenset[str]:
    """The public names IPU TensorFlow 2 itself has (``ipu_api.py``)."""
    return frozenset(json.loads(path.read_text())["names"])


def ipu_params(path: Path = IPU_API) -> dict[str, list[str]]:
    """The named parameters of IPU TensorFlow 2's functions and classes, where known."""
    return dict(json.loads(path.read_text())["params"])


def tf_api_statuses(path: Path = TF_API) -> list[Status]:
    """The status of every name of the real API listing, in the listing's order.

    A name ipusim lacks that IPU TensorFlow 2 lacks too (added after 2.6) is not simulated,
    with that reason (unless the table gives a more specific one).
    """
    listing = json.loads(path.read_text())
    in_ipu_tf, params = ipu_names(), ipu_params()
    out = []
    with redirect_imports():
        for entry in listing["names"]:
            public = f"{entry['module']}.{entry['name']}"
            status, note = classify(script_path(public))
            later = public not in in_ipu_tf and entry["module"] not in UNCHECKED
            if status == MISSING and later:
                status, note = NOT_SIMULATED, LATER
            lacks: list[str] = []
            if status == COVERED:
                value = resolve(script_path(public))
                lacks = missing_arguments(value, entry["signature"], params.get(public))
            out.append(Status(entry["module"], public, status, note, (), tuple(lacks)))
    return out


def program_label(program: dict[str, str]) -> str:
    """``repo@ref:path`` of a scanned program (``ref`` left out when it is HEAD)."""
    ref = "" if program["ref"] == "HEAD" else "@" + program["ref"]
    return f"{program['repo']}{ref}:{program['path']}"


def used_statuses(path: Path = USED_API) -> list[Status]:
    """The status of every name and module path the scanned programs use."""
    listing = json.loads(path.read_text())
    labels = [program_label(p) for p in listing["programs"]]
    out = []
    with redirect_imports():
        for entry in listing["names"]:
            is_module = entry["kind"] == "module"
            status, note = classify(entry["name"], is_module)
            users = tuple(labels[i] for i in entry["used_by"])
            kind = "module path" if is_module else "name"
            out.append(Status(kind, entry["name"], status, note, users))
    return out


def program_count(path: Path = USED_API) -> int:
    """How many programs ``used_api.json`` lists."""
    return len(json.loads(path.read_text())["programs"])
