"""``keras.optimizer_v2``: Keras 2's internal optimizer modules, which IPU programs import.

``from keras.optimizer_v2 import optimizer_v2`` (``OptimizerV2``, the base class of Keras 2
optimizers) and ``keras.optimizer_v2.gradient_descent.SGD``, ``adam.Adam`` ... are ipusim's
:mod:`ipusim.keras.optimizers` under Keras' module paths; the submodules are made here, each
forwarding to that package (a name it lacks raises ipusim's NotSimulatedError).
"""

from __future__ import annotations

import sys
from types import ModuleType

from ipusim.compat._alias import forward_getattr
from ipusim.compat._missing import guard

#: Keras' submodule -> (where its names live in ipusim, renames).
_SUBMODULES: dict[str, tuple[str, dict[str, str]]] = {
    "optimizer_v2": ("ipusim.keras.optimizers", {"OptimizerV2": "Optimizer"}),
    "gradient_descent": ("ipusim.keras.optimizers", {}),
    "adam": ("ipusim.keras.optimizers", {}),
    "rmsprop": ("ipusim.keras.optimizers", {}),
    "adagrad": ("ipusim.keras.optimizers", {}),
    "adadelta": ("ipusim.keras.optimizers", {}),
    "adamax": ("ipusim.keras.optimizers", {}),
    "nadam": ("ipusim.keras.optimizers", {}),
    "ftrl": ("ipusim.keras.optimizers", {}),
    "learning_rate_schedule": ("ipusim.keras.optimizers.schedules", {}),
}


def _submodule(name: str, target: str, renames: dict[str, str]) -> ModuleType:
    module = ModuleType(f"{__name__}.{name}", f"``keras.optimizer_v2.{name}`` (see {target}).")
    module.__getattr__ = forward_getattr(module.__name__, target, renames)  # type: ignore[method-assign]
    sys.modules[module.__name__] = module
    guard(module)
    return module


for _name, (_target, _renames) in _SUBMODULES.items():
    globals()[_name] = _submodule(_name, _target, _renames)

__all__ = sorted(_SUBMODULES)
