"""The IPU extension methods Keras models gain inside an ``IPUStrategy`` scope.

Mirrors IPU TensorFlow's ``KerasExtensionBase``: configuration setters, the IPU's data checks, and
``fit``/``evaluate``/``predict`` that train exactly as plain Keras does and also simulate the
configured IPU system (``model.last_simulation``, ``history.simulation``).
"""

from __future__ import annotations

import logging
from typing import Any

from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError
from ipusim.keras import callbacks as callbacks_module
from ipusim.keras.engine.layer import timing_only
from ipusim.keras.extensions.data import check_data, first_batch
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod

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


class KerasExtensionBase:
    """Methods shared by the Sequential, Functional and subclassed-model extensions."""

    # ------------------------------------------------------------------ state
    def _init_extension_state(self) -> None:
        self._infeed_kwargs: dict[str, Any] = {}
        self._outfeed_kwargs: dict[str, Any] = {}
        self._asynchronous_callbacks = False
        self._gradient_accumulation_kwargs: dict[str, Any] = {}
        self.last_simulation: Any = None
        self._infeed_source: tuple[Any, Any] = (None, None)
        self.last_program: Any = None  # the lowered Program of the last simulated run

    def _reset_ipu_functions(self) -> None:
        """Setters invalidate what was compiled for the IPU (as IPU TensorFlow does)."""
        self._programs.clear()
        self._accumulators = None
        self._accumulated = 0

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
            f"Model {self.name}",  # type: ignore[attr-defined]
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

        report, epoch_seconds = simulate_program(
            self, lowered, executions, config, system, progress
        )
        self.last_simulation = report
        self.last_program = lowered.program
        return report, epoch_seconds

    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        *args: Any,
        steps_per_epoch: int | None = None,
        sample_weight: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._check_overrides()
        self._assert_compiled("training/testing")
        x, y = _data_arguments("fit", x, y, batch_size, steps_per_epoch)
        config, system = self._ipu_environment()
        if timing_only() and config is not None and not config.ipusim.timing:
            raise ConfigurationError("timing-only mode needs config.ipusim.timing = True")
        self._check_pipelined_fit(x, batch_size)  # a pipelined model accumulates N micro-batches
        replicas = self._replication_factor()
        local = self._local_replicas()  # the replicas whose data and numbers this process runs
        plan = check_data(
            self,
            "fit",
            x,
            batch_size,
            steps_per_epoch,
            self._steps_per_execution,
            self._gradient_accumulation,
            self._is_pipelined(),
            local,
        )
        self._infeed_source = (x, plan.batch_size)  # what the host feeds (timing)
        self._set_effective_batch_size(plan.batch_size, replicas)
        timing = config is None or config.ipusim.timing
        lowered = (
            self._ipu_program("train", x, y, sample_weight, batch_size, config, system)
            if timing
            else None
        )
        from ipusim.keras.extensions.simulated_time import planned_fit_executions, preview_fit

        epochs_run = range(kwargs.get("initial_epoch", 0), epochs)
        planned = planned_fit_executions(
            plan.steps_per_epoch, plan.steps_per_execution, epochs_run.start, epochs
        )
        if timing_only():
            verbose = kwargs.get("verbose", args[0] if args else "auto")
            return self._fit_timing_only(lowered, planned, epochs_run, config, system, verbose)
        saved_spe = self._steps_per_execution
        self._steps_per_execution = plan.steps_per_execution
        self._replicas = local
        self._norm_group = _norm_group(config, replicas)
        self._run_clocks["train"] = preview_fit(lowered, planned)
        try:
            history = super().fit(
                x,
                y,
                batch_size,
                epochs,
                *args,
                steps_per_epoch=steps_per_epoch,
                sample_weight=sample_weight,
                **kwargs,
            )
        finally:
            self._steps_per_execution = saved_spe
            self._replicas = 1
            self._norm_group = 1
            fit_clock = self._run_clocks.pop("train", None)
        if lowered is not None:
            _attach(
                history,
                *self._simulate_previewed(lowered, self._execution_log, fit_clock, config, system),
            )
        return history

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

    def _fit_timing_only(
        self,
        lowered: Any,
        executions: list[tuple[int, int]],
        epochs_run: range,
        config: Any,
        system: Any,
        verbose: Any,
    ) -> Any:
        """``fit`` without numerics: the History of the simulated epochs."""
        history = callbacks_module.History()
        history.set_model(self)
        history.on_train_begin()
        self.history = history
        history.epoch = list(epochs_run)
        # No Keras progress bar runs without numerics: the simulation shows its own, so a long
        # timing-only run (BERT-Large) is never silent.
        _attach(history, *self._simulate(lowered, executions, config, system, verbose != 0))
        return history

    @property
    def _run_clocks(self) -> dict[str, Any]:
        """The previewed run of each kind in progress (see :meth:`_step_executed`)."""
        clocks = self.__dict__.get("_ipusim_run_clocks")
        if clocks is None:
            clocks = self.__dict__["_ipusim_run_clocks"] = {}
        return clocks

    def _step_executed(self, kind: str) -> None:
        """A step of a ``kind`` run ran: move the simulated clock (see
        :mod:`ipusim.keras.extensions.simulated_time`)."""
        clock = self._run_clocks.get(kind)
        if clock is not None:
            clock.step_done()

    def _simulate_previewed(
        self,
        lowered: Any,
        executions: list[tuple[int, int]],
        preview: Any,
        config: Any,
        system: Any,
        progress: bool | None = None,
    ) -> Any:
        """The report of ``executions`` and its epoch seconds: the preview's when they are the
        previewed ones, else a new simulation."""
        if preview is None:
            return self._simulate(lowered, executions, config, system, progress)
        preview.settle()
        if not preview.ran_as_planned(executions):
            return self._simulate(lowered, executions, config, system, progress)
        from ipusim import session

        session.publish(preview.run.report)
        self.last_simulation = preview.run.report
        self.last_program = lowered.program
        return preview.run.report, list(preview.run.epoch_seconds)

    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        *args: Any,
        steps: int | None = None,
        sample_weight: Any = None,
        **kwargs: Any,
    ) -> Any:
        self._check_overrides()
        self._assert_compiled("training/testing")
        x, y = _data_arguments("evaluate", x, y, batch_size, steps)
        config, system = self._ipu_environment()
        plan = check_data(
            self,
            "evaluate",
            x,
            batch_size,
            steps,
            self._steps_per_execution,
            replicas=self._local_replicas(),
        )
        self._infeed_source = (x, plan.batch_size)  # what the host feeds (timing)
        timing = config is None or config.ipusim.timing
        lowered = (
            self._ipu_program(
                "test", x, y, sample_weight, batch_size, config, system, plan.steps_per_execution
            )
            if timing
            else None
        )
        from ipusim.keras.extensions.simulated_time import preview_fit

        executions = _executions(plan.steps_per_epoch, plan.steps_per_execution)
        preview = (
            None if timing_only() else preview_fit(lowered, executions, self._local_replicas())
        )
        self._run_clocks["test"] = preview
        try:
            if timing_only():  # no numbers to report: NaN for the loss and every metric
                result = [float("nan")] * max(1, len(self.metrics_names))
                result = result[0] if len(result) == 1 else result
            else:
                result = super().evaluate(
                    x, y, batch_size, *args, steps=steps, sample_weight=sample_weight, **kwargs
                )
        finally:
            self._run_clocks.pop("test", None)
        if lowered is not None:
            verbose = kwargs.get("verbose", args[0] if args else "auto")
            self._simulate_previewed(
                lowered,
                executions,
                preview,
                config,
                system,
                progress=True if timing_only() and verbose != 0 else None,
            )
        return result

    def predict(
        self,
        x: Any,
        batch_size: int | None = None,
        *args: Any,
        steps: int | None = None,
        **kwargs: Any,
    ) -> Any:
        self._check_overrides()
        x, _ = _data_arguments("predict", x, None, batch_size, steps)
        config, system = self._ipu_environment()
        plan = check_data(
            self,
            "predict",
            x,
            batch_size,
            steps,
            self._steps_per_execution,
            replicas=self._local_replicas(),
        )
        self._infeed_source = (x, plan.batch_size)  # what the host feeds (timing)
        timing = config is None or config.ipusim.timing
        lowered = (
            self._ipu_program(
                "predict", x, None, None, batch_size, config, system, plan.steps_per_execution
            )
            if timing
            else None
        )
        from ipusim.keras.extensions.simulated_time import preview_fit

        executions = _executions(plan.steps_per_epoch, plan.steps_per_execution)
        preview = (
            None if timing_only() else preview_fit(lowered, executions, self._local_replicas())
        )
        self._run_clocks["predict"] = preview
        try:  # timing-only runs compute no outputs: predict returns None
            result = (
                None
                if timing_only()
                else super().predict(x, batch_size, *args, steps=steps, **kwargs)
            )
        finally:
            self._run_clocks.pop("predict", None)
        if lowered is not None:
            verbose = kwargs.get("verbose", args[0] if args else 0)
            self._simulate_previewed(
                lowered,
                executions,
                preview,
                config,
                system,
                progress=True if timing_only() and verbose != 0 else None,
            )
        return result


def _data_arguments(what: str, x: Any, y: Any, batch_size: Any, steps: Any) -> tuple[Any, Any]:
    """Check the batch size and step count before anything is traced, and read (nested) lists
    of numbers as arrays, as Keras does.

    Raises:
        InputDataError: a batch size or step count that is not a positive integer.
    """
    from ipusim.data import Dataset
    from ipusim.keras.engine.data_adapter import (
        as_arrays,
        check_batch_size,
        check_steps,
        sequence_dataset,
    )
    from ipusim.keras.utils_data import Sequence

    check_steps(steps, what)
    if isinstance(x, Sequence):  # keras.utils.Sequence: a Dataset of its batches
        x = sequence_dataset(x)
    if not isinstance(x, Dataset):
        check_batch_size(batch_size, what)
    return as_arrays(x), as_arrays(y)


def _executions(steps: int, steps_per_execution: int) -> list[tuple[int, int]]:
    return [(0, steps_per_execution)] * (steps // steps_per_execution)


def _attach(history: Any, report: Any, epoch_seconds: list[float]) -> None:
    """Add the simulated figures to a History."""
    history.simulation = report
    history.simulated_seconds = report.simulated_seconds
    history.samples_per_second = report.throughput_samples_per_s
    history.history["simulated_seconds"] = list(epoch_seconds)


def _norm_group(config: Any, replicas: int) -> int:
    """Distributed batch norm's group of replicas (1 without a config), checked against the
    replication factor."""
    if config is None:
        return 1
    from ipusim.lowering.distribution import check_norm_group

    group = int(config.norms.experimental.distributed_batch_norm_replica_group_size)
    check_norm_group(group, replicas)
    return group
