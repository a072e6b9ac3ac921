"""Helpers that let compat modules stand for ipusim modules under TensorFlow's names.

Two kinds of compat module exist:

* **aliases** (:data:`MODULES`): ``ipusim.compat.keras.layers`` *is* :mod:`ipusim.keras.layers`.
  No file stands for it: a finder on ``sys.meta_path`` (installed when :mod:`ipusim.compat` is
  imported) loads the name by :func:`become`, which puts the target in its ``sys.modules`` entry,
  so ``import ipusim.compat.keras.layers`` returns the very same module object (identity is kept:
  ``compat.keras.layers.Dense is ipusim.keras.layers.Dense``).
* **lazy forwards** (:data:`FORWARDS` without a file, the others with one): modules whose names
  come from the custom-training-loop runtime (``ipusim.compat.runtime``), which may be absent.
  :func:`runtime_getattr` builds a module-level ``__getattr__`` that imports the runtime module
  on first access, so the namespace works for the Keras path today and picks the runtime up as
  soon as it is installed. A documented name asked for while its runtime module is missing
  raises ``NotImplementedError`` naming what is missing.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

from ipusim.compat.not_simulated import public_module
from ipusim.errors import UnsupportedError

__all__ = ["FORWARDS", "MODULES", "become", "forward_getattr", "optional_module", "runtime_getattr"]


#: Compat module -> the ipusim module it *is*. TensorFlow exports some Keras modules under two
#: names (``tf.losses`` is ``keras.losses``); ``ipu.keras.layers`` is the IPU layers' module of
#: ``ipu_tensorflow_addons.keras.layers`` (``LSTM`` is ``PopnnLSTM``, graphcore/tensorflow
#: ``python/ipu/keras/layers/__init__.py``); the strategy modules of every SDK are ipusim's one.
MODULES: dict[str, str] = {
    f"ipusim.compat.{name}": target
    for name, target in {
        "ipu.config": "ipusim.config",
        "ipu.dataset_benchmark": "ipusim.compat.dataset_benchmark",
        "ipu.distributed.popdist_strategy": "ipusim.strategy",
        "ipu.horovod.ipu_multi_replica_strategy": "ipusim.strategy",
        "ipu.horovod.popdist_strategy": "ipusim.strategy",
        "ipu.ipu_multi_worker_strategy": "ipusim.strategy",
        "ipu.ipu_strategy": "ipusim.strategy",
        "ipu.keras.extensions": "ipusim.keras.extensions",
        "ipu.keras.layers": "ipusim.compat.ipu_addons_layers",
        "ipu.keras.losses": "ipusim.keras.losses",
        "ipu.pipelining_ops": "ipusim.compat.ipu.ops.pipelining_ops",
        "ipu.serving": "ipusim.serving",
        "keras.activations": "ipusim.keras.activations",
        "keras.applications": "ipusim.keras.applications",
        "keras.callbacks": "ipusim.keras.callbacks",
        "keras.initializers": "ipusim.keras.initializers",
        "keras.ipu": "ipusim.keras.ipu",
        "keras.layers": "ipusim.keras.layers",
        "keras.losses": "ipusim.keras.losses",
        "keras.metrics": "ipusim.keras.metrics",
        "keras.mixed_precision": "ipusim.keras.mixed_precision",
        "keras.models": "ipusim.keras.models",
        "keras.optimizers": "ipusim.keras.optimizers",
        "keras.utils": "ipusim.keras.utils",
        "tf.initializers": "ipusim.keras.initializers",
        "tf.losses": "ipusim.keras.losses",
        "tf.metrics": "ipusim.keras.metrics",
        "tf.optimizers": "ipusim.keras.optimizers",
    }.items()
}

_R = "ipusim.compat.runtime"

#: Lazy forwards without a file: compat module -> (where its names come from, searched in order
#: as :func:`runtime_getattr` does; the names it documents; whether those are its ``__all__``).
FORWARDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "ipusim.compat.ipu.cross_replica_optimizer": (
        (f"{_R}.optimizers",),
        ("CrossReplicaOptimizer",),
        True,
    ),
    "ipusim.compat.ipu.gradient_accumulation_optimizer": (
        (f"{_R}.optimizers",),
        (
            "CrossReplicaGradientAccumulationOptimizer",
            "CrossReplicaGradientAccumulationOptimizerV2",
            "GradientAccumulationOptimizer",
            "GradientAccumulationOptimizerV2",
        ),
        True,
    ),  # fmt: skip
    "ipusim.compat.ipu.ipu_compiler": ((f"{_R}.function",), ("compile",), True),
    "ipusim.compat.ipu.ipu_infeed_queue": (
        (f"{_R}.feeds",),
        ("IPUInfeedQueue", "IPUIterator", "IPUOwnedIterator"),
        True,
    ),
    "ipusim.compat.ipu.ipu_outfeed_queue": (
        (f"{_R}.feeds",),
        ("IPUOutfeedMode", "IPUOutfeedQueue", "IPUOutfeedQueueIterator", "ScopedIPUOutfeedQueue"),
        True,
    ),
    "ipusim.compat.ipu.loops": ((f"{_R}.loops",), ("repeat", "while_loop"), True),
    "ipusim.compat.tf.math": (
        (f"{_R}.ops", f"{_R}.namespaces:math"),
        (
            "abs",
            "add",
            "argmax",
            "exp",
            "log",
            "maximum",
            "minimum",
            "multiply",
            "reduce_max",
            "reduce_mean",
            "reduce_min",
            "reduce_sum",
            "sqrt",
            "square",
        ),
        False,
    ),  # fmt: skip
    "ipusim.compat.tf.image": ((f"{_R}.ops_image",), ("resize",), False),
    "ipusim.compat.tf.linalg": ((f"{_R}.namespaces:linalg",), ("matmul", "einsum", "norm"), False),
    "ipusim.compat.tf.nn": (
        (f"{_R}.ops:nn", f"{_R}.ops", f"{_R}.namespaces:nn"),
        (
            "relu",
            "sigmoid",
            "softmax",
            "log_softmax",
            "tanh",
            "sparse_softmax_cross_entropy_with_logits",
            "softmax_cross_entropy_with_logits",
        ),
        False,
    ),  # fmt: skip
}

#: Alias module name -> the module it is (:func:`become`); their submodules are the target's.
_ALIASES: dict[str, str] = {}


class _SameModuleLoader(importlib.abc.Loader):
    """Loads a name as an existing module (the import system returns what sys.modules holds);
    a name of :data:`MODULES` through :func:`become`."""

    def __init__(self, target: str, alias: bool) -> None:
        self.target = target
        self.alias = alias

    def exec_module(self, module: ModuleType) -> None:
        if self.alias:
            become(module.__name__, self.target)
        else:
            sys.modules[module.__name__] = importlib.import_module(self.target)


class _ForwardLoader(importlib.abc.Loader):
    """Makes a module of :data:`FORWARDS`: its names are read from the runtime on first use."""

    def exec_module(self, module: ModuleType) -> None:
        targets, names, exported = FORWARDS[module.__name__]
        module.__doc__ = f"``{public_module(module.__name__)}``: the names of {targets}."
        module.__getattr__ = runtime_getattr(module.__name__, targets, names)  # type: ignore[method-assign]
        if exported:
            module.__dict__["__all__"] = list(names)


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves the names of :data:`MODULES`, and ``<alias>.<sub>`` to ``<target>.<sub>`` itself.

    Without the second the import system would load the target package's file a second time
    under the alias' name (the alias shares the target's ``__path__``), making a second copy of
    the module with classes of its own (``isinstance`` checks then fail), and set it on the
    target package.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in FORWARDS:
            return importlib.machinery.ModuleSpec(fullname, _ForwardLoader())
        if fullname in MODULES:
            loader = _SameModuleLoader(MODULES[fullname], alias=True)
            return importlib.machinery.ModuleSpec(fullname, loader, is_package=True)
        parent, _, child = fullname.rpartition(".")
        real_parent = _ALIASES.get(parent)
        if real_parent is None:
            return None
        real = f"{real_parent}.{child}"
        if importlib.util.find_spec(real) is None:
            return None
        _ALIASES[fullname] = real  # deeper submodules follow the same way
        loader = _SameModuleLoader(real, alias=False)
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=True)


_FINDER = _AliasFinder()
if _FINDER not in sys.meta_path:
    sys.meta_path.insert(0, _FINDER)


def become(name: str, target: str) -> ModuleType:
    """Make the module being imported as ``name`` be the module ``target``.

    The import system returns whatever ``sys.modules[name]`` holds once the module is loaded,
    so the caller gets ``target``; ``name``'s submodules are ``target``'s own
    (:class:`_AliasFinder`).

    Returns:
        The target module.
    """
    module = importlib.import_module(target)
    sys.modules[name] = module
    _ALIASES[name] = target
    from ipusim.compat._missing import guard  # late: _missing imports ipusim.errors

    guard(module, public_module(name))
    return module


def optional_module(target: str) -> ModuleType | None:
    """Import ``target`` if it exists; None when it (or its package) is not installed.

    Any other import error (a bug inside the module) propagates.
    """
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (target == exc.name or target.startswith(exc.name + ".")):
            return None
        raise


def runtime_getattr(
    module_name: str, targets: str | Sequence[str], documented: Iterable[str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` forwarding unknown names to runtime modules once they exist.

    Args:
        module_name: the compat module's ``__name__`` (for error messages).
        targets: where the names come from, searched in order: ``"pkg.module"`` for the
            module's attributes, or ``"pkg.module:namespace"`` for the attributes of its
            ``namespace`` attribute (e.g. ``"ipusim.compat.runtime.ops:nn"``).
        documented: the names the compat module documents. Asked for while no target module
            is installed, they raise ``NotImplementedError``; other names raise
            ``AttributeError``.

    Returns:
        The ``__getattr__`` function to assign at module level.
    """
    sources = (targets,) if isinstance(targets, str) else tuple(targets)
    known = frozenset(documented)

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        installed = False
        for source in sources:
            module_path, _, namespace = source.partition(":")
            module = optional_module(module_path)
            if module is None:
                continue
            installed = True
            holder = getattr(module, namespace, None) if namespace else module
            if holder is not None and hasattr(holder, name):
                return getattr(holder, name)
        if not installed and name in known:
            where = ", ".join(s.partition(":")[0] for s in sources)
            raise UnsupportedError(
                f"{module_name}.{name} needs ipusim's custom-training-loop runtime ({where}), "
                "which is not installed in this ipusim. The Keras API (fit / evaluate / "
                "predict inside an IPUStrategy) works without it."
            )
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


def forward_getattr(
    module_name: str, targets: str | Sequence[str], renames: dict[str, str] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` reading names from other modules, for internal module paths.

    ``keras.optimizer_v2.adam`` and the like hold names ipusim keeps elsewhere; the forward
    reads them when asked for, so names added to the targets later are found too.

    Args:
        module_name: the forwarding module's ``__name__`` (for error messages).
        targets: where the names come from, searched in order: ``"pkg.module"`` or
            ``"pkg.module:attr.path"`` (read attribute by attribute).
        renames: this module's name -> the targets' name (``OptimizerV2`` -> ``Optimizer``).

    Returns:
        The ``__getattr__`` function to assign at module level; a name no target has raises
        ``AttributeError`` (ipusim's NotSimulatedError once the module is guarded).
    """
    sources = (targets,) if isinstance(targets, str) else tuple(targets)
    aliases = dict(renames or {})

    def __getattr__(name: str) -> Any:
        if not name.startswith("_"):
            for source in sources:
                module_path, _, attributes = source.partition(":")
                holder: Any = importlib.import_module(module_path)
                with contextlib.suppress(AttributeError):
                    for attribute in attributes.split(".") if attributes else ():
                        holder = getattr(holder, attribute)
                    return getattr(holder, aliases.get(name, name))
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
