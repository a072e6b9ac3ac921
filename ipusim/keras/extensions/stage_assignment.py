"""Getting and setting pipeline stage assignments, per model kind.

Sequential models assign one stage per layer; functional models one per layer invocation (from
their DAG of layer calls, or PipelineStage scopes); subclassed models one per invocation in the
graph ``build()`` traced (or PipelineStage scopes inside ``call``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from ipusim.errors import ConfigurationError, IncompatibleStateError
from ipusim.keras.extensions.pipeline_stage import (
    FunctionalLayerPipelineStageAssignment,
    ModelLayerPipelineStageAssignment,
    SequentialLayerPipelineStageAssignment,
    ipu_model_trace,
    print_table,
)
from ipusim.keras.extensions.pipeline_structure import (
    StageEntry,
    check_stages,
    functional_entries,
    graph_entries,
    scope_stages,
)
from ipusim.keras.extensions.pipelining import _PipeliningBase

log = logging.getLogger("ipusim")


def _stale(model: Any, what: str) -> IncompatibleStateError:
    """The error for ``model`` (a pipelining mixin, naming its kind in ``_stale_kind``) whose
    stage assignment ``what`` says is out of date."""
    return IncompatibleStateError(
        f"The pipeline stage assignment of {model._stale_kind} model {model.name} is no longer "
        f"valid: {what} "
        "Call set_pipeline_stage_assignment() again (start from "
        "get_pipeline_stage_assignment()), or reset_pipeline_stage_assignment() to run the "
        "model unpipelined."
    )


def _assigned(assignment: SequentialLayerPipelineStageAssignment) -> int:
    """The stage of a stored assignment (set_pipeline_stage_assignment refused None)."""
    stage = assignment.pipeline_stage
    assert stage is not None
    return stage


class _CustomCallCheck:
    _pipeline_kind = "Keras"

    def _check_call_not_overridden(self) -> None:
        for cls in type(self).__mro__:
            if cls.__module__.split(".")[0] != "ipusim" and "call" in vars(cls):
                raise IncompatibleStateError(
                    f"The function `call` for the model {self.name} has been overridden (in "  # type: ignore[attr-defined]
                    f"{cls.__qualname__}). This is not supported for pipelined Keras "
                    f"{self._pipeline_kind} models: remove the override, or write the model as a "
                    "subclassed keras.Model."
                )


class SequentialPipelining(_CustomCallCheck, _PipeliningBase):
    """Pipelining of Sequential models: one stage per layer, in layer order."""

    _pipeline_kind = "Sequential"
    _stale_kind = "Sequential"
    _stage_assignment: list[SequentialLayerPipelineStageAssignment] | None

    def _init_extension_state(self) -> None:
        _PipeliningBase._init_extension_state(self)
        self._assignment_valid = True

    def _ipu_layers_changed(self) -> None:
        if getattr(self, "_stage_assignment", None) is not None and self._assignment_valid:
            self._assignment_valid = False
            log.info(
                "Adding or removing a layer of the pipelined Sequential model %s has invalidated "
                "its pipeline stage assignment. Call `set_pipeline_stage_assignment()` before "
                "executing it again.",
                self.name,
            )

    def get_pipeline_stage_assignment(self) -> list[SequentialLayerPipelineStageAssignment]:
        """A copy of the assignment, or one unassigned entry per layer when none is set."""
        if self._stage_assignment is None:
            return [SequentialLayerPipelineStageAssignment(la) for la in self.layers]  # type: ignore[attr-defined]
        if not self._assignment_valid:
            log.info(
                "Layers were added to or removed from Sequential model %s after its pipeline "
                "stage assignment was set; the assignment returned does not match its layers.",
                self.name,
            )
        return [
            SequentialLayerPipelineStageAssignment(a.layer, a.pipeline_stage)
            for a in self._stage_assignment
        ]

    def set_pipeline_stage_assignment(self, pipeline_stage_assignment: list[Any]) -> None:
        """Assign the layers to stages: a list of ints, or of
        SequentialLayerPipelineStageAssignment, one per layer; stages start at 0 and each layer's
        stage equals its predecessor's or is one more."""
        lst = pipeline_stage_assignment
        layers = self.layers  # type: ignore[attr-defined]
        if not isinstance(lst, list):
            raise ConfigurationError(
                "set_pipeline_stage_assignment: `pipeline_stage_assignment` must be a list of "
                f"stages (ints) or of SequentialLayerPipelineStageAssignment, received "
                f"{type(lst).__name__}."
            )
        if len(lst) != len(layers):
            raise ConfigurationError(
                f"set_pipeline_stage_assignment: the provided `pipeline_stage_assignment` has "
                f"{len(lst)} entries, but Sequential model {self.name} has {len(layers)} layers. "
                "Each layer of a Sequential model needs a pipeline stage."
            )
        if lst and all(isinstance(s, int) and not isinstance(s, bool) for s in lst):
            lst = [SequentialLayerPipelineStageAssignment(la, s) for la, s in zip(layers, lst)]
        bad = [a for a in lst if not isinstance(a, SequentialLayerPipelineStageAssignment)]
        if bad:
            raise ConfigurationError(
                "set_pipeline_stage_assignment: the elements of `pipeline_stage_assignment` must "
                "all be ints or all be SequentialLayerPipelineStageAssignment, received "
                f"{bad[0]!r} of type {type(bad[0]).__name__}."
            )
        for a in lst:
            if a.pipeline_stage is None:
                raise ConfigurationError(
                    f"set_pipeline_stage_assignment: layer {a.layer.name} has not been assigned "
                    "a pipeline stage; set its `pipeline_stage`."
                )
        for i, (a, layer) in enumerate(zip(lst, layers)):
            if a.layer is not layer:
                raise ConfigurationError(
                    f"set_pipeline_stage_assignment: the assignment at index {i} is for layer "
                    f"{a.layer.name}, but layer {i} of Sequential model {self.name} is "
                    f"{layer.name}. Give the assignments in the order of model.layers."
                )
        if lst and lst[0].pipeline_stage != 0:
            raise ConfigurationError(
                f"set_pipeline_stage_assignment: the first layer of a pipelined Sequential model "
                f"must be in pipeline stage 0, but {lst[0].layer.name} is assigned to stage "
                f"{lst[0].pipeline_stage}."
            )
        for prev, a in zip(lst, lst[1:]):
            if a.pipeline_stage not in (prev.pipeline_stage, prev.pipeline_stage + 1):
                raise ConfigurationError(
                    f"set_pipeline_stage_assignment: layer {a.layer.name} is assigned to "
                    f"pipeline stage {a.pipeline_stage}, but the previous layer "
                    f"{prev.layer.name} is in stage {prev.pipeline_stage}. A layer of a "
                    "Sequential model must be in the same stage as the previous layer or the "
                    f"next one ({prev.pipeline_stage} or {prev.pipeline_stage + 1})."
                )
        self._stage_assignment = [
            SequentialLayerPipelineStageAssignment(a.layer, a.pipeline_stage) for a in lst
        ]
        self._assignment_valid = True
        self._assignment_reset = False
        self._reset_ipu_functions()

    def print_pipeline_stage_assignment_summary(
        self, line_length: int | None = None, print_fn: Any = None
    ) -> None:
        """Print each layer with its pipeline stage."""
        rows = [
            [[f"{a.layer.name} ({type(a.layer).__name__})", str(a.pipeline_stage)]]
            for a in self.get_pipeline_stage_assignment()
        ]
        print_table(
            self.name,
            rows,
            ["Layer (type)", "Pipeline Stage"],
            [0.5, 1.0],
            line_length or 60,
            print_fn or print,
        )

    def _has_stage_assignment(self) -> bool:
        return self._stage_assignment is not None

    def _check_valid(self) -> None:
        if not self._assignment_valid:
            raise _stale(self, "layers were added to or removed from the model after it was set.")

    def _current_stages(self) -> tuple[list[StageEntry], list[int]] | None:
        self._check_valid()
        assignment = self._stage_assignment
        assert assignment is not None  # asked only of a pipelined model (_is_pipelined)
        stages = [_assigned(a) for a in assignment]
        entries = [
            StageEntry(a.layer, 0, None, (), (i - 1,) if i else ())
            for i, a in enumerate(assignment)
        ]
        return entries, stages

    def _stages_for_graph(self, entries: list[StageEntry]) -> list[int] | None:
        if self._stage_assignment is None:
            return None
        self._check_valid()
        by_layer = {id(a.layer): _assigned(a) for a in self._stage_assignment}
        missing = [e for e in entries if id(e.layer) not in by_layer]
        if missing:
            raise _stale(self, f"layer {missing[0].layer.name} has no stage.")
        return [by_layer[id(e.layer)] for e in entries]


class _InvocationPipelining(_PipeliningBase):
    """Shared by functional and subclassed models: one stage per layer invocation."""

    _assignment_class: type = ModelLayerPipelineStageAssignment
    #: (layer id, node index) -> stage, or None.
    _stage_assignment: dict[tuple[int, int], int] | None

    def _entries(self) -> list[StageEntry] | None:
        raise NotImplementedError

    def _stage_map(self, entries: list[StageEntry]) -> dict[tuple[int, int], int] | None:
        """(layer id, node index) -> stage: the explicit assignment, or PipelineStage scopes."""
        if self._assignment_reset:
            return None
        if self._stage_assignment is not None:
            return self._stage_assignment
        stages = scope_stages(self.name, entries)
        return None if stages is None else {e.key: s for e, s in zip(entries, stages)}

    def _has_stage_assignment(self) -> bool:
        if self._assignment_reset:
            return False
        if self._stage_assignment is not None:
            return True
        entries = self._entries()
        return entries is not None and any(e.scope_stage is not None for e in entries)

    def print_pipeline_stage_assignment_summary(
        self, line_length: int | None = None, print_fn: Any = None
    ) -> None:
        """Print each layer invocation with the layers it reads from and its pipeline stage."""
        self._print_invocation_summary(line_length, print_fn)

    def _assignments_for(self, entries: list[StageEntry]) -> list[Any]:
        if self._assignment_reset:
            stages: list[int | None] = [None] * len(entries)
        elif self._stage_assignment is not None:
            stages = [self._stage_assignment.get(e.key) for e in entries]
        else:
            stages = [e.scope_stage for e in entries]
        return self._make_assignments(self._assignment_class, entries, stages)

    def _store(self, entries: list[StageEntry], assignments: list[Any]) -> None:
        stage_map = {(id(a.layer), a.node_index): a.pipeline_stage for a in assignments}
        check_stages(self.name, entries, [stage_map[e.key] for e in entries])
        self._stage_assignment = stage_map
        self._assignment_reset = False
        self._reset_ipu_functions()

    def _lookup(
        self, entries: list[StageEntry], stage_map: Mapping[tuple[int, int], int]
    ) -> list[int]:
        missing = [e for e in entries if e.key not in stage_map]
        if missing:
            raise _stale(self, f"layer {missing[0].label} of the traced graph has no stage.")
        return [stage_map[e.key] for e in entries]


class FunctionalPipelining(_CustomCallCheck, _InvocationPipelining):
    """Pipelining of functional models: one stage per layer call of the model's DAG."""

    _pipeline_kind = "Functional"
    _stale_kind = "functional"
    _assignment_class = FunctionalLayerPipelineStageAssignment

    def _entries(self) -> list[StageEntry] | None:
        return functional_entries(self)

    def get_pipeline_stage_assignment(self) -> list[FunctionalLayerPipelineStageAssignment]:
        """One assignment per layer invocation in post-order (execution order), Input layers
        excluded, holding the current stages (from set_..., PipelineStage scopes, or None)."""
        return self._assignments_for(functional_entries(self))

    def set_pipeline_stage_assignment(
        self, pipeline_stage_assignment: list[FunctionalLayerPipelineStageAssignment]
    ) -> None:
        """Assign every layer invocation to a stage (any order, each invocation once); stages
        start at 0 without gaps and a layer may only read outputs of its own or earlier stages."""
        entries = functional_entries(self)
        lst = pipeline_stage_assignment
        self._check_invocation_list(
            lst, FunctionalLayerPipelineStageAssignment, entries, "functional model"
        )
        keys = {e.key for e in entries}
        seen: set[tuple[int, int]] = set()
        for a in lst:
            key = (id(a.layer), a.node_index)
            if key in seen:
                raise ConfigurationError(
                    f"set_pipeline_stage_assignment: duplicate assignment for layer "
                    f"{a.layer.name} with node index {a.node_index}. Each layer invocation is "
                    "assigned to exactly one pipeline stage."
                )
            seen.add(key)
            if key not in keys:
                raise ConfigurationError(
                    f"set_pipeline_stage_assignment: layer {a.layer.name} with node index "
                    f"{a.node_index} is not a layer invocation of model {self.name}. Start from "
                    "get_pipeline_stage_assignment()."
                )
        self._store(entries, lst)

    def _current_stages(self) -> tuple[list[StageEntry], list[int]] | None:
        entries = functional_entries(self)
        stage_map = self._stage_map(entries)
        assert stage_map is not None  # asked only of a pipelined model (_is_pipelined)
        return entries, self._lookup(entries, stage_map)

    def _stages_for_graph(self, entries: list[StageEntry]) -> list[int] | None:
        stage_map = self._stage_map(functional_entries(self))
        return None if stage_map is None else self._lookup(entries, stage_map)


class ModelPipelining(_InvocationPipelining):
    """Pipelining of subclassed models: one stage per layer invocation of the traced ``call``."""

    _pipeline_kind = "Model"
    _stale_kind = "subclassed"

    def _init_extension_state(self) -> None:
        _PipeliningBase._init_extension_state(self)
        self._pipeline_structure: list[StageEntry] | None = None

    def _ipu_trace_scope(self) -> AbstractContextManager[None]:
        return ipu_model_trace()

    def _ipu_traced(self, trace: Any, building: bool) -> None:
        """``build()``'s trace (or the first) gives the invocations stages are assigned to."""
        if building or self._pipeline_structure is None:
            self._pipeline_structure = graph_entries(trace.graph)[0]

    def _trace_for_pipelining(self, x: Any, batch_size: int | None) -> None:
        if self._pipeline_structure is not None or x is None:
            return
        from ipusim.keras.extensions.data import first_batch

        x_batch = first_batch(x, None, None, batch_size)[0]
        _, x_spec, _, _ = self._prepare(x_batch, None, None)
        self.trace(x_spec, training=False)  # type: ignore[attr-defined]

    def _entries(self) -> list[StageEntry] | None:
        if self._pipeline_structure is None and self.built and self._build_input_spec is not None:  # type: ignore[attr-defined]
            self.trace(self._build_input_spec, training=False)  # type: ignore[attr-defined]
        return self._pipeline_structure

    def _built_entries(self, action: str, hint: str = "") -> list[StageEntry]:
        entries = self._entries()
        if entries is None:
            raise IncompatibleStateError(
                f"Cannot {action} pipeline stage assignments for model `{self.name}`, which has "
                f"not been built yet. Call `model.build(input_shape)` first{hint}."
            )
        return entries

    def get_pipeline_stage_assignment(self) -> list[ModelLayerPipelineStageAssignment]:
        """One assignment per layer invocation of the graph ``build()`` traced, in post-order
        (execution order), holding the current stages (from set_..., scopes, or None)."""
        return self._assignments_for(self._built_entries("get"))

    def set_pipeline_stage_assignment(
        self, pipeline_stage_assignment: list[ModelLayerPipelineStageAssignment]
    ) -> None:
        """Assign every layer invocation, in the post-order of get_pipeline_stage_assignment()."""
        entries = self._built_entries(
            "set", ", or assign pipeline stages in `call` with PipelineStage scopes"
        )
        self._check_invocation_list(
            pipeline_stage_assignment, ModelLayerPipelineStageAssignment, entries, "model"
        )
        _check_order(pipeline_stage_assignment, entries)
        self._store(entries, pipeline_stage_assignment)

    def _current_stages(self) -> tuple[list[StageEntry], list[int]] | None:
        entries = self._pipeline_structure
        if entries is None:
            return None
        if self._stage_assignment is not None:
            expected = [(e.layer, e.node_index) for e in entries]
            if sorted(self._stage_assignment) != sorted((id(la), i) for la, i in expected):
                raise _stale(
                    self, "the graph traced by the last build() has different layer invocations."
                )
        stage_map = self._stage_map(entries)
        assert stage_map is not None  # asked only of a pipelined model (_is_pipelined)
        return entries, self._lookup(entries, stage_map)

    def _stages_for_graph(self, entries: list[StageEntry]) -> list[int] | None:
        if self._assignment_reset:
            return None
        if self._stage_assignment is None:
            return scope_stages(self.name, entries)
        if len(entries) != len(self._stage_assignment):
            raise _stale(
                self,
                f"the traced graph has {len(entries)} layer invocations, the assignment "
                f"{len(self._stage_assignment)}.",
            )
        return self._lookup(entries, self._stage_assignment)


def _check_order(assignments: list[Any], entries: list[StageEntry]) -> None:
    counts = Counter(id(e.layer) for e in entries)
    for position, (a, e) in enumerate(zip(assignments, entries)):
        if a.layer is not e.layer:
            raise ConfigurationError(
                "set_pipeline_stage_assignment: the order of `pipeline_stage_assignment` does not "
                f"match the post-order of the traced graph: entry {position} is for layer "
                f"{a.layer.name}, expected {e.layer.name}. Keep the order of "
                "get_pipeline_stage_assignment()."
            )
        calls = counts[id(a.layer)]
        if a.node_index >= calls:
            raise ConfigurationError(
                f"set_pipeline_stage_assignment: layer {a.layer.name} has {calls} invocation(s) "
                f"in the graph, but `pipeline_stage_assignment` has an assignment for node index "
                f"{a.node_index} (valid: 0 to {calls - 1})."
            )
        if a.node_index != e.node_index:
            raise ConfigurationError(
                "set_pipeline_stage_assignment: the order of `pipeline_stage_assignment` does not "
                f"match the post-order of the traced graph: entry {position} is node index "
                f"{a.node_index} of layer {a.layer.name}, expected node index {e.node_index}. "
                "Keep the order of get_pipeline_stage_assignment()."
            )
