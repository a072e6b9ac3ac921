"""``tf.compat.v1.train`` optimizers (``tensorflow.python.training.*``) for Keras ``compile``.

tf.keras accepts a TF1 optimizer in ``compile`` and wraps it (its ``TFOptimizer``), so the TF1
update rule trains the model. Here each TF1 optimizer *is* an ipusim Keras optimizer configured to
do exactly TF1's update, with TF1's argument names, defaults and slots:

=========================  =================================================================
TF1 class                  update (TF1 kernels, ``training_ops``)
=========================  =================================================================
GradientDescentOptimizer   ``var -= lr * g``
MomentumOptimizer          ``accum = m * accum + g; var -= lr * accum`` (Nesterov:
                           ``var -= lr * (g + m * accum)``); held as Keras' velocity
                           ``v = -lr * accum``, identical while ``lr`` is constant
AdamOptimizer              Keras' Adam rule with TF1's ``epsilon=1e-8``
RMSPropOptimizer           ``ms = decay * ms + (1 - decay) * g²`` (``ms`` starts at **1**);
                           ``mom = m * mom + lr * g / sqrt(ms + eps)``; ``var -= mom``
                           (always the momentum form, ``epsilon=1e-10``)
AdagradOptimizer           ``acc += g²; var -= lr * g / sqrt(acc)`` (no epsilon; ``acc``
                           starts at ``initial_accumulator_value=0.1``)
=========================  =================================================================

(S: tensorflow/python/training/{gradient_descent,momentum,adam,rmsprop,adagrad}.py and
tensorflow/core/kernels/training_ops.cc.) A script's subclass of the TF1 base class that
overrides ``compute_gradients`` / ``apply_gradients`` and delegates the update to a wrapped
optimizer runs (Keras wraps it for ``compile``: :mod:`ipusim.keras.optimizers.tf_optimizer`); one
that implements the private ``_apply_dense``-style hooks (TF1 graph code) is not simulated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.keras.optimizers import SGD, Adagrad, Adam, RMSprop
from ipusim.keras.optimizers import Optimizer as KerasOptimizer

__all__ = [
    "AdagradOptimizer",
    "AdamOptimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
    "RMSPropOptimizer",
]


#: TF1's private update hooks: graph code of the TF1 runtime, which ipusim does not run.
_PRIVATE_HOOKS = (
    "_apply_dense",
    "_apply_sparse",
    "_apply_sparse_duplicate_indices",
    "_create_slots",
    "_finish",
    "_prepare",
    "_resource_apply_dense",
    "_resource_apply_sparse",
    "_resource_apply_sparse_duplicate_indices",
)


def _script_classes(cls: type) -> list[type]:
    """The classes of ``cls``' hierarchy a script defined (not ipusim's)."""
    return [c for c in cls.__mro__ if not c.__module__.startswith("ipusim.") and c is not object]


def _check_subclass(cls: type) -> None:
    """Refuse what a script's subclass needs and ipusim cannot run (see :class:`Optimizer`)."""
    hooks = sorted({h for c in _script_classes(cls) for h in _PRIVATE_HOOKS if h in vars(c)})
    if hooks:
        raise UnsupportedError(
            f"{cls.__name__}: a tf.compat.v1.train.Optimizer subclass that overrides {hooks} "
            "is not simulated by ipusim (those hooks are TF1 graph code); override "
            "compute_gradients / apply_gradients and delegate the update to a built-in TF1 or "
            "Keras optimizer, or use one of those directly"
        )
    if issubclass(cls, KerasOptimizer):  # a built-in TF1 optimizer (or a subclass of one)
        return
    if not any("apply_gradients" in vars(c) for c in _script_classes(cls)):
        raise UnsupportedError(
            f"{cls.__name__}: a tf.compat.v1.train.Optimizer subclass must override "
            "apply_gradients in ipusim (the base class' update runs the TF1 _apply_dense hooks, "
            "which are not simulated); delegate the update to a built-in TF1 or Keras optimizer"
        )


def _increment(step: Any) -> None:
    """``global_step += 1`` (a tf.Variable or ipusim's graph Variable)."""
    if hasattr(step, "assign_add"):
        step.assign_add(1)
    else:
        step.assign(np.asarray(step.value) + 1)


class Optimizer:
    """``tf.compat.v1.train.Optimizer``: the TF1 base class.

    The built-in TF1 optimizers below are Keras optimizers doing TF1's update. A script's
    subclass that overrides ``compute_gradients`` / ``apply_gradients`` and delegates the update
    (to a wrapped TF1 or Keras optimizer) runs as in TensorFlow: Keras ``compile`` wraps it
    (``TFOptimizer``) and calls those methods at every step; in a custom loop they are called
    on traced tensors.

    Args:
        use_locking: accepted (updates never race in ipusim).
        name: the optimizer's name (non-empty).

    Raises:
        UnsupportedError: a subclass overrides the private hooks (``_apply_dense``,
            ``_resource_apply_dense``, ``_create_slots``, ...), which are TF1 graph code, or
            does not override ``apply_gradients``.
        ConfigurationError: (a ValueError) an empty ``name``.
    """

    #: Marks TF1 optimizers (OptimizerV1) apart from the Keras optimizers they are built on.
    is_tf1 = True
    #: TF1's gating constants (accepted by ``compute_gradients``; no effect on the results).
    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def __init__(self, use_locking: bool = False, name: str = "Optimizer", **kwargs: Any) -> None:
        _check_subclass(type(self))
        if not name:
            raise ConfigurationError("Must specify the optimizer name")  # TF1's message
        if isinstance(self, KerasOptimizer):  # a built-in: the Keras optimizer of its class
            super().__init__(name=name, **kwargs)
        else:
            self._name = name
        self.use_locking = bool(use_locking)

    def get_name(self) -> str:
        """The optimizer's name (TF1's ``get_name``)."""
        return self._name

    # ------------------------------------------------------------------ TF1 surface
    def compute_gradients(
        self, loss: Any, var_list: Any = None, **kwargs: Any
    ) -> list[tuple[Any, Any]]:
        """``(gradient, variable)`` pairs of ``loss`` (TF1's ``compute_gradients``): a traced
        tensor, or the loss of a Keras training step (whose gradients are known)."""
        from ipusim.compat.runtime.optimizers import _trainable_in, compute_gradients_symbolic

        if getattr(loss, "_ipusim_step_loss", False):
            variables = list(var_list if var_list is not None else [])
            return list(zip(loss.gradients_for(variables), variables, strict=True))
        variables = list(var_list) if var_list is not None else _trainable_in(loss)
        return list(zip(compute_gradients_symbolic(loss, variables), variables, strict=True))

    # The TF1 signature (``global_step`` second) stands in for Keras' in the built-in TF1
    # optimizers below, by design: mypy sees their two bases' apply_gradients disagree.
    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None, **kwargs: Any
    ) -> Any:
        """TF1's ``apply_gradients(grads_and_vars, global_step=None, name=None)``; a
        ``global_step`` variable is incremented as TF1 does when the update runs eagerly (a
        traced update's step is counted by whoever executes it: the estimators do)."""
        from ipusim.graph.ops.update import has_traced_gradient

        if not isinstance(self, KerasOptimizer):  # a script's subclass calling the base update
            raise UnsupportedError(
                f"{type(self).__name__}: tf.compat.v1.train.Optimizer.apply_gradients runs the "
                "TF1 _apply_dense hooks, which ipusim does not simulate; delegate the update to "
                "a built-in TF1 or Keras optimizer's apply_gradients"
            )
        pairs = list(grads_and_vars)
        result = super().apply_gradients(pairs)
        if global_step is not None and not has_traced_gradient(pairs):
            _increment(global_step)
        return result

    def minimize(
        self, loss: Any, global_step: Any = None, var_list: Any = None, **kwargs: Any
    ) -> Any:
        """TF1's ``minimize``: ``compute_gradients`` then ``apply_gradients``."""
        return self.apply_gradients(
            self.compute_gradients(loss, var_list=var_list), global_step=global_step
        )


class GradientDescentOptimizer(Optimizer, SGD):  # type: ignore[misc]  # TF1's apply_gradients
    """``tf.compat.v1.train.GradientDescentOptimizer(learning_rate)``."""

    def __init__(
        self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent"
    ) -> None:
        super().__init__(use_locking, name, learning_rate=learning_rate)


class MomentumOptimizer(Optimizer, SGD):  # type: ignore[misc]  # TF1's apply_gradients
    """``tf.compat.v1.train.MomentumOptimizer(learning_rate, momentum, use_nesterov=False)``."""

    def __init__(
        self,
        learning_rate: Any,
        momentum: Any,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
    ) -> None:
        super().__init__(
            use_locking, name, learning_rate=learning_rate, momentum=momentum,
            nesterov=use_nesterov,
        )  # fmt: skip


class AdamOptimizer(Optimizer, Adam):  # type: ignore[misc]  # TF1's apply_gradients
    """``tf.compat.v1.train.AdamOptimizer`` (TF1 defaults: ``epsilon=1e-8``)."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        epsilon: float = 1e-08,
        use_locking: bool = False,
        name: str = "Adam",
    ) -> None:
        super().__init__(
            use_locking, name, learning_rate=learning_rate, beta_1=beta1, beta_2=beta2,
            epsilon=epsilon,
        )  # fmt: skip


class RMSPropOptimizer(Optimizer, RMSprop):  # type: ignore[misc]  # TF1's apply_gradients
    """``tf.compat.v1.train.RMSPropOptimizer`` (``ms`` starts at one, epsilon inside the root)."""

    def __init__(
        self,
        learning_rate: Any,
        decay: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: float = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        name: str = "RMSProp",
    ) -> None:
        super().__init__(
            use_locking, name, learning_rate=learning_rate, rho=decay, momentum=momentum,
            epsilon=epsilon, centered=centered,
        )  # fmt: skip
        self._momentum = True  # TF1 always keeps the momentum slot and its update form

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [(name, 1.0 if name == "rms" else init) for name, init in super()._slot_specs()]


class AdagradOptimizer(Optimizer, Adagrad):  # type: ignore[misc]  # TF1's apply_gradients
    """``tf.compat.v1.train.AdagradOptimizer`` (no epsilon: ``var -= lr * g / sqrt(acc)``)."""

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        use_locking: bool = False,
        name: str = "Adagrad",
    ) -> None:
        super().__init__(
            use_locking, name, learning_rate=learning_rate,
            initial_accumulator_value=initial_accumulator_value,
        )  # fmt: skip
        self.epsilon = 0.0
