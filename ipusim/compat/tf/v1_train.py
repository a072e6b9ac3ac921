"""``tf.compat.v1.train``: the TF1 optimizers and the global step that estimator ``model_fn``\\ s
use, on ipusim's optimizers.

Each TF1 optimizer is an IPU optimizer wrapper (:class:`ipusim.compat.runtime.optimizers.
IpuOptimizer`) around the ipusim Keras optimizer that performs the same update, so
``ipu.optimizers.CrossReplicaOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))`` and
the other wrappers compose as in IPU TensorFlow:

* ``GradientDescentOptimizer(lr)``: ``var -= lr * g`` (Keras ``SGD``);
* ``MomentumOptimizer(lr, momentum, use_nesterov)``: TensorFlow's ``accum = m * accum + g;
  var -= lr * accum``, which equals Keras' momentum SGD for a constant learning rate;
* ``AdamOptimizer(lr, beta1, beta2, epsilon=1e-8)``: ``ResourceApplyAdam``, as Keras' Adam.

TF1's ``RMSPropOptimizer`` (slots starting at one, epsilon inside the square root) is not
provided: Keras' RMSprop updates differently.

``minimize(loss, global_step=None, var_list=None)`` differentiates the traced loss with respect
to ``var_list`` (default: the trainable variables the loss reads) and, with ``global_step``,
increments it once per executed update (on the host, where the estimator keeps it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.compat.runtime.optimizers import IpuOptimizer
from ipusim.graph.variable import Variable
from ipusim.keras import optimizers

__all__ = [
    "AdamOptimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
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


class Optimizer(IpuOptimizer):
    """Base of the TF1 optimizers (``tf.compat.v1.train.Optimizer``)."""

    def minimize(  # type: ignore[override]
        self,
        loss: Any,
        global_step: Any = None,
        var_list: Any = None,
        gate_gradients: int = 1,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: Any = None,
        tape: Any = None,
    ) -> Any:
        """Add the update of ``var_list`` (default: the trainable variables ``loss`` reads)."""
        op = self.apply_gradients(self.compute_gradients(loss, var_list, tape))
        if global_step is not None:
            self._global_step = global_step
        return op

    def _apply(self, grads: list[Any], variables: list[Any]) -> None:
        super()._apply(grads, variables)
        step = getattr(self, "_global_step", None)
        if step is not None:
            step.value[...] += 1


class GradientDescentOptimizer(Optimizer):
    def __init__(
        self, learning_rate: float, use_locking: bool = False, name: str = "GradientDescent"
    ) -> None:
        super().__init__(optimizers.SGD(learning_rate), name)


class MomentumOptimizer(Optimizer):
    def __init__(
        self,
        learning_rate: float,
        momentum: float,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
    ) -> None:
        super().__init__(optimizers.SGD(learning_rate, momentum, use_nesterov), name)


class AdamOptimizer(Optimizer):
    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-08,
        use_locking: bool = False,
        name: str = "Adam",
    ) -> None:
        super().__init__(optimizers.Adam(learning_rate, beta1, beta2, epsilon), name)
