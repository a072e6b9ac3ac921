"""``tf.compat.v1`` (``import tensorflow.compat.v1 as tf``): the TF1 names of IPU estimator
programs, and every other name from ipusim's ``tf``.

``train`` (TF1 optimizers and the global step, :mod:`ipusim.compat.tf.v1_train`), ``metrics``
(:mod:`ipusim.compat.tf.v1_metrics`), ``losses`` and ``layers.dense``
(:mod:`ipusim.compat.tf.v1_losses`), ``estimator``, ``logging``. ``disable_v2_behavior`` and
``disable_eager_execution`` change nothing: ipusim traces device code in every mode, and the
estimators build their programs as TensorFlow's graph mode would.
"""

from __future__ import annotations

import importlib
import logging as _logging
from types import SimpleNamespace
from typing import Any

from ipusim.compat.tf import estimator

__all__ = ["disable_eager_execution", "disable_v2_behavior", "estimator", "logging"]

_LAZY = {
    "train": "ipusim.compat.tf.v1_train",
    "metrics": "ipusim.compat.tf.v1_metrics",
    "losses": "ipusim.compat.tf.v1_losses",
}


#: TF1 graph names (:mod:`ipusim.compat.tf.v1_graph`); TF2's ``tf`` lacks them.
_V1_GRAPH = ("ConfigProto", "get_default_graph")


def _layers() -> Any:
    from ipusim.compat.tf import v1_losses

    return SimpleNamespace(dense=v1_losses.dense)


def disable_v2_behavior() -> None:
    """Accepted: ipusim has one (traced) execution model for device code."""


def disable_eager_execution() -> None:
    """Accepted: ipusim has one (traced) execution model for device code."""


def _set_verbosity(level: int) -> None:
    _logging.getLogger("ipusim").setLevel(level)


#: ``tf.compat.v1.logging``: the levels and ``set_verbosity`` (ipusim's logger).
logging = SimpleNamespace(
    DEBUG=_logging.DEBUG,
    INFO=_logging.INFO,
    WARN=_logging.WARNING,
    ERROR=_logging.ERROR,
    FATAL=_logging.FATAL,
    set_verbosity=_set_verbosity,
    info=_logging.getLogger("ipusim").info,
    warning=_logging.getLogger("ipusim").warning,
)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # not tf's __path__ and the like: this module is no package
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _LAZY:
        return importlib.import_module(_LAZY[name])
    if name == "layers":  # TF1's functional layers
        return _layers()
    if name in _V1_GRAPH:
        return getattr(importlib.import_module("ipusim.compat.tf.v1_graph"), name)
    return getattr(importlib.import_module("ipusim.compat.tf"), name)
