"""Pipelining vocabulary (``ipu.ops.pipelining_ops``) and what lowering needs to pipeline a model.

This module imports nothing from the front ends: the Keras extensions and the compat runtime
import it.

The enums and :class:`PipelineStageOptions` mirror IPU TensorFlow's ``pipelining_ops``.
:class:`PipelineOptions` is what a Keras model's ``set_pipelining_options`` settles on (validated,
defaults filled in); :class:`PipelinePlan` is a traced graph's stage assignment plus those options,
as ``model._pipeline_plan(graph)`` hands it to lowering.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError


class GradientAccumulationReductionMethod(Enum):
    """How accumulated gradients are combined before the weight update.

    SUM adds the N micro-batch gradients; MEAN divides that sum by N once; RUNNING_MEAN keeps a
    running mean as each gradient arrives (same value as MEAN up to rounding, better for fp16).
    """

    SUM = 0
    MEAN = 1
    RUNNING_MEAN = 2

    @classmethod
    def parse(cls, value: Any) -> GradientAccumulationReductionMethod:
        """An enum member from a member, its name (any case) or its int value."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        if isinstance(value, int) and not isinstance(value, bool):
            for member in cls:
                if member.value == value:
                    return member
        raise ConfigurationError(
            f"gradient_accumulation_reduction_method: cannot interpret {value!r}; use one of "
            f"{', '.join(cls.__members__)} (GradientAccumulationReductionMethod or its name)"
        )

    @property
    def kernel_name(self) -> str:
        return self.name.lower()


class PipelineSchedule(IntEnum):
    """How the forward and backward stages of a pipeline are ordered on the IPUs.

    Grouped: every IPU runs its forward stages, then its backward stages, for all micro-batches in
    flight (fast, stashes the most activations). Interleaved: forward and backward stages alternate
    (less memory, slower). Sequential: one stage at a time, no overlap (for debugging).
    """

    Grouped = 0
    Interleaved = 1
    Sequential = 2


class RecomputationMode(Enum):
    """How activations are recomputed in a pipeline when ``IPUConfig.allow_recompute`` is on.

    As IPU TensorFlow (graphcore/tensorflow ``pipelining_ops.py`` and ``pipeline_util.cc``
    ``GetPipelineRecomputationMode``):

    - ``RecomputeThenBackpropagate``: each stage but the last re-runs its whole forward pass
      before its backward pass (the recomputation shares the forward pass's code); only the
      stage's inputs are stashed; recomputation checkpoints have no effect. Grouped and
      Interleaved schedules.
    - ``RecomputeAndBackpropagateInterleaved``: the recomputed operations are cloned into the
      backward pass and scheduled as the backward pass needs them (lower peak liveness, no code
      sharing); the stage's inputs and its recomputation checkpoints are stashed; the last stage
      recomputes only what lies before its final checkpoints. Grouped and Sequential schedules.
    - ``Auto``: RecomputeThenBackpropagate for Grouped and Interleaved, RecomputeAndBackpropagate
      Interleaved for Sequential.

    :func:`ipusim.lowering.recompute.resolve_recomputation` applies this to a schedule.
    """

    Auto = 0
    RecomputeThenBackpropagate = 1
    RecomputeAndBackpropagateInterleaved = 2


class PipelineStageOptions:
    """Poplar options for the convolutions, matmuls and slices of one pipeline stage.

    Args:
        convolution_options: dict of Poplar convolution options, or None for none.
        matmul_options: dict of Poplar matmul options, or None for none.
        slice_options: dict of Poplar slice options, or None for none.

    Raises:
        TypeError: an argument is neither a dict nor None.
    """

    def __init__(
        self,
        convolution_options: dict[str, Any] | None = None,
        matmul_options: dict[str, Any] | None = None,
        slice_options: dict[str, Any] | None = None,
    ) -> None:
        for name, value in (
            ("convolution_options", convolution_options),
            ("matmul_options", matmul_options),
            ("slice_options", slice_options),
        ):
            if value is not None and not isinstance(value, dict):
                raise InvalidTypeError(
                    f"PipelineStageOptions.{name} must be a dictionary of Poplar options "
                    f"(or None), received {value!r} of type {type(value).__name__}."
                )
        self.convolution_options: dict[str, Any] = dict(convolution_options or {})
        self.matmul_options: dict[str, Any] = dict(matmul_options or {})
        self.slice_options: dict[str, Any] = dict(slice_options or {})

    def __repr__(self) -> str:
        return (
            f"PipelineStageOptions(convolution_options={self.convolution_options!r}, "
            f"matmul_options={self.matmul_options!r}, slice_options={self.slice_options!r})"
        )


#: ``pipeline()`` arguments that hold one PipelineStageOptions per stage.
STAGE_OPTION_LISTS = (
    "forward_propagation_stages_poplar_options",
    "backward_propagation_stages_poplar_options",
)

#: ``pipeline()`` arguments that take None (let the backend decide) or a bool.
_OPTIONAL_BOOLS = (
    "offload_weight_update_variables",
    "offload_activations",
    "offload_gradient_accumulation_buffers",
    "replicated_weight_sharding",
    "offload_weights",
)


@dataclass(frozen=True)
class PipelineOptions:
    """The pipelining options of a Keras model, validated, with ``pipeline()``'s defaults.

    Attributes:
        gradient_accumulation_steps_per_replica: micro-batches per weight update (the pipeline
            depth when training); None when not set (training a pipelined model then fails).
        device_mapping: the IPU index of each stage, or None for stage i on IPU i.
        accumulate_outfeed: sum the outfed metrics over the run and outfeed them once.
        reduction_method: how the accumulated gradients are combined (MEAN when
            ``experimental_normalize_gradients`` was set: the sum of gradients/N).
        experimental_normalize_gradients: the flag as given (kept for ``get_config``).
        schedule: the pipeline schedule (default Grouped).
        recomputation_mode: the recomputation mode (default Auto).
        offload_weight_update_variables: keep weight-update-only variables (optimizer state) in
            Streaming Memory; None lets the backend decide.
        offload_activations: stash activations in Streaming Memory; None means automatic.
        offload_gradient_accumulation_buffers: keep the accumulators in Streaming Memory.
        replicated_optimizer_state_sharding: partition offloaded optimizer state over replicas.
        replicated_weight_sharding: partition the weights over replicas (all-gathered on use).
        offload_weights: keep sharded weights in Streaming Memory (defaults to
            ``replicated_weight_sharding``).
        kwargs: the ``pipelining_kwargs`` exactly as given.
    """

    gradient_accumulation_steps_per_replica: int | None = None
    device_mapping: tuple[int, ...] | None = None
    accumulate_outfeed: bool = False
    reduction_method: GradientAccumulationReductionMethod = GradientAccumulationReductionMethod.SUM
    experimental_normalize_gradients: bool = False
    schedule: PipelineSchedule = PipelineSchedule.Grouped
    recomputation_mode: RecomputationMode = RecomputationMode.Auto
    offload_weight_update_variables: bool | None = None
    offload_activations: bool | None = None
    offload_gradient_accumulation_buffers: bool | None = None
    replicated_optimizer_state_sharding: bool = False
    replicated_weight_sharding: bool | None = None
    offload_weights: bool | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def from_kwargs(
        cls,
        gradient_accumulation_steps_per_replica: int | None = None,
        device_mapping: tuple[int, ...] | None = None,
        accumulate_outfeed: bool = False,
        reduction_method: Any = GradientAccumulationReductionMethod.SUM,
        experimental_normalize_gradients: bool = False,
        stages: int | None = None,
        **kwargs: Any,
    ) -> PipelineOptions:
        """Validate ``pipeline()`` keyword arguments as ``pipelining_ops.pipeline`` does and
        build the options: the one check both front ends use (``set_pipelining_options`` and
        the compat ``pipeline()``).

        Args:
            gradient_accumulation_steps_per_replica: micro-batches per weight update (checked
                by the caller).
            device_mapping: the IPU of each stage (checked by the caller).
            accumulate_outfeed: accumulate the outfed values over a run.
            reduction_method: a GradientAccumulationReductionMethod, its name or value.
            experimental_normalize_gradients: scale gradients by 1/N (then MEAN).
            stages: the number of stages, when known: per-stage option lists must match it.
            **kwargs: the other ``pipeline()`` arguments (``pipeline_schedule``,
                ``recomputation_mode``, offloading flags, per-stage Poplar options, ...).

        Raises:
            TypeError: a schedule, recomputation mode, flag or stage-options argument of the
                wrong type.
            ConfigurationError: an unknown reduction method, or per-stage options of the wrong
                length (a ValueError).
            UnsupportedError: ``continuous_weight_updates=True`` (a NotImplementedError).
        """
        schedule = _enum_member(
            "pipeline_schedule",
            kwargs.get("pipeline_schedule"),
            PipelineSchedule,
            PipelineSchedule.Grouped,
            "PipelineSchedule.Grouped, .Interleaved or .Sequential",
        )
        mode = _enum_member(
            "recomputation_mode",
            kwargs.get("recomputation_mode"),
            RecomputationMode,
            RecomputationMode.Auto,
            "e.g. RecomputationMode.Auto",
        )
        _check_pipeline_kwargs(kwargs, stages)
        method = _reduction_method(reduction_method, experimental_normalize_gradients)
        weight_sharding = kwargs.get("replicated_weight_sharding")
        offload_weights = kwargs.get("offload_weights")
        return cls(
            gradient_accumulation_steps_per_replica=gradient_accumulation_steps_per_replica,
            device_mapping=device_mapping,
            accumulate_outfeed=bool(accumulate_outfeed),
            reduction_method=method,
            experimental_normalize_gradients=bool(experimental_normalize_gradients),
            schedule=schedule,
            recomputation_mode=mode,
            offload_weight_update_variables=kwargs.get("offload_weight_update_variables"),
            offload_activations=kwargs.get("offload_activations"),
            offload_gradient_accumulation_buffers=kwargs.get(
                "offload_gradient_accumulation_buffers"
            ),
            replicated_optimizer_state_sharding=bool(
                kwargs.get("replicated_optimizer_state_sharding") or False
            ),
            replicated_weight_sharding=weight_sharding,
            offload_weights=weight_sharding if offload_weights is None else offload_weights,
            kwargs=dict(kwargs),
        )


def _check_pipeline_kwargs(kwargs: Mapping[str, Any], stages: int | None) -> None:
    """The type checks of ``pipeline()``'s other arguments (see :meth:`PipelineOptions.from_kwargs`).

    Raises:
        UnsupportedError: ``continuous_weight_updates=True``.
        InvalidTypeError: a flag, per-stage options list or name of the wrong type.
        ConfigurationError: per-stage option lists of the wrong length.
    """
    if kwargs.get("continuous_weight_updates"):
        raise UnsupportedError(
            "continuous_weight_updates=True: Continuous weight updates are not supported (IPU "
            "TensorFlow does not implement them either); remove the argument."
        )
    for name in (*_OPTIONAL_BOOLS, "replicated_optimizer_state_sharding"):
        value = kwargs.get(name)
        if value is not None and not isinstance(value, bool):
            raise InvalidTypeError(f"{name} must be True, False or None, received {value!r}.")
    for name in STAGE_OPTION_LISTS:
        value = kwargs.get(name)
        if value is None:
            continue
        if not isinstance(value, list | tuple):
            raise InvalidTypeError(
                f"{name} must be a list or a tuple of PipelineStageOptions (one per pipeline "
                f"stage), received {type(value).__name__}."
            )
        bad = [v for v in value if not isinstance(v, PipelineStageOptions)]
        if bad:
            raise InvalidTypeError(
                f"Expected all elements of {name} to be PipelineStageOptions, received "
                f"{bad[0]!r} of type {type(bad[0]).__name__}."
            )
    if stages is not None:
        check_stage_option_lengths(kwargs, stages)
    update = kwargs.get("weight_update_poplar_options")
    if update is not None and not isinstance(update, PipelineStageOptions):
        raise InvalidTypeError(
            f"weight_update_poplar_options must be a PipelineStageOptions, received {update!r}."
        )
    label = kwargs.get("name")
    if label is not None and not isinstance(label, str):
        raise InvalidTypeError(f"name must be a string, received {label!r}.")


def _reduction_method(
    reduction_method: Any, normalize: bool
) -> GradientAccumulationReductionMethod:
    """The accumulation's reduction method (``normalize``: experimental_normalize_gradients).

    Raises:
        ConfigurationError: not a GradientAccumulationReductionMethod, its name or value.
    """
    try:
        method = GradientAccumulationReductionMethod.parse(reduction_method)
    except ValueError:
        raise ConfigurationError(
            f"reduction_method {reduction_method!r} is not a GradientAccumulationReductionMethod: "
            "use SUM, MEAN or RUNNING_MEAN (a member or its name)."
        ) from None
    if normalize:
        # IPU TensorFlow forces SUM and scales each gradient by 1/N: that is MEAN.
        method = GradientAccumulationReductionMethod.MEAN
    return method


def check_stage_option_lengths(kwargs: Mapping[str, Any], stages: int) -> None:
    """Each per-stage option list of ``kwargs`` holds one PipelineStageOptions per stage.

    Raises:
        ConfigurationError: a list of another length (a ValueError).
    """
    for name in STAGE_OPTION_LISTS:
        value = kwargs.get(name)
        if value is not None and len(value) != stages:
            raise ConfigurationError(
                f"{name} must be a list or a tuple of PipelineStageOptions of length {stages} "
                f"(one per pipeline stage), but holds {len(value)}."
            )


def _enum_member(name: str, value: Any, enum: type, default: Any, examples: str) -> Any:
    if value is None:
        return default
    if not isinstance(value, enum):
        raise InvalidTypeError(
            f"{name} {value!r} is not a member of the {enum.__name__} enumeration; use {examples}."
        )
    return value


@dataclass(frozen=True)
class PipelinePlan:
    """How one traced graph of a pipelined model is split into stages.

    Attributes:
        num_stages: the number of pipeline stages (at least 2).
        device_mapping: the IPU index of each stage (default stage i on IPU i).
        invocation_stage: index in ``graph.invocations`` of every top-level layer call (parent
            None) -> its stage. Layer calls nested inside another call run in their parent's stage.
        options: the model's pipelining options.
    """

    num_stages: int
    device_mapping: tuple[int, ...] = ()
    invocation_stage: dict[int, int] = field(default_factory=dict, hash=False)
    options: PipelineOptions = field(default_factory=PipelineOptions)

    def __post_init__(self) -> None:
        if self.num_stages < 1:
            raise ConfigurationError(f"num_stages must be >= 1, received {self.num_stages}")
        if not self.device_mapping:
            object.__setattr__(self, "device_mapping", tuple(range(self.num_stages)))
        if len(self.device_mapping) != self.num_stages:
            raise ConfigurationError(
                f"device_mapping {list(self.device_mapping)} has {len(self.device_mapping)} "
                f"entries but the pipeline has {self.num_stages} stages; give one IPU per stage."
            )

    @property
    def num_ipus(self) -> int:
        """The shard count: ``max(device_mapping) + 1`` (see :mod:`ipusim.lowering.shards`)."""
        from ipusim.lowering.shards import shard_count

        return shard_count(self.device_mapping)

    def stages_on_ipu(self, ipu: int) -> tuple[int, ...]:
        """The stages mapped to IPU ``ipu``, in stage order."""
        return tuple(s for s, d in enumerate(self.device_mapping) if d == ipu)


__all__ = [
    "GradientAccumulationReductionMethod",
    "PipelineOptions",
    "PipelinePlan",
    "PipelineSchedule",
    "PipelineStageOptions",
    "RecomputationMode",
]
