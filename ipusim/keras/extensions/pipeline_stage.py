"""``PipelineStage`` scopes and the stage-assignment records of pipelined Keras models.

A layer *constructed* inside ``with PipelineStage(s):`` runs every call in stage ``s``; a layer
*called* inside one runs that call in stage ``s``. The call site wins over the construction site.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, overload

from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError
from ipusim.keras.engine.layer import current_pipeline_stage, set_current_pipeline_stage
from ipusim.keras.engine.summary import table_row

_tracing = threading.local()


@contextmanager
def ipu_model_trace() -> Iterator[None]:
    """Mark a trace of an IPU model: its ``call`` may open PipelineStage scopes outside a
    strategy scope (as in IPU TensorFlow, where the model's strategy is active while tracing)."""
    depth = getattr(_tracing, "depth", 0)
    _tracing.depth = depth + 1
    try:
        yield
    finally:
        _tracing.depth = depth


@overload
def _check_stage(value: Any, what: str, allow_none: Literal[False]) -> int: ...
@overload
def _check_stage(value: Any, what: str, allow_none: bool) -> int | None: ...
def _check_stage(value: Any, what: str, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{what} must be an int >= 0, received {value!r}.")
    if value < 0:
        raise ConfigurationError(f"{what} must be >= 0, received {value}.")
    return value


class PipelineStage:
    """Assign the layers constructed, or the layer calls made, inside this block to a stage.

    Args:
        stage: the pipeline stage (an int >= 0).

    Raises:
        TypeError: ``stage`` is not an int.
        ValueError: on entry, ``stage`` is negative.
        RuntimeError: on entry, outside an ``IPUStrategy`` scope, or inside another PipelineStage.
    """

    def __init__(self, stage: int) -> None:
        if isinstance(stage, bool) or not isinstance(stage, int):
            raise InvalidTypeError(
                f"PipelineStage: `stage` must be an int >= 0, received {stage!r}."
            )
        self._stage = stage

    @property
    def stage(self) -> int:
        return self._stage

    def __enter__(self) -> PipelineStage:
        from ipusim.strategy import current_strategy

        if self._stage < 0:
            raise ConfigurationError(
                f"PipelineStage: {self._stage} is not a valid pipeline stage; stages are "
                "numbered from 0."
            )
        if current_strategy() is None and not getattr(_tracing, "depth", 0):
            raise IncompatibleStateError(
                "PipelineStage may only be used inside an IPUStrategy scope: create the model "
                "in `with strategy.scope():`."
            )
        outer = current_pipeline_stage()
        if outer is not None:
            raise IncompatibleStateError(
                f"Pipeline stages must not be nested: PipelineStage({self._stage}) was entered "
                f"inside PipelineStage({outer}). Close the outer block first."
            )
        set_current_pipeline_stage(self._stage)
        return self

    def __exit__(self, *exc: object) -> None:
        set_current_pipeline_stage(None)

    def __repr__(self) -> str:
        return f"PipelineStage({self._stage})"


class _StageAssignment:
    """A layer and its pipeline stage (int >= 0, or None while unassigned)."""

    def __init__(self, layer: Any, pipeline_stage: int | None = None) -> None:
        self._layer = layer
        self.pipeline_stage = pipeline_stage

    @property
    def layer(self) -> Any:
        return self._layer

    @property
    def pipeline_stage(self) -> int | None:
        return self._pipeline_stage

    @pipeline_stage.setter
    def pipeline_stage(self, value: int | None) -> None:
        self._pipeline_stage = _check_stage(value, "pipeline_stage", allow_none=True)


class SequentialLayerPipelineStageAssignment(_StageAssignment):
    """The pipeline stage of one layer of a Sequential model.

    Args:
        layer: the layer.
        pipeline_stage: its stage (int >= 0), or None while unassigned.
    """

    def __str__(self) -> str:
        return f"Layer: {self._layer.name} is assigned to pipeline stage: {self._pipeline_stage}"

    __repr__ = __str__


class ModelLayerPipelineStageAssignment(_StageAssignment):
    """The pipeline stage of one invocation (call) of a layer of a subclassed model.

    Args:
        layer: the layer.
        node_index: which call of the layer in the model (0 for the first).
        pipeline_stage: its stage (int >= 0), or None while unassigned.
    """

    def __init__(self, layer: Any, node_index: int, pipeline_stage: int | None = None) -> None:
        self._node_index = _check_stage(node_index, "node_index", allow_none=False)
        self._inbound_layers: list[Any] = []
        super().__init__(layer, pipeline_stage)

    @property
    def node_index(self) -> int:
        return self._node_index

    @property
    def inbound_layers(self) -> list[Any]:
        """The layers whose outputs this invocation reads (model inputs show as input layers)."""
        return list(self._inbound_layers)

    def __str__(self) -> str:
        return (
            f"Layer: {self._layer.name} (node index {self._node_index}) is assigned to "
            f"pipeline stage: {self._pipeline_stage}"
        )

    __repr__ = __str__


class FunctionalLayerPipelineStageAssignment(ModelLayerPipelineStageAssignment):
    """The pipeline stage of one invocation (call) of a layer of a functional model.

    Args:
        layer: the layer.
        node_index: which call of the layer in the model (0 for the first).
        pipeline_stage: its stage (int >= 0), or None while unassigned.
    """


class GraphInput:
    """Stands for a model input among an invocation's ``inbound_layers`` (it has a ``name``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<model input {self.name!r}>"


def print_table(
    model_name: str,
    rows: list[list[list[str]]],
    headers: list[str],
    positions: list[float],
    line_length: int,
    print_fn: Any,
) -> None:
    """Print a stage-assignment summary as IPU TensorFlow lays it out.

    Args:
        model_name: shown in the title line.
        rows: per assignment, its lines (each a list of cells).
        headers: the column titles.
        positions: the right edge of each column as a fraction of ``line_length``.
        line_length: total width in characters.
        print_fn: called with each line.
    """
    edges = [int(line_length * p) for p in positions]
    print_fn(f'Model: "{model_name}"')
    print_fn("_" * line_length)
    print_fn(table_row(headers, edges))
    print_fn("=" * line_length)
    for i, lines in enumerate(rows):
        for cells in lines:
            print_fn(table_row(cells, edges))
        print_fn(("=" if i == len(rows) - 1 else "_") * line_length)


__all__ = [
    "FunctionalLayerPipelineStageAssignment",
    "ModelLayerPipelineStageAssignment",
    "PipelineStage",
    "SequentialLayerPipelineStageAssignment",
]
