"""``tf.compat.v1`` (``import tensorflow.compat.v1 as tf``): the TF1 names of IPU estimator
programs, and every other name from ipusim's ``tf``.

``train`` (TF1 optimizers and the global step, :mod:`ipusim.compat.tf.v1_train`), ``metrics``
(:mod:`ipusim.compat.tf.v1_metrics`), ``losses`` and ``layers.dense``
(:mod:`ipusim.compat.tf.v1_losses`), ``estimator``, ``logging``. ``disable_v2_behavior`` and
``disable_eager_execution`` let TF1 graph calls build a global default graph (Keras, estimators
and tf.function are unaffected: ipusim traces device code in every mode); ``Graph``,
``placeholder``, ``Session`` and the initializers are :mod:`ipusim.compat.tf.v1_session`;
``get_variable`` and ``variable_scope`` :mod:`ipusim.compat.tf.v1_variables`.
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


#: TF1 graphs and sessions (:mod:`ipusim.compat.tf.v1_session`).
_V1_SESSION = (
    "Graph",
    "Session",
    "enable_eager_execution",
    "global_variables",
    "global_variables_initializer",
    "placeholder",
    "reset_default_graph",
    "trainable_variables",
    "variables_initializer",
)
#: TF1 name -> its module: :mod:`ipusim.compat.tf.v1_graph`, ``v1_config``, ``v1_session``,
#: ``v1_variables``.
_MODULE_OF = {
    "get_default_graph": "v1_graph",
    **dict.fromkeys(("ConfigProto", "GPUOptions", "GraphOptions"), "v1_config"),
    **dict.fromkeys(_V1_SESSION, "v1_session"),
    **dict.fromkeys(("AUTO_REUSE", "get_variable", "variable_scope"), "v1_variables"),
}


def disable_v2_behavior() -> None:
    """TF1 graph calls (``placeholder``, ``Session``) outside ``Graph.as_default`` build the
    global default graph (:func:`ipusim.compat.tf.v1_session.disable_eager_execution`); device
    code is traced in every mode."""
    disable_eager_execution()


def disable_eager_execution() -> None:
    """As :func:`disable_v2_behavior`."""
    importlib.import_module("ipusim.compat.tf.v1_session").disable_eager_execution()


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
        return SimpleNamespace(dense=importlib.import_module(_LAZY["losses"]).dense)
    if name in _MODULE_OF:
        return getattr(importlib.import_module(f"ipusim.compat.tf.{_MODULE_OF[name]}"), name)
    if name == "initialize_all_variables":  # TF1's deprecated spelling
        return importlib.import_module("ipusim.compat.tf.v1_session").global_variables_initializer
    return getattr(importlib.import_module("ipusim.compat.tf"), name)
