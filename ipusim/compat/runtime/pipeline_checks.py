"""The argument checks of ``pipelining_ops.pipeline`` and ``OptimizerFunctionOutput``.

Each check raises for the same condition as IPU TensorFlow 2.5 (reference §4), in ipusim's own
words: the argument, the value received, what was expected and the fix.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ipusim.compat.runtime.dispatch import is_int
from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError
from ipusim.graph.graph import Symbol
from ipusim.keras.optimizers import Optimizer
from ipusim.pipelining import (
    GradientAccumulationReductionMethod,
    PipelineOptions,
    PipelineSchedule,
    RecomputationMode,
    check_stage_option_lengths,
)
from ipusim.session import pipeline_depth_multiple

_MAX_INT32 = 2**31 - 1


def _extra_arguments(name: str, kind: type, v1_only: bool = False) -> property:
    """An ``OptimizerFunctionOutput`` property holding a tuple or a dict of extra arguments
    (None reads as empty); ``v1_only`` refuses a value with a Keras (OptimizerV2) optimizer."""
    noun = "a tuple" if kind is tuple else "a dict"

    def read(self: OptimizerFunctionOutput) -> Any:
        return getattr(self, f"_{name}")

    def write(self: OptimizerFunctionOutput, value: Any) -> None:
        if value is not None and not isinstance(value, kind):
            raise InvalidTypeError(
                f"OptimizerFunctionOutput.{name} must be {noun}, received {type(value).__name__}"
            )
        if v1_only:
            self._v1_only(name, value)
        setattr(self, f"_{name}", value or kind())

    return property(read, write)


class OptimizerFunctionOutput:
    """What a pipeline's ``optimizer_function`` returns: the optimizer and the loss to minimise.

    Args:
        opt: a Keras optimizer (TensorFlow's OptimizerV2 family) or an ``ipu.optimizers``
            wrapper (the TF1 family).
        loss: the loss, a tensor computed from the last stage's outputs.
        compute_gradients_args / compute_gradients_kwargs: extra arguments of the wrapper's
            ``compute_gradients`` (a tuple / a dict; not for Keras optimizers).
        apply_gradients_args / apply_gradients_kwargs: a tuple / a dict, accepted.
        variables: the variables to train (Keras optimizers; default for wrappers: every
            trainable variable the pipeline reads).
        tape: a ``GradientTape`` (Keras optimizers), instead of ``variables``.

    Raises:
        TypeError / ValueError: for the conditions of reference §4.
    """

    def __init__(
        self,
        opt: Any,
        loss: Any,
        compute_gradients_args: Any = None,
        compute_gradients_kwargs: Any = None,
        apply_gradients_args: Any = None,
        apply_gradients_kwargs: Any = None,
        variables: Any = None,
        tape: Any = None,
    ) -> None:
        self.opt = opt
        self.loss = loss
        self.compute_gradients_args = compute_gradients_args
        self.compute_gradients_kwargs = compute_gradients_kwargs
        self.apply_gradients_args = apply_gradients_args
        self.apply_gradients_kwargs = apply_gradients_kwargs
        self.variables = variables
        self.tape = tape

    @property
    def is_v2(self) -> bool:
        """Whether ``opt`` is a Keras optimizer (TensorFlow's OptimizerV2); the TF1 optimizers
        (``tf.compat.v1.train``), Keras optimizers inside ipusim, count as TF1 ones."""
        return isinstance(self._opt, Optimizer) and not getattr(self._opt, "is_tf1", False)

    @property
    def opt(self) -> Any:
        return self._opt

    @opt.setter
    def opt(self, value: Any) -> None:
        from ipusim.compat.runtime.optimizers import IpuOptimizer

        if not isinstance(value, Optimizer | IpuOptimizer):
            raise InvalidTypeError(
                "OptimizerFunctionOutput.opt must be a TensorFlow Optimizer or Keras OptimizerV2 "
                f"object (e.g. keras.optimizers.SGD(0.01)), received {type(value).__name__}"
            )
        self._opt = value

    @property
    def loss(self) -> Any:
        return self._loss

    @loss.setter
    def loss(self, value: Any) -> None:
        if not isinstance(value, Symbol):
            raise InvalidTypeError(
                "OptimizerFunctionOutput.loss must be a TensorFlow Tensor object: the loss "
                f"computed from the last stage's outputs, received {type(value).__name__}"
            )
        self._loss = value

    def _v1_only(self, name: str, value: Any) -> None:
        if value is not None and self.is_v2:
            raise ConfigurationError(
                f"OptimizerFunctionOutput.{name} may not be used with OptimizerV2 instances "
                f"(Keras optimizers such as {type(self._opt).__name__}); remove it."
            )

    def _v2_only(self, name: str, other: str) -> None:
        """Refuse ``name`` (``variables`` / ``tape``) with a TF1 optimizer or beside ``other``."""
        if not self.is_v2:
            raise ConfigurationError(
                f"OptimizerFunctionOutput.{name} can only be used with OptimizerV2 (Keras) "
                f"optimizers, not {type(self._opt).__name__}; remove it."
            )
        if getattr(self, f"_{other}", None) is not None:
            raise ConfigurationError(
                "OptimizerFunctionOutput: pass either `variables` or `tape`, not both."
            )

    compute_gradients_args = _extra_arguments("compute_gradients_args", tuple, v1_only=True)
    compute_gradients_kwargs = _extra_arguments("compute_gradients_kwargs", dict, v1_only=True)
    apply_gradients_args = _extra_arguments("apply_gradients_args", tuple)
    apply_gradients_kwargs = _extra_arguments("apply_gradients_kwargs", dict)

    @property
    def variables(self) -> list[Any] | None:
        return self._variables

    @variables.setter
    def variables(self, value: Any) -> None:
        if value is not None:
            if not isinstance(value, list | tuple):
                raise InvalidTypeError(
                    f"OptimizerFunctionOutput.variables must be a list or a tuple of variables, "
                    f"received {type(value).__name__}"
                )
            self._v2_only("variables", "tape")
        self._variables = None if value is None else list(value)

    @property
    def tape(self) -> Any:
        return self._tape

    @tape.setter
    def tape(self, value: Any) -> None:
        from ipusim.compat.runtime.tape import GradientTape

        if value is not None:
            if not isinstance(value, GradientTape):
                raise InvalidTypeError(
                    f"OptimizerFunctionOutput.tape must be a GradientTape, received "
                    f"{type(value).__name__}"
                )
            self._v2_only("tape", "variables")
        self._tape = value


@dataclass(frozen=True)
class PipelineArgs:
    """``pipeline()``'s arguments after validation and defaults.

    Attributes:
        slots: per pipeline stage, the stage function or the list of its concurrent functions.
        groups: per pipeline stage, the physical stage indices (one, or one per concurrent
            function); physical stages are numbered in order.
        device_mapping: IPU of every physical stage.
        gac: gradient accumulation count (micro-batches per pipeline run).
        repeat_count: pipeline runs per call.
        schedule / recomputation_mode / reduction_method: the enums.
        training: whether an optimizer function is given.
        options: the validated options ``pipeline()`` shares with Keras' pipelining options
            (offloading, sharding, per-stage Poplar options).
    """

    slots: tuple[Any, ...]
    groups: tuple[tuple[int, ...], ...]
    device_mapping: tuple[int, ...]
    gac: int
    repeat_count: int
    schedule: PipelineSchedule
    recomputation_mode: RecomputationMode
    reduction_method: GradientAccumulationReductionMethod
    training: bool
    options: PipelineOptions

    @property
    def concurrent(self) -> bool:
        return any(len(g) > 1 for g in self.groups)


def _positive(name: str, value: Any) -> int:
    if not is_int(value) or value < 1:
        raise ConfigurationError(f"{name} must be a positive int, received {value!r}")
    return int(value)


def _check_gac(gac: Any) -> int:
    if gac is None:
        raise ConfigurationError(
            "gradient_accumulation_count must be specified: pass the number of micro-batches "
            "per pipeline run (e.g. gradient_accumulation_count=16)."
        )
    if not is_int(gac):
        raise InvalidTypeError(f"gradient_accumulation_count must be an int, received {gac!r}")
    if gac < 0:
        raise ConfigurationError(f"gradient_accumulation_count must be >= 0, received {gac}")
    if gac >= _MAX_INT32:
        raise ConfigurationError(f"gradient_accumulation_count must be < max int32, received {gac}")
    return int(gac)


def _check_feeds(infeed_queue: Any, outfeed_queue: Any) -> None:
    from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedQueue

    for name, queue, kind in (("infeed_queue", infeed_queue, IPUInfeedQueue),
                              ("outfeed_queue", outfeed_queue, IPUOutfeedQueue)):  # fmt: skip
        if queue is not None and not isinstance(queue, kind):
            raise InvalidTypeError(
                f"{name} is not an instance of ipu_{name}.{kind.__name__} (received "
                f"{type(queue).__name__})"
            )


def _check_slots(computational_stages: Any) -> tuple[Any, ...]:
    if not isinstance(computational_stages, list | tuple):
        raise InvalidTypeError(
            "computational_stages argument needs to be a list or a tuple of stage functions, "
            f"received {type(computational_stages).__name__}"
        )
    slots = tuple(computational_stages)
    if len(slots) < 2:
        raise ConfigurationError(
            f"Pipeline requires at least two computational stages, received {len(slots)}."
        )
    for slot in slots:
        functions = slot if isinstance(slot, list | tuple) else [slot]
        if not functions or not all(callable(f) for f in functions):
            raise InvalidTypeError(
                f"every computational stage must be a function (or a list of concurrent "
                f"functions), received {slot!r}"
            )
    return slots


def _map_devices(
    device_mapping: Any, slots: tuple[Any, ...], bsi: int
) -> tuple[Any, list[tuple[int, ...]], list[int]]:
    """The mapping (default filled in), each slot's indices into the flat list, the flat IPUs."""
    if device_mapping is None:
        device_mapping = [0] * len(slots) if bsi > 1 else list(range(len(slots)))
        device_mapping = [
            [m] * len(s) if isinstance(s, list | tuple) else m
            for m, s in zip(device_mapping, slots)
        ]
    if not isinstance(device_mapping, list | tuple):
        raise InvalidTypeError(
            "device_mapping argument needs to be a list or a tuple of IPU indices, received "
            f"{type(device_mapping).__name__}"
        )
    if len(device_mapping) != len(slots):
        raise ConfigurationError(
            f"Each stage must be mapped to an IPU: {len(device_mapping)} mappings != "
            f"{len(slots)} stages"
        )
    groups: list[tuple[int, ...]] = []
    flat: list[int] = []
    for index, (slot, entry) in enumerate(zip(slots, device_mapping)):
        concurrent = isinstance(slot, list | tuple)
        entries = list(entry) if isinstance(entry, list | tuple) else [entry]
        if concurrent != isinstance(entry, list | tuple) or len(entries) != (
            len(slot) if concurrent else 1
        ):
            raise ConfigurationError(
                f"Each stage must be mapped to an IPU: stage {index} is "
                f"{'a list of ' + str(len(slot)) + ' concurrent stages' if concurrent else 'one function'}"
                f" but its device_mapping entry is {entry!r}; give a list of IPUs for concurrent "
                "stages and one IPU otherwise."
            )
        for ipu in entries:
            if not is_int(ipu) or ipu < 0:
                raise ConfigurationError(
                    f"device_mapping entries must be IPU indices >= 0, received {ipu!r}"
                )
        groups.append(tuple(range(len(flat), len(flat) + len(entries))))
        flat += [int(i) for i in entries]
    return device_mapping, groups, flat


def _check_outfeed_options(options: dict[str, Any], outfeed_queue: Any, training: bool) -> None:
    from ipusim.compat.runtime.feeds import IPUOutfeedMode

    mask, outfeed_loss = options.get("outfeed_mask"), options.get("outfeed_loss")
    if mask is not None and not training:
        raise ConfigurationError("An optimizer_function must be provided when outfeed_mask is set.")
    if outfeed_loss and not training:
        raise ConfigurationError(
            "An optimizer_function must be provided when outfeed_loss is True."
        )
    if outfeed_loss and mask is not None:
        raise ConfigurationError("Only one of `outfeed_loss` and `outfeed_mask` can be set.")
    if options.get("accumulate_outfeed"):
        if outfeed_queue is None:
            raise ConfigurationError(
                "An outfeed_queue must be provided when accumulate_outfeed is True."
            )
        if outfeed_queue.outfeed_mode is not IPUOutfeedMode.ALL:
            raise ConfigurationError(
                "To accumulate the outfeed, it must be in IPUOutfeedMode ALL (received "
                f"{outfeed_queue.outfeed_mode})."
            )
    if not training:
        for name in ("replicated_optimizer_state_sharding", "offload_weight_update_variables"):
            if options.get(name):
                warnings.warn(
                    f"{name} will have no effect since this pipeline is in inference.",
                    UserWarning,
                    stacklevel=4,
                )


def _check_iterations(gac: int, multiple: int) -> None:
    context_sentence = (
        "This number might be called `gradient_accumulation_count`, "
        "`gradient_accumulation_steps_per_replica` or `steps_per_execution` depending on the "
        "API used."
    )
    if gac % multiple:
        raise ConfigurationError(
            f"The number of iterations of the pipeline must be a multiple of {multiple}, but it "
            f"is {gac}. {context_sentence}"
        )
    if gac < multiple:
        raise ConfigurationError(
            f"The number of iterations of the pipeline must be at least {multiple}, but it is "
            f"{gac}. {context_sentence}"
        )


def check_pipeline_args(
    computational_stages: Any,
    gradient_accumulation_count: Any,
    repeat_count: Any,
    batch_serialization_iterations: Any,
    infeed_queue: Any,
    outfeed_queue: Any,
    optimizer_function: Any,
    device_mapping: Any,
    pipeline_schedule: Any,
    recomputation_mode: Any,
    options: dict[str, Any],
) -> PipelineArgs:
    """Validate ``pipeline()``'s arguments (conditions of reference §4) and fill in defaults."""
    # The checks pipeline() shares with Keras' set_pipelining_options: one implementation.
    shared = PipelineOptions.from_kwargs(
        pipeline_schedule=pipeline_schedule, recomputation_mode=recomputation_mode, **options
    )
    if not isinstance(computational_stages, list | tuple):  # TF checks the type first
        _check_slots(computational_stages)
    gac = _check_gac(gradient_accumulation_count)
    method = shared.reduction_method
    bsi = _positive("batch_serialization_iterations", batch_serialization_iterations)
    if bsi != 1 and method is not GradientAccumulationReductionMethod.SUM:
        raise ConfigurationError(
            "batch_serialization_iterations != 1 is only supported when reduction_method is "
            f"GradientAccumulationReductionMethod.SUM (received {method.name})."
        )
    repeats = _positive("repeat_count", repeat_count)
    schedule = shared.schedule
    if pipeline_schedule is None and bsi > 1:
        schedule = PipelineSchedule.Sequential
    if bsi > 1 and schedule is not PipelineSchedule.Sequential:
        raise UnsupportedError(
            "Batch serialization is only supported with the `Sequential` schedule: set "
            "pipeline_schedule=PipelineSchedule.Sequential."
        )
    _check_feeds(infeed_queue, outfeed_queue)
    slots = _check_slots(computational_stages)
    device_mapping, groups, flat = _map_devices(device_mapping, slots, bsi)
    training = optimizer_function is not None
    if training and schedule is PipelineSchedule.Interleaved and len(set(flat)) < len(flat):
        raise UnsupportedError(
            "The pipelining schedule 'Interleaved' does not currently support multiple pipeline "
            f"stages on the same device for training graphs (device_mapping {list(device_mapping)}). "
            "Please use a different pipeline schedule."
        )
    if bsi > 1 and len(set(flat)) != 1:
        raise UnsupportedError(
            "When using batch serialization, all the pipeline stages need to be mapped to a "
            f"single IPU (device_mapping {list(device_mapping)})."
        )
    check_stage_option_lengths(options, len(slots))
    _check_outfeed_options(options, outfeed_queue, training)
    multiple = pipeline_depth_multiple(schedule.name.lower(), len(slots), training, len(set(flat)))
    _check_iterations(gac, multiple)
    return PipelineArgs(
        slots=slots,
        groups=tuple(groups),
        device_mapping=tuple(flat),
        gac=gac,
        repeat_count=repeats,
        schedule=schedule,
        recomputation_mode=shared.recomputation_mode,
        reduction_method=method,
        training=training,
        options=shared,
    )
