"""``TFOptimizer``: how Keras trains with a TF1 optimizer (``tf.compat.v1.train.Optimizer``).

tf.keras' ``optimizers.get`` wraps a TF1 optimizer passed to ``compile`` in its ``TFOptimizer``
(keras/optimizer_v1.py), and IPU Keras' training step then calls, per step, the TF1 optimizer's
``compute_gradients(loss, params)`` (through ``TFOptimizer.get_grads``; S: graphcore/keras
r2.6/sdk-release-3.4 keras/ipu/extensions/extensions_base.py, ``_KerasOptimizerWrapper``) and,
per update, its ``apply_gradients(grads_and_vars, global_step=iterations)`` (after gradient
accumulation, when there is some). ipusim's built-in TF1 optimizers are Keras optimizers
already and need no wrapper; this class serves script-defined subclasses that override
``compute_gradients`` / ``apply_gradients`` (an optimizer that outfeeds the gradients and
delegates to a wrapped one, for example).

ipusim's training step computes the gradients itself, so the TF1 ``compute_gradients`` receives
a :class:`StepLoss`: the step's loss, whose gradients are already known. Asking an optimizer for
them (``compute_gradients`` of a TF1 optimizer, ``get_gradients`` of a Keras one) returns them;
whatever the script's ``compute_gradients`` returns is what is accumulated and applied.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, IncompatibleStateError, UnsupportedError
from ipusim.graph.graph import Symbol
from ipusim.keras.optimizers.optimizer import Optimizer

__all__ = ["StepLoss", "TFOptimizer", "loss_gradients"]


class StepLoss:
    """The loss of one Keras training step, with its gradients already computed.

    Args:
        grads: the gradients, one per variable of ``variables``.
        variables: the model's trainable variables.
    """

    _ipusim_step_loss = True

    def __init__(self, grads: list[Any], variables: list[Any]) -> None:
        self._grads = {id(v): g for g, v in zip(grads, variables, strict=True)}

    def gradients_for(self, variables: list[Any]) -> list[Any]:
        """The gradients of ``variables`` (None for a variable the loss does not depend on)."""
        return [self._grads.get(id(v)) for v in variables]

    def __repr__(self) -> str:
        return f"<StepLoss of {len(self._grads)} variable(s)>"


def loss_gradients(loss: Any, params: Any) -> list[Any]:
    """Keras 2's ``Optimizer.get_gradients(loss, params)``: d(loss)/d(param) of a loss computed in
    graph code (a traced tensor, or a training step's :class:`StepLoss`).

    Raises:
        IncompatibleStateError: (a RuntimeError) ``loss`` is an eager value (TensorFlow: ``tf.gradients`` is not supported
            when eager execution is enabled; use ``tf.GradientTape``).
        ConfigurationError: (a ValueError) a parameter has no gradient (as Keras).
    """
    params = list(params)
    grads: list[Any]
    if getattr(loss, "_ipusim_step_loss", False):
        grads = loss.gradients_for(params)
    elif isinstance(loss, Symbol):
        from ipusim.graph.autodiff import gradients
        from ipusim.graph.ops.reduce import reduce_sum

        target = reduce_sum(loss) if loss.shape != () else loss
        grads = gradients(target, [loss.graph.read_variable(p) for p in params])
    else:
        raise IncompatibleStateError(
            "get_gradients: tf.gradients is not supported when eager execution is enabled "
            f"(received a {type(loss).__name__} loss); compute the loss inside a tf.function or "
            "use tf.GradientTape"
        )
    for grad, param in zip(grads, params, strict=True):
        if grad is None:
            raise ConfigurationError(
                f"Variable {param.name} has `None` for gradient. Please make sure that all of "
                "your ops have a gradient defined (i.e. are differentiable)."
            )
    return grads


class TFOptimizer(Optimizer):
    """``keras.optimizers.TFOptimizer(optimizer, iterations=None)``: a TF1 optimizer in Keras.

    Args:
        optimizer: the TF1 optimizer (a ``tf.compat.v1.train.Optimizer`` subclass instance).
        iterations: the step counter handed to the TF1 ``apply_gradients`` as ``global_step``
            (default: a new int64 variable at 0).
    """

    def __init__(self, optimizer: Any, iterations: Any = None) -> None:
        super().__init__(name="TFOptimizer", learning_rate=0.0)
        self.optimizer = optimizer
        if iterations is not None:
            self._iterations = iterations

    # ------------------------------------------------------------------ timing model
    def _worker(self) -> Any:
        """The Keras optimizer doing the updates when the TF1 one delegates to a wrapped one (the
        usual pattern of such subclasses), else None."""
        for value in vars(self.optimizer).values():
            if isinstance(value, Optimizer):
                return value
        return None

    @property
    def slots_per_variable(self) -> int:
        worker = self._worker()
        return worker.slots_per_variable if worker is not None else 0  # E: as plain SGD

    @property
    def update_flops_per_element(self) -> int:  # type: ignore[override]
        worker = self._worker()
        # E: an update rule ipusim cannot see is budgeted as plain SGD (var -= lr * g: 2 ops).
        return worker.update_flops_per_element if worker is not None else 2

    # ------------------------------------------------------------------ Keras surface
    def apply_gradients(  # type: ignore[override]
        self, grads_and_vars: Any, name: str | None = None, **kwargs: Any
    ) -> Any:
        """``self.optimizer.apply_gradients(grads_and_vars, global_step=self.iterations)``."""
        del name, kwargs
        return self.optimizer.apply_gradients(list(grads_and_vars), global_step=self._iterations)

    def get_grads(self, loss: Any, params: Any) -> list[Any]:
        """The TF1 optimizer's ``compute_gradients(loss, params)``."""
        pairs: list[Any] = self.optimizer.compute_gradients(loss, params)
        return pairs

    def _gradients_observer(self, grads: list[Any], variables: list[Any], stage: str) -> Any:
        """Each step's gradients go through the TF1 ``compute_gradients`` (see the module
        docstring); returns the gradients it hands back, in ``variables``' order."""
        if stage != "computed":
            return None
        pairs = list(self.get_grads(StepLoss(grads, variables), list(variables)))
        by_variable = {id(v): g for g, v in pairs}
        missing = [v.name for v in variables if by_variable.get(id(v)) is None]
        if missing:
            raise ConfigurationError(
                f"{type(self.optimizer).__name__}.compute_gradients returned no gradient for "
                f"{missing}; it must return a (gradient, variable) pair for every variable"
            )
        return [np.asarray(by_variable[id(v)]) for v in variables]

    @property
    def weights(self) -> list[Any]:
        raise UnsupportedError(
            "TFOptimizer.weights: a TF1 optimizer wrapped by Keras has no Keras weights (as in "
            "tf.keras); read the wrapped optimizer's variables() instead"
        )

    def get_config(self) -> dict[str, Any]:
        """Not serializable, as in tf.keras: ``model.save`` then warns and saves the model
        without its compile() arguments (it loads uncompiled).

        Raises:
            ConfigurationError: always.
        """
        raise ConfigurationError(
            "TensorFlow (TF1) optimizers do not make it possible to access optimizer attributes "
            "or optimizer state after instantiation, so a TFOptimizer cannot be saved; compile "
            "the model again after loading it"
        )
