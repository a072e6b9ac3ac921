"""ipusim: a simulator of Graphcore IPU systems for Keras-style models.

Public surface::

    from ipusim import keras, data
    from ipusim import IPUConfig, IPUStrategy, configure_ipu_system

``import ipusim`` itself is light: the names above, and any submodule reached as an attribute
(``ipusim.sweep``), are imported on first use (PEP 562), and Numba only when a kernel first runs
(see :mod:`ipusim._jit`).
"""

from __future__ import annotations

import importlib
import importlib.util

from ipusim._threads import apply_thread_policy

apply_thread_policy()  # before numpy/numba load their thread pools

__version__ = "0.1.0"

__all__ = ["IPUConfig", "IPUStrategy", "__version__", "configure_ipu_system", "data", "keras"]

#: Public name -> (module, attribute in it; None for the module itself).
_LAZY: dict[str, tuple[str, str | None]] = {
    "IPUConfig": ("ipusim.config", "IPUConfig"),
    "IPUStrategy": ("ipusim.strategy", "IPUStrategy"),
    "configure_ipu_system": ("ipusim.config", "configure_ipu_system"),
    "data": ("ipusim.data", None),
    "keras": ("ipusim.keras", None),
}

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (about 10 ms)
if TYPE_CHECKING:
    from typing import Any

    from ipusim import data, keras
    from ipusim.config import IPUConfig, configure_ipu_system
    from ipusim.strategy import IPUStrategy


def __getattr__(name: str) -> Any:
    """Import a public name, or a submodule reached as an attribute, on first use."""
    target = _LAZY.get(name)
    if target is not None:
        module = importlib.import_module(target[0])
        value = module if target[1] is None else getattr(module, target[1])
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
