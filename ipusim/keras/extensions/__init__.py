"""IPU extensions of Keras models (given to models created inside an ``IPUStrategy`` scope).

A model created in the scope gets an extension object (:func:`attach_if_in_strategy`); its class
never changes. The extension fills in the template hooks of :mod:`ipusim.keras.engine.ipu_hooks`
that the Keras loop calls, and its public methods (``set_pipelining_options``,
``set_gradient_accumulation_options``, ``export_for_ipu_serving`` ...) are found on the model
through ``Model.__getattr__``, bound to the model. ``isinstance(model, SequentialExtension)``
holds for such a model, as in IPU TensorFlow.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ipusim.keras.engine.ipu_hooks import IPURun, RunCall, RunKind
from ipusim.keras.extensions.base import KerasExtensionBase
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod
from ipusim.keras.extensions.pipeline_stage import (
    FunctionalLayerPipelineStageAssignment,
    ModelLayerPipelineStageAssignment,
    PipelineStage,
    SequentialLayerPipelineStageAssignment,
)
from ipusim.keras.extensions.serving import ServingExtension
from ipusim.keras.extensions.stage_assignment import (
    FunctionalPipelining,
    ModelPipelining,
    SequentialPipelining,
)


class SequentialExtension(SequentialPipelining, ServingExtension, KerasExtensionBase):
    """Extension methods of ``keras.Sequential`` models."""


class FunctionalExtension(FunctionalPipelining, ServingExtension, KerasExtensionBase):
    """Extension methods of functional ``keras.Model`` s."""


class ModelExtension(ModelPipelining, ServingExtension, KerasExtensionBase):
    """Extension methods of subclassed ``keras.Model`` s."""


@dataclass(frozen=True)
class Extension:
    """The IPU extension of one model kind: the hooks the Keras loop calls
    (:class:`ipusim.keras.engine.ipu_hooks.IPUExtension`), each running the kind's methods
    (``methods``, written against the model) on the model."""

    methods: type[KerasExtensionBase]

    def begin_run(self, model: Any, kind: RunKind, call: RunCall) -> IPURun:
        from ipusim.keras.extensions.run import begin_run

        return begin_run(model, kind, call)

    def trace_scope(self, model: Any) -> AbstractContextManager[None]:
        return self.methods._ipu_trace_scope(model)

    def traced(self, model: Any, trace: Any, building: bool) -> None:
        self.methods._ipu_traced(model, trace, building)

    def layers_changed(self, model: Any) -> None:
        self.methods._ipu_layers_changed(model)

    def attribute(self, model: Any, name: str) -> Any:
        """The extension's attribute ``name`` bound to ``model`` (AttributeError if none)."""
        import inspect

        found = inspect.getattr_static(self.methods, name)
        getter = getattr(found, "__get__", None)
        return found if getter is None else getter(model, type(model))


_EXTENSIONS: dict[type[KerasExtensionBase], Extension] = {
    cls: Extension(cls) for cls in (SequentialExtension, FunctionalExtension, ModelExtension)
}


def attach_extension(model: Any) -> None:
    """Give ``model`` the extension for its kind (nothing if it has one already, e.g. created
    inside two nested scopes)."""
    from ipusim.keras.engine.functional import Functional
    from ipusim.keras.engine.sequential import Sequential

    if model.__dict__.get("_ipu_extension") is not None:
        return
    if isinstance(model, Sequential):
        methods: type[KerasExtensionBase] = SequentialExtension
    elif isinstance(model, Functional):
        methods = FunctionalExtension
    else:
        methods = ModelExtension
    model._ipu_extension = _EXTENSIONS[methods]
    methods._init_extension_state(model)


def attach_if_in_strategy(model: Any) -> None:
    """Extend ``model`` when it is created inside an ``IPUStrategy`` scope with extensions on."""
    from ipusim.strategy import current_strategy

    strategy = current_strategy()
    if strategy is not None and strategy.enable_keras_extensions:
        attach_extension(model)


__all__ = [
    "Extension",
    "FunctionalExtension",
    "FunctionalLayerPipelineStageAssignment",
    "GradientAccumulationReductionMethod",
    "KerasExtensionBase",
    "ModelExtension",
    "ModelLayerPipelineStageAssignment",
    "PipelineStage",
    "SequentialExtension",
    "SequentialLayerPipelineStageAssignment",
    "attach_extension",
    "attach_if_in_strategy",
]
