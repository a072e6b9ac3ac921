"""Pipelining methods of the IPU Keras extensions: options, stage assignment, and the plan.

``_PipeliningBase`` holds what the three model kinds share (``set_pipelining_options``, the fit
checks, :meth:`_PipeliningBase._pipeline_plan` for lowering, the summary); ``SequentialPipelining``,
``FunctionalPipelining`` and ``ModelPipelining`` differ in how stages are assigned.
"""

from __future__ import annotations

import logging
from numbers import Integral
from typing import TYPE_CHECKING, Any

from ipusim import pipelining as pl
from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError
from ipusim.keras.extensions.base import KerasExtensionBase
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod
from ipusim.keras.extensions.pipeline_stage import PipelineStage, print_table
from ipusim.keras.extensions.pipeline_structure import StageEntry, check_stages, graph_entries

log = logging.getLogger("ipusim")

#: pipeline() arguments that set_pipelining_options sets from its own arguments.
_EXPLICIT = {
    "gradient_accumulation_count": "gradient_accumulation_steps_per_replica",
    "device_mapping": "device_mapping",
    "accumulate_outfeed": "accumulate_outfeed",
    "reduction_method": "gradient_accumulation_reduction_method",
}
_AUTOMATIC = (
    "computational_stages",
    "repeat_count",
    "inputs",
    "infeed_queue",
    "outfeed_queue",
    "optimizer_function",
)
_INCOMPATIBLE = ("outfeed_loss", "outfeed_mask", "batch_serialization_iterations")
#: The other pipeline() arguments, forwarded as they are.
_FORWARDED = (
    "gradient_accumulation_dtype",
    "pipeline_schedule",
    "recomputation_mode",
    "forward_propagation_stages_poplar_options",
    "backward_propagation_stages_poplar_options",
    "weight_update_poplar_options",
    "offload_weight_update_variables",
    "replicated_optimizer_state_sharding",
    "offload_activations",
    "offload_gradient_accumulation_buffers",
    "replicated_weight_sharding",
    "offload_weights",
    "continuous_weight_updates",
    "accumulate_outfeed_dtype",
    "name",
)


def _check_kwargs(kwargs: dict[str, Any]) -> None:
    for key in kwargs:
        if key in _EXPLICIT:
            raise ConfigurationError(
                f"set_pipelining_options: found `{key}` in pipelining_kwargs. Set the "
                f"`{_EXPLICIT[key]}` argument of set_pipelining_options instead."
            )
        if key in _AUTOMATIC:
            raise ConfigurationError(
                f"set_pipelining_options: found `{key}` in pipelining_kwargs; Keras sets this "
                "argument automatically, remove it."
            )
        if key in _INCOMPATIBLE:
            raise ConfigurationError(
                f"set_pipelining_options: found `{key}` in pipelining_kwargs; this argument is "
                "not compatible with Keras, remove it."
            )
        if key not in _FORWARDED:
            raise InvalidTypeError(
                f"set_pipelining_options: `{key}` is not an argument of pipeline(). Valid "
                f"pipelining_kwargs are: {', '.join(_FORWARDED)}."
            )


if TYPE_CHECKING:
    # The methods run on the extended model, always a KerasExtensionBase too: every extension
    # class mixes both in (ipusim.keras.extensions). At run time the mixin derives from object.
    _ExtendedModel = KerasExtensionBase
else:
    _ExtendedModel = object


class _PipeliningBase(_ExtendedModel):
    """What the Sequential, Functional and subclassed-model pipelining methods share."""

    _pipeline_kind = "Keras"

    # ------------------------------------------------------------------ state
    def _init_extension_state(self) -> None:
        KerasExtensionBase._init_extension_state(self)
        self._pipelining_options: pl.PipelineOptions | None = None
        self._stage_assignment: Any = None  # explicit assignment (kind-specific), or None
        self._assignment_reset = False  # reset_...(): ignore PipelineStage scopes too
        if not hasattr(self, "_plain_gradient_accumulation"):
            self._plain_gradient_accumulation = (1, "sum")

    # ------------------------------------------------------------------ options
    def set_pipelining_options(
        self,
        gradient_accumulation_steps_per_replica: int | None = None,
        device_mapping: list[int] | None = None,
        accumulate_outfeed: bool | None = None,
        experimental_normalize_gradients: bool | None = None,
        gradient_accumulation_reduction_method: Any = GradientAccumulationReductionMethod.SUM,
        **pipelining_kwargs: Any,
    ) -> None:
        """Options of the pipeline a pipelined model runs as.

        Args:
            gradient_accumulation_steps_per_replica: micro-batches per weight update (a positive
                int); required before training a pipelined model.
            device_mapping: the IPU index of each pipeline stage (default stage i on IPU i).
            accumulate_outfeed: accumulate the metrics on the IPU and outfeed them once per run.
            experimental_normalize_gradients: scale each gradient by 1/N (forces SUM, which then
                equals MEAN).
            gradient_accumulation_reduction_method: SUM (default), MEAN or RUNNING_MEAN.
            **pipelining_kwargs: other ``pipeline()`` arguments, e.g. ``pipeline_schedule``,
                ``recomputation_mode``, ``offload_weight_update_variables``.

        Raises:
            ValueError: a non-positive step count, a device mapping that is not a list of ints,
                or a pipeline() argument Keras sets itself or cannot use.
            TypeError: an unknown pipeline() argument, or one of the wrong type.
            NotImplementedError: ``continuous_weight_updates=True``.
        """
        steps = gradient_accumulation_steps_per_replica
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, Integral) or steps < 1:
                raise ConfigurationError(
                    "set_pipelining_options: `gradient_accumulation_steps_per_replica` must be a "
                    f"positive integer, received {steps!r}."
                )
            steps = int(steps)
        mapping = None
        if device_mapping is not None:
            if not isinstance(device_mapping, list) or not all(
                isinstance(d, Integral) and not isinstance(d, bool) and d >= 0
                for d in device_mapping
            ):
                raise ConfigurationError(
                    "set_pipelining_options: `device_mapping` must be a list of IPU indices "
                    f"(ints >= 0), one per pipeline stage; received {device_mapping!r}."
                )
            mapping = tuple(int(d) for d in device_mapping)
        for name, value in (
            ("accumulate_outfeed", accumulate_outfeed),
            ("experimental_normalize_gradients", experimental_normalize_gradients),
        ):
            if value is not None and not isinstance(value, bool):
                raise InvalidTypeError(
                    f"set_pipelining_options: `{name}` must be True, False or None, received "
                    f"{value!r}."
                )
        _check_kwargs(pipelining_kwargs)
        self._pipelining_options = pl.PipelineOptions.from_kwargs(
            steps,
            mapping,
            bool(accumulate_outfeed),
            gradient_accumulation_reduction_method,
            bool(experimental_normalize_gradients),
            **pipelining_kwargs,
        )
        self._reset_ipu_functions()

    # ------------------------------------------------------------------ kind-specific hooks
    def _has_stage_assignment(self) -> bool:
        raise NotImplementedError

    def _current_stages(self) -> tuple[list[StageEntry], list[int]] | None:
        """The model's invocations and their stages, validated as at fit time (None: not known)."""
        raise NotImplementedError

    def _stages_for_graph(self, entries: list[StageEntry]) -> list[int] | None:
        """The stage of each top-level invocation of a traced graph; None when not pipelined."""
        raise NotImplementedError

    def _check_call_not_overridden(self) -> None:
        """Functional and Sequential models cannot be pipelined with a custom ``call``."""

    # ------------------------------------------------------------------ shared methods
    def reset_pipeline_stage_assignment(self) -> None:
        """Remove the stage assignment (PipelineStage scopes included): the model is no longer
        pipelined."""
        self._stage_assignment = None
        self._assignment_reset = True
        self._reset_ipu_functions()

    def _is_pipelined(self) -> bool:
        """Whether the model has a pipeline stage assignment (explicit or from scopes)."""
        return self._has_stage_assignment()

    def _set_numerics_accumulation(self, steps: int, method: str) -> None:
        if (steps, method) != (self._gradient_accumulation, self._accumulation_method):
            self._gradient_accumulation = steps
            self._accumulation_method = method
            self._accumulators = None

    def _check_pipelined_fit(self, x: Any = None, batch_size: int | None = None) -> None:
        """Validate a pipelined model before training and give it gradient-accumulation numerics.

        A pipelined model trains exactly like the same model accumulating N =
        ``gradient_accumulation_steps_per_replica`` micro-batches per update; an unpipelined one
        uses ``set_gradient_accumulation_options``' values. ``x`` and ``batch_size`` (the fit data)
        let a subclassed model be traced first if it was never built.

        Raises:
            ValueError: pipelined with no ``gradient_accumulation_steps_per_replica``, a
                ``device_mapping`` of the wrong length, or invalid stages.
            RuntimeError: a stale assignment, or ``call`` overridden on a pipelined
                Functional/Sequential model.
            NotImplementedError: the Interleaved schedule with several stages on one IPU.
        """
        self._trace_for_pipelining(x, batch_size)
        if not self._is_pipelined():
            self._set_numerics_accumulation(*self._plain_gradient_accumulation)
            return
        self._check_call_not_overridden()
        current = self._current_stages()
        options = self._pipelining_options
        if options is None or options.gradient_accumulation_steps_per_replica is None:
            raise ConfigurationError(
                f"The model {self.name} you are training is pipelined, but "
                "`gradient_accumulation_steps_per_replica` has not been set. Pipelined models "
                "accumulate gradients when training: call model.set_pipelining_options("
                "gradient_accumulation_steps_per_replica=N) first."
            )
        if current is not None:
            entries, stages = current
            num = self._num_stages(entries, stages)
            mapping = self._device_mapping(num)
            if options.schedule is pl.PipelineSchedule.Interleaved and len(set(mapping)) < num:
                raise UnsupportedError(
                    f"The Interleaved pipeline schedule does not support several stages on one "
                    f"IPU when training, but device_mapping is {list(mapping)}. Use the Grouped "
                    "or Sequential schedule, or map each stage to its own IPU."
                )
        self._set_numerics_accumulation(
            options.gradient_accumulation_steps_per_replica, options.reduction_method.kernel_name
        )

    def _trace_for_pipelining(self, x: Any, batch_size: int | None) -> None:
        """Subclassed models trace themselves with the data if never built (no-op otherwise)."""

    def _num_stages(self, entries: list[StageEntry], stages: list[int]) -> int:
        num = check_stages(self.name, entries, stages)
        if num < 2:
            raise ConfigurationError(
                f"Model {self.name} is pipelined with all its layers in pipeline stage 0, but a "
                "pipeline needs at least two stages. Assign layers to stage 1 too, or call "
                "reset_pipeline_stage_assignment() to run the model unpipelined."
            )
        return num

    def _device_mapping(self, num_stages: int) -> tuple[int, ...]:
        options = self._pipelining_options
        mapping = options.device_mapping if options is not None else None
        if mapping is None:
            return tuple(range(num_stages))
        if len(mapping) != num_stages:
            raise ConfigurationError(
                f"device_mapping {list(mapping)} has {len(mapping)} entries but model "
                f"{self.name} has {num_stages} pipeline stages; give one IPU index per stage "
                "in set_pipelining_options(device_mapping=...)."
            )
        return mapping

    def _pipeline_plan(self, graph: Any) -> pl.PipelinePlan | None:
        """The stage of every top-level invocation of ``graph`` (a traced ``Graph`` or ``Trace``
        of this model, any batch size); None when the model is not pipelined."""
        graph = getattr(graph, "graph", graph)
        entries, indices = graph_entries(graph)
        stages = self._stages_for_graph(entries)
        if stages is None:
            return None
        self._check_call_not_overridden()
        num = self._num_stages(entries, stages)
        mapping = self._device_mapping(num)
        options = self._pipelining_options or pl.PipelineOptions()
        pl.check_stage_option_lengths(options.kwargs, num)
        return pl.PipelinePlan(num, mapping, dict(zip(indices, stages)), options)

    def _print_invocation_summary(self, line_length: int | None, print_fn: Any) -> None:
        rows = []
        for a in self.get_pipeline_stage_assignment():
            names = [layer.name for layer in a.inbound_layers]
            first = [
                f"{a.layer.name} ({type(a.layer).__name__}) ({a.node_index})",
                names[0] if names else "",
                str(a.pipeline_stage),
            ]
            rows.append([first] + [["", n, ""] for n in names[1:]])
        print_table(
            self.name,
            rows,
            ["Layer (type) (node index)", "Input Layers", "Pipeline Stage"],
            [0.4, 0.8, 1.0],
            line_length or 89,
            print_fn or print,
        )

    # ------------------------------------------------------------------ helpers for subclasses
    def _check_invocation_list(
        self, assignments: Any, cls: type, entries: list[StageEntry], what: str
    ) -> None:
        """The list, length, type and None checks shared by Functional and subclassed models."""
        if not isinstance(assignments, list):
            raise ConfigurationError(
                "set_pipeline_stage_assignment: `pipeline_stage_assignment` must be a list, "
                f"received {type(assignments).__name__}. Pass the (modified) list from "
                "get_pipeline_stage_assignment()."
            )
        if len(assignments) != len(entries):
            raise ConfigurationError(
                f"set_pipeline_stage_assignment: the provided `pipeline_stage_assignment` has "
                f"{len(assignments)} entries, but {what} {self.name} has {len(entries)} layer "
                "invocations (excluding input layers). Each invocation needs a pipeline stage: "
                "start from get_pipeline_stage_assignment()."
            )
        bad = [a for a in assignments if not isinstance(a, cls)]
        if bad:
            raise ConfigurationError(
                "set_pipeline_stage_assignment: all elements of `pipeline_stage_assignment` "
                f"must be {cls.__name__} instances, received {bad[0]!r} of type "
                f"{type(bad[0]).__name__}."
            )
        for a in assignments:
            if a.pipeline_stage is None:
                raise ConfigurationError(
                    f"set_pipeline_stage_assignment: layer {a.layer.name} with node index "
                    f"{a.node_index} has not been assigned a pipeline stage; set its "
                    "`pipeline_stage`."
                )

    @staticmethod
    def _make_assignments(
        cls: type, entries: list[StageEntry], stages: list[int | None]
    ) -> list[Any]:
        out = []
        for entry, stage in zip(entries, stages):
            a = cls(entry.layer, entry.node_index, stage)
            a._inbound_layers = list(entry.inbound)
            out.append(a)
        return out


__all__ = ["PipelineStage"]
