"""Keras symbolic tensors for building functional models before any graph exists.

A :class:`KerasTensor` has a spec and a history: the layer call that produced it. Functional models
are the DAG of those layer calls; executing a model re-runs the calls on graph Symbols. Applying a
raw op to a KerasTensor (``x + 1``, ``ops.relu(x)``) wraps it as a call of an :class:`OpLambda` layer,
so the DAG stays a DAG of layer calls.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ipusim.graph import graph as graph_module
from ipusim.graph.graph import TensorLike, TensorOperators
from ipusim.graph.op import Op
from ipusim.graph.spec import TensorSpec

_CALL_ORDER = itertools.count()


@dataclass(eq=False)
class LayerCall:
    """One call of a layer on KerasTensors.

    Attributes:
        layer: the layer called.
        args: the positional arguments, KerasTensors included, as passed.
        kwargs: the keyword arguments (tensors among them too: an RNN's ``initial_state``).
        outputs: the KerasTensors produced, flattened.
        structure: the outputs as returned (nested), for repacking.
        pipeline_stage: the stage of the ``PipelineStage`` scope the call was made in, or None.
    """

    layer: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    outputs: list[KerasTensor] = field(default_factory=list)
    structure: Any = None
    order: int = field(default_factory=lambda: next(_CALL_ORDER))
    pipeline_stage: int | None = None

    @property
    def inbound(self) -> list[KerasTensor]:
        from ipusim.keras.engine.nest import flatten

        flat = flatten([list(self.args), list(self.kwargs.values())])
        return [t for t in flat if isinstance(t, KerasTensor)]


class KerasTensor(TensorOperators):
    """A symbolic tensor of a functional model under construction."""

    _is_deferred_tensor = True
    __slots__ = ("spec", "history", "index", "__weakref__")

    def __init__(self, spec: TensorSpec, history: LayerCall | None = None, index: int = 0) -> None:
        self.spec = spec
        self.history = history
        self.index = index

    @property
    def name(self) -> str:
        layer = self.history.layer.name if self.history else "?"
        return f"{layer}/{self.index}"

    def __repr__(self) -> str:
        return f"<KerasTensor shape={self.shape} dtype={self.dtype} from {self.name}>"


def _wrap_raw_op(op: Op, inputs: tuple[TensorLike, ...], attrs: dict[str, Any]) -> Any:
    """Apply ``op`` to KerasTensors by calling an OpLambda layer (keeps the DAG of layer calls)."""
    from ipusim.keras.layers.core import OpLambda

    return OpLambda(op.name, attrs)(list(inputs))


graph_module.set_deferred_tensor_hook(_wrap_raw_op)
