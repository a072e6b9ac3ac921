"""ipusim's own error for a TensorFlow / Keras name its compatibility namespaces lack.

:func:`guard` gives a module standing for a TensorFlow / Keras module a ``__getattr__`` that
raises :class:`~ipusim.errors.NotSimulatedError` (an ``AttributeError``, so ``hasattr`` still
says False) naming the public name, e.g. "`tf.keras.layers.Foo` is not simulated by ipusim".
``from tensorflow.keras.layers import Foo`` would turn any ``AttributeError`` into Python's
"cannot import name" ``ImportError``, losing that message, so while the calling frame is
executing such an import the guard raises :class:`~ipusim.errors.NotSimulatedModuleError` (an
``ImportError``) instead.
"""

from __future__ import annotations

import dis
import sys
from collections.abc import Callable
from types import FrameType, ModuleType, SimpleNamespace
from typing import Any

from ipusim.compat.not_simulated import message, public_module
from ipusim.errors import NotSimulatedError, NotSimulatedModuleError

__all__ = ["GuardedNamespace", "guard", "guard_loaded", "not_simulated"]

_IMPORT_FROM = dis.opmap["IMPORT_FROM"]
_MARK = "__ipusim_guard__"


def _importing_from(frame: FrameType | None) -> bool:
    """Whether ``frame`` is executing ``from M import N`` (its current opcode is IMPORT_FROM)."""
    if frame is None or frame.f_lasti < 0:
        return False
    code = frame.f_code.co_code
    return frame.f_lasti < len(code) and code[frame.f_lasti] == _IMPORT_FROM


def not_simulated(public: str, importing: bool = False) -> NotSimulatedError:
    """The error for the public name ``public`` (the module variant when ``importing``)."""
    if importing:
        return NotSimulatedModuleError(message(public), name=public)  # type: ignore[return-value]
    return NotSimulatedError(message(public), name=public.rpartition(".")[2])


class GuardedNamespace(SimpleNamespace):
    """A ``SimpleNamespace`` standing for a TensorFlow namespace (``tf.data.experimental``):
    a name it lacks raises :class:`~ipusim.errors.NotSimulatedError` naming it."""

    def __init__(self, _public: str, /, **names: Any) -> None:
        super().__init__(**names)
        object.__setattr__(self, "_public", _public)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise not_simulated(f"{self._public}.{name}", _importing_from(sys._getframe(1)))


def _guard_namespaces(module: ModuleType, prefix: str) -> None:
    """Replace the module's plain ``SimpleNamespace`` attributes by guarded copies."""
    for name, value in list(vars(module).items()):
        if type(value) is SimpleNamespace and not name.startswith("_"):
            setattr(module, name, GuardedNamespace(f"{prefix}.{name}", **vars(value)))


def _internal_submodule(public: str) -> ModuleType | None:
    """The internal module path (``keras.utils.tf_inspect``) the public name stands for, if
    :mod:`ipusim.compat.internal_paths` lists it (``from keras.utils import tf_inspect`` reads
    it as an attribute when ipusim's ``keras.utils`` is a plain module)."""
    from ipusim.compat.internal_paths import internal_module  # late: it imports this module

    path = public[3:] if public.startswith("tf.keras.") else "tensorflow" + public[2:]
    found = internal_module(path)
    return sys.modules[found] if found is not None else None


def guard(module: ModuleType, public: str | None = None) -> None:
    """Make names ``module`` lacks raise ipusim's error naming ``public.<name>``.

    Args:
        module: the module (an ipusim module standing for a TensorFlow / Keras one).
        public: its public spelling (``tf.keras.layers``); default from its name
            (:func:`ipusim.compat.not_simulated.public_module`). Modules with neither are left
            alone.
    """
    if module.__dict__.get(_MARK):
        return
    prefix = public or public_module(module.__name__)
    if prefix is None:
        return
    previous: Callable[[str], Any] | None = module.__dict__.get("__getattr__")
    module_name = module.__name__

    def __getattr__(name: str) -> Any:
        if previous is not None:
            try:
                return previous(name)
            except NotSimulatedError:
                raise
            except AttributeError:
                pass
        if name.startswith("_"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        submodule = _internal_submodule(f"{prefix}.{name}")
        if submodule is not None:
            return submodule
        raise not_simulated(f"{prefix}.{name}", _importing_from(sys._getframe(1)))

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    setattr(module, _MARK, True)
    _guard_namespaces(module, prefix)


def guard_loaded(prefix: str) -> None:
    """:func:`guard` every loaded module whose name is ``prefix`` or starts with ``prefix.``."""
    for name, module in list(sys.modules.items()):
        if isinstance(module, ModuleType) and (name == prefix or name.startswith(prefix + ".")):
            guard(module)
