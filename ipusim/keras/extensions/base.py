"""The IPU extension methods Keras models gain inside an ``IPUStrategy`` scope.

Mirrors IPU TensorFlow's ``KerasExtensionBase``: configuration setters, the replication rule,
and lowering and simulating a step (``model.last_simulation``). What ``fit`` / ``evaluate`` /
``predict`` do around the Keras loop is :mod:`ipusim.keras.extensions.run`.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError
from ipusim.keras.extensions.data import first_batch
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod

if TYPE_CHECKING:
    from ipusim.graph.ops.update import GradientAccumulator
    from ipusim.keras.engine.step import StepProgram
    from ipusim.keras.extensions.pipeline_structure import StageEntry

log = logging.getLogger("ipusim")

_INFEED_AUTOMATIC = ("dataset", "infeed_spec", "element_spec")
_INFEED_INCOMPATIBLE = ("_internal_id",)
_INFEED_ALLOWED = ("prefetch_depth", "device_ordinal", "optimise_latency")
_OUTFEED_INCOMPATIBLE = ("outfeed_mode", "device_ordinal")
_OUTFEED_ALLOWED = ("buffer_depth", "optimise_latency")


def _positive_steps(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"gradient_accumulation_steps_per_replica must be a positive integer, "
            f"received {value!r}"
        )
    return value


class _ExtensionType(type):
    """Makes ``isinstance(model, SequentialExtension)`` hold for a model whose extension has
    those methods (the model's own class never changes, see :mod:`ipusim.keras.extensions`)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        extension = getattr(instance, "__dict__", {}).get("_ipu_extension")
        methods = getattr(extension, "methods", None)
        if isinstance(methods, type) and issubclass(methods, cls):
            return True
        return super().__instancecheck__(instance)


class KerasExtensionBase(metaclass=_ExtensionType):
    """Methods shared by the Sequential, Functional and subclassed-model extensions.

    They are written against the model (``self`` is the extended Keras model): the model finds
    them through its extension, its class never changes.
    """

    if TYPE_CHECKING:  # the model's own (TrainingMixin's), as ``self`` is the extended model
        name: str
        _programs: dict[Any, StepProgram]
        _gradient_accumulation: int
        _accumulation_method: str
        _accumulators: GradientAccumulator | None
        _per_step_callbacks: bool

        def _prepare(
            self, x: Any, y: Any, sample_weight: Any
        ) -> tuple[list[Any], Any, Any, Any]: ...
        def _program(self, kind: str, x_spec: Any, y_spec: Any, sw_spec: Any) -> StepProgram: ...

        # the pipelining methods every extension mixes in (pipelining._PipeliningBase and its
        # per-kind subclasses)
        def _is_pipelined(self) -> bool: ...
        def _current_stages(self) -> tuple[list[StageEntry], list[int]] | None: ...
        def _num_stages(self, entries: list[StageEntry], stages: list[int]) -> int: ...
        def _device_mapping(self, num_stages: int) -> tuple[int, ...]: ...
        def set_pipelining_options(self, *args: Any, **kwargs: Any) -> None: ...
        def get_pipeline_stage_assignment(self) -> list[Any]: ...
        def set_pipeline_stage_assignment(self, pipeline_stage_assignment: list[Any]) -> None: ...

    # ------------------------------------------------------------------ state
    def _init_extension_state(self) -> None:
        self._infeed_kwargs: dict[str, Any] = {}
        self._outfeed_kwargs: dict[str, Any] = {}
        self._asynchronous_callbacks = False
        self._gradient_accumulation_kwargs: dict[str, Any] = {}
        self.last_simulation: Any = None
        self._infeed_source: tuple[Any, Any] = (None, None)
        self.last_program: Any = None  # the lowered Program of the last simulated run

    # ------------------------------------------------------------------ hooks (ipu_hooks)
    def _ipu_trace_scope(self) -> AbstractContextManager[None]:
        """Entered around every trace of the model (subclassed models mark it, see
        :class:`~ipusim.keras.extensions.stage_assignment.ModelPipelining`)."""
        return nullcontext()

    def _ipu_traced(self, trace: Any, building: bool) -> None:
        """A trace finished (subclassed models record their pipeline structure)."""

    def _ipu_layers_changed(self) -> None:
        """A Sequential model's layers changed (its stage assignment becomes stale)."""

    def _reset_ipu_functions(self) -> None:
        """Setters invalidate what was compiled for the IPU (as IPU TensorFlow does)."""
        self._programs.clear()
        self._accumulators = None

    # ------------------------------------------------------------------ setters
    def set_asynchronous_callbacks(self, asynchronous: bool = False) -> None:
        """Call per-batch callbacks every step (by polling the outfeed), not once per execution."""
        if not isinstance(asynchronous, bool):
            raise InvalidTypeError(
                f"set_asynchronous_callbacks: `asynchronous` must be a bool, "
                f"received {asynchronous!r}"
            )
        self._asynchronous_callbacks = asynchronous
        self._per_step_callbacks = asynchronous
        self._reset_ipu_functions()

    def set_gradient_accumulation_options(
        self,
        gradient_accumulation_steps_per_replica: int | None = None,
        experimental_normalize_gradients: bool | None = None,
        gradient_accumulation_reduction_method: Any = GradientAccumulationReductionMethod.SUM,
        **gradient_accumulation_optimizer_kwargs: Any,
    ) -> None:
        """Accumulate gradients over N steps per replica before each weight update.

        Args:
            gradient_accumulation_steps_per_replica: N (a positive int); None keeps 1.
            experimental_normalize_gradients: scale each step's gradient by 1/N (SUM only).
            gradient_accumulation_reduction_method: SUM (default), MEAN or RUNNING_MEAN.
            **gradient_accumulation_optimizer_kwargs: forwarded to the accumulation optimizer.
        """
        steps = (
            1
            if gradient_accumulation_steps_per_replica is None
            else _positive_steps(gradient_accumulation_steps_per_replica)
        )
        method = GradientAccumulationReductionMethod.parse(gradient_accumulation_reduction_method)
        for key, fix in (
            ("opt", "the compiled optimizer is wrapped automatically"),
            ("num_mini_batches", "pass gradient_accumulation_steps_per_replica instead"),
        ):
            if key in gradient_accumulation_optimizer_kwargs:
                raise ConfigurationError(
                    f"set_gradient_accumulation_options: `{key}` cannot be passed "
                    f"in gradient_accumulation_optimizer_kwargs: {fix}."
                )
        if experimental_normalize_gradients:
            if method is not GradientAccumulationReductionMethod.SUM:
                raise ConfigurationError(
                    "experimental_normalize_gradients=True only works with the SUM reduction "
                    f"method, but gradient_accumulation_reduction_method is {method.name}. Use "
                    "MEAN instead of normalising."
                )
            method = GradientAccumulationReductionMethod.MEAN  # SUM of grads/N == MEAN
        self._gradient_accumulation = steps
        self._accumulation_method = method.kernel_name
        self._plain_gradient_accumulation = (steps, method.kernel_name)  # when not pipelined
        self._gradient_accumulation_kwargs = dict(gradient_accumulation_optimizer_kwargs)
        self._reset_ipu_functions()

    def set_infeed_queue_options(self, **kwargs: Any) -> None:
        """Options of the infeed Keras creates, e.g. ``prefetch_depth`` (1 to 255)."""
        for key in kwargs:
            if key in _INFEED_AUTOMATIC:
                raise ConfigurationError(
                    f"set_infeed_queue_options: `{key}` is set by Keras automatically; remove it"
                )
            if key in _INFEED_INCOMPATIBLE or key not in _INFEED_ALLOWED:
                raise ConfigurationError(
                    f"set_infeed_queue_options: `{key}` cannot be used with Keras; "
                    f"valid options are {list(_INFEED_ALLOWED)}"
                )
        depth = kwargs.get("prefetch_depth")
        if depth is not None and (not isinstance(depth, int) or not 1 <= depth <= 255):
            raise ConfigurationError(
                f"prefetch_depth must be an int from 1 to 255, received {depth!r}"
            )
        self._infeed_kwargs = dict(kwargs)
        self._reset_ipu_functions()

    def set_outfeed_queue_options(self, **kwargs: Any) -> None:
        """Options of the outfeed Keras creates, e.g. ``buffer_depth`` (>= 1)."""
        for key in kwargs:
            if key in _OUTFEED_INCOMPATIBLE or key not in _OUTFEED_ALLOWED:
                raise ConfigurationError(
                    f"set_outfeed_queue_options: `{key}` cannot be used with "
                    f"Keras; valid options are {list(_OUTFEED_ALLOWED)}"
                )
        depth = kwargs.get("buffer_depth")
        if depth is not None and (not isinstance(depth, int) or depth < 1):
            raise ConfigurationError(f"buffer_depth must be an int >= 1, received {depth!r}")
        self._outfeed_kwargs = dict(kwargs)
        self._reset_ipu_functions()

    # ------------------------------------------------------------------ running
    def _ipu_environment(self) -> tuple[Any, Any]:
        """The active IPUConfig (or None) and the SystemSpec to simulate."""
        from ipusim import config as config_module
        from ipusim import session

        if config_module.active_system() is None:
            log.info("No IPU system was configured; simulating a single GC200 IPU.")
        return session.environment()

    def _stage_device_mapping(self) -> tuple[int, ...] | None:
        """The IPU of each pipeline stage, or None when the model is not pipelined."""
        if not self._is_pipelined():
            return None
        current = self._current_stages()
        if current is None:
            return None
        entries, stages = current
        return self._device_mapping(self._num_stages(entries, stages))

    def _replication_factor(self) -> int:
        """Replicas = configured IPUs / IPUs per replica, by IPU TensorFlow's rule (the session's
        :func:`~ipusim.session.replication_factor`, the one both front ends use).

        Raises:
            PipelineConfigurationError: the configured IPU count is not a multiple of the IPUs
                one replica occupies.
        """
        from ipusim.config import configured_num_ipus
        from ipusim.session import replication_factor

        return replication_factor(
            configured_num_ipus(),
            self._stage_device_mapping(),
            f"Model {self.name}",
        )

    def _local_replicas(self) -> int:
        """The replicas whose data and numbers this host process runs: all of them, unless the
        process is one instance of ``ipusim run --instances`` (see
        :func:`ipusim.session.local_replicas`)."""
        from ipusim.session import local_replicas

        return local_replicas(self._replication_factor())

    def _check_overrides(self) -> None:
        for name in (
            "train_step",
            "test_step",
            "predict_step",
            "make_train_function",
            "make_test_function",
            "make_predict_function",
        ):
            if any(
                name in vars(cls)
                for cls in type(self).__mro__
                if cls.__module__.split(".")[0] != "ipusim"
            ):
                raise IncompatibleStateError(
                    f"{type(self).__name__} overrides `{name}`, which ipusim does not support "
                    "inside an IPUStrategy. Remove the override, or create the model with "
                    "IPUStrategy(enable_keras_extensions=False)."
                )

    def _ipu_program(
        self,
        kind: str,
        x: Any,
        y: Any,
        sample_weight: Any,
        batch_size: int | None,
        config: Any,
        system: Any,
        steps_per_execution: int | None = None,
    ) -> Any:
        """Trace and lower the step ``kind`` for the data's first batch (checks memory first)."""
        from ipusim.keras.extensions.simulation import lower_step

        x_b, y_b, sw_b = first_batch(x, y, sample_weight, batch_size)
        _, x_spec, y_spec, sw_spec = self._prepare(x_b, y_b, sw_b)
        step = self._program(
            kind,
            x_spec,
            y_spec if kind != "predict" else None,
            sw_spec if kind != "predict" else None,
        )
        return lower_step(
            self, step, config, system, steps_per_execution, self._replication_factor()
        )

    def _simulate(
        self,
        lowered: Any,
        executions: list[tuple[int, int]],
        config: Any,
        system: Any,
        progress: bool | None = None,
    ) -> Any:
        from ipusim.keras.extensions.simulation import simulate_program

        del config, system  # the lowered run already holds them
        report, epoch_seconds = simulate_program(self, lowered, executions, progress)
        self.last_simulation = report
        self.last_program = lowered.program
        return report, epoch_seconds

    def _set_effective_batch_size(self, batch_size: int, replicas: int) -> None:
        """Samples per weight update over every replica, logged as IPU TensorFlow logs it."""
        ga = self._gradient_accumulation
        self.effective_batch_size = batch_size * ga * replicas
        if ga > 1 or replicas > 1:
            log.info(
                "Training is%s%s, your effective batch size is %d.",
                f" distributed across {replicas} replicas" if replicas > 1 else "",
                f" accumulating {ga} batches per optimizer step" if ga > 1 else "",
                self.effective_batch_size,
            )
