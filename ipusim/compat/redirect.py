"""Import redirection of ``ipusim run``: TensorFlow / Keras module names resolve to ipusim.compat.

While :func:`redirect_imports` is active, imports of ``tensorflow``, ``tensorflow.python.ipu``,
``tensorflow.keras``, ``keras`` (and their submodules), ``ipu_tensorflow_addons`` and ``popdist``
resolve to ipusim's compatibility modules through a finder placed first on ``sys.meta_path``. A
real TensorFlow installed beside ipusim is never imported: a name under those roots that ipusim
does not provide fails with ``ModuleNotFoundError`` saying so.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType

from ipusim.compat._missing import guard
from ipusim.compat.internal_paths import internal_module
from ipusim.compat.not_simulated import message
from ipusim.errors import NotSimulatedModuleError

__all__ = ["FALLBACKS", "REDIRECTS", "ROOTS", "CompatFinder", "redirect_imports", "resolve"]


#: (module name prefix, ipusim module it resolves to; None for an empty package), first match wins.
REDIRECTS: tuple[tuple[str, str | None], ...] = (
    ("tensorflow.python.ipu", "ipusim.compat.ipu"),
    ("tensorflow.python.keras", "ipusim.compat.keras"),
    ("tensorflow.keras", "ipusim.compat.keras"),
    ("tensorflow", "ipusim.compat.tf"),
    ("keras", "ipusim.compat.keras"),
    ("ipu_tensorflow_addons.keras.layers", "ipusim.compat.ipu_addons_layers"),
    ("ipu_tensorflow_addons.keras.optimizers", "ipusim.keras.optimizers"),
    ("ipu_tensorflow_addons.v1.layers", "ipusim.compat.tf.v1_rnn_ops"),
    ("ipu_tensorflow_addons.v1", None),
    ("ipu_tensorflow_addons.keras", None),
    ("ipu_tensorflow_addons", None),
    ("popdist", "ipusim.compat.popdist"),
)

#: Where to look next when a compat package lacks a submodule (``keras.engine`` and the like).
FALLBACKS: tuple[tuple[str, str], ...] = (("ipusim.compat.keras", "ipusim.keras"),)

#: Top-level names the finder owns while it is installed.
ROOTS = ("tensorflow", "keras", "ipu_tensorflow_addons", "popdist")


def _owned(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in ROOTS)


def _exists(module_name: str) -> bool:
    if module_name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ModuleNotFoundError, ValueError):
        return False


def resolve(fullname: str) -> str | None:
    """The ipusim module standing for ``fullname`` (None for an empty package).

    Raises:
        NotSimulatedModuleError: ``fullname`` is under a redirected root but ipusim provides no
            such module (a ``ModuleNotFoundError``).
        KeyError: ``fullname`` is not under a redirected root.
    """
    if not _owned(fullname):
        raise KeyError(fullname)
    tried = []
    for prefix, target in REDIRECTS:
        if fullname == prefix:
            return target
        if target is None or not fullname.startswith(prefix + "."):
            continue
        candidate = target + fullname[len(prefix) :]
        tried.append(candidate)
        if _exists(candidate):
            return candidate
        for compat, fallback in FALLBACKS:
            if candidate.startswith(compat + "."):
                other = fallback + candidate[len(compat) :]
                tried.append(other)
                if _exists(other):
                    return other
        break
    internal = internal_module(fullname)  # tensorflow.python.ops.math_ops and the like
    if internal is not None:
        return internal
    raise NotSimulatedModuleError(
        f"{message(fullname)} (no module named {fullname!r} in ipusim's TensorFlow "
        f"compatibility layer; looked for "
        f"{' or '.join(repr(t) for t in tried) or 'nothing: no redirect covers it'}). ipusim run "
        "never imports a real TensorFlow.",
        name=fullname,
    )


class _AliasLoader(importlib.abc.Loader):
    """Loads a redirected name as an existing ipusim module (or an empty package)."""

    def __init__(self, target: str | None) -> None:
        self.target = target

    def exec_module(self, module: ModuleType) -> None:
        if self.target is None:
            module.__path__ = []  # an empty package whose submodules are redirected too
            return
        # The import system returns whatever sys.modules holds once exec_module is done, so
        # the name becomes the very ipusim module (identity kept: tf.keras is keras).
        target = importlib.import_module(self.target)
        guard(target)  # names it lacks raise ipusim's NotSimulatedError
        sys.modules[module.__name__] = target


class CompatFinder(importlib.abc.MetaPathFinder):
    """A ``sys.meta_path`` finder resolving TensorFlow / Keras module names to ipusim.compat."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not _owned(fullname):
            return None
        alias = resolve(fullname)  # raises ModuleNotFoundError for what ipusim lacks
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(alias), is_package=True)


@contextlib.contextmanager
def redirect_imports() -> Iterator[CompatFinder]:
    """Within the block, TensorFlow / Keras imports resolve to ipusim.compat.

    Modules already loaded under the redirected names are hidden during the block and put back
    afterwards; the names loaded during the block are removed, and the finder leaves
    ``sys.meta_path``.
    """
    hidden = {name: module for name, module in sys.modules.items() if _owned(name)}
    for name in hidden:
        del sys.modules[name]
    finder = CompatFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if _owned(n)]:
            del sys.modules[name]
        sys.modules.update(hidden)
