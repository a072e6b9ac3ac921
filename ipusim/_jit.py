"""The one place where JIT flags for every kernel are decided.

Set ``IPUSIM_DISABLE_JIT=1`` to run every kernel as plain Python (slow, but steppable in a debugger).
Kernels are compiled with ``cache=True`` so a warm start costs milliseconds, not seconds.

Numba is imported when a kernel first runs, not when ipusim is imported (importing Numba costs
about 0.3 s; a timing-only run, the CLI's report and plot verbs never need most kernels). Until
then ``@kernel`` returns a :class:`LazyKernel`. The first call of any kernel imports Numba, wraps
every kernel defined so far with ``numba.njit`` and puts the compiled dispatchers in place of the
lazy ones in their modules, so kernels calling kernels compile as they always did; kernels
defined after that are wrapped at once.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal, TypedDict, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

JIT_ENABLED: bool = os.environ.get("IPUSIM_DISABLE_JIT", "").strip().lower() not in {
    "1",
    "true",
    "yes",
}


class _JitOptions(TypedDict):
    """The ``numba.njit`` keyword arguments that :data:`JIT_OPTIONS` sets."""

    cache: bool
    nogil: bool
    error_model: Literal["python", "numpy"]


#: Flags shared by every kernel. ``error_model="numpy"`` drops Python's division checks so that
#: division by zero gives inf/nan as it does on the device; ``fastmath`` stays off so results match
#: the NumPy references to the last few ulps.
JIT_OPTIONS: _JitOptions = {"cache": True, "nogil": True, "error_model": "numpy"}

_PENDING: list[LazyKernel] = []
_LOCK = threading.Lock()
_NUMBA_LOADED = False


class LazyKernel:
    """A kernel whose ``numba.njit`` wrapping waits until some kernel first runs.

    Calling it runs the compiled kernel. Code that imported the kernel by name keeps this object
    (one extra Python call per kernel call); the kernel modules themselves get the dispatcher.
    """

    __slots__ = ("__wrapped__", "_dispatcher")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.__wrapped__ = fn
        self._dispatcher: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dispatcher = self._dispatcher
        if dispatcher is None:
            _compile_pending()
            dispatcher = self._dispatcher
            assert dispatcher is not None  # _compile_pending wraps every pending kernel
        return dispatcher(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # py_func, signatures, inspect_types, ...
        if self._dispatcher is None:
            _compile_pending()
        return getattr(self._dispatcher, name)

    def __repr__(self) -> str:
        state = "compiled" if self._dispatcher is not None else "not yet wrapped"
        return f"<kernel {self.__wrapped__.__module__}.{self.__wrapped__.__qualname__} ({state})>"


def _compile_pending() -> None:
    """Import Numba, wrap every pending kernel and put the dispatchers into their modules."""
    global _NUMBA_LOADED
    with _LOCK:
        if _NUMBA_LOADED and not _PENDING:
            return
        import numba

        pending = list(_PENDING)
        for lazy in pending:
            lazy._dispatcher = numba.njit(**JIT_OPTIONS)(lazy.__wrapped__)
        # Kernels call kernels through their module's globals: Numba must find dispatchers there.
        for module_name in {lazy.__wrapped__.__module__ for lazy in pending}:
            namespace = vars(sys.modules[module_name])
            for name, value in list(namespace.items()):
                if isinstance(value, LazyKernel) and value._dispatcher is not None:
                    namespace[name] = value._dispatcher
        _PENDING.clear()
        _NUMBA_LOADED = True


def kernel(fn: F) -> F:
    """Compile ``fn`` with Numba using the project-wide options (or return it as is with JIT off).

    Before any kernel has run this returns a :class:`LazyKernel`; afterwards the Numba dispatcher.
    """
    if not JIT_ENABLED:
        return fn
    with _LOCK:
        if not _NUMBA_LOADED:
            lazy = LazyKernel(fn)
            _PENDING.append(lazy)
            return lazy  # type: ignore[return-value]
    import numba

    # A Dispatcher is called exactly like ``fn``, which is what kernel's callers rely on.
    return numba.njit(**JIT_OPTIONS)(fn)  # type: ignore[return-value]
