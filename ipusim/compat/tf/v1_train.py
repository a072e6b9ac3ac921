"""``tf.compat.v1.train``: the TF1 optimizers and the global step that TF1 code (estimator
``model_fn``\\ s, custom loops, ``compile``) uses.

The optimizers are the ones of :mod:`ipusim.compat.tf.python.training.optimizer` (TF1's update
rules, defaults and slots on ipusim's Keras optimizers), so one class serves ``compile``, a
traced ``minimize`` and the IPU optimizer wrappers (``ipu.optimizers.CrossReplicaOptimizer(
tf.compat.v1.train.GradientDescentOptimizer(0.1))``). The global step is one int64 variable;
the estimators keep its count on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.compat.tf.python.training.optimizer import (
    AdagradOptimizer,
    AdamOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
    RMSPropOptimizer,
)
from ipusim.graph.variable import Variable

__all__ = [
    "AdagradOptimizer",
    "AdamOptimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
    "RMSPropOptimizer",
    "get_global_step",
    "get_or_create_global_step",
]

_GLOBAL_STEP: dict[str, Variable] = {}


def get_or_create_global_step(graph: Any = None) -> Variable:
    """The int64 ``global_step`` variable (created at 0 on first use)."""
    del graph
    if "step" not in _GLOBAL_STEP:
        _GLOBAL_STEP["step"] = Variable(np.zeros((), np.int64), "global_step:0", trainable=False)
    return _GLOBAL_STEP["step"]


def get_global_step(graph: Any = None) -> Variable | None:
    """The ``global_step`` variable, or None before :func:`get_or_create_global_step`."""
    del graph
    return _GLOBAL_STEP.get("step")


def reset_global_step() -> None:
    """Forget the global step (each estimator keeps its own; called when one starts)."""
    _GLOBAL_STEP.clear()
