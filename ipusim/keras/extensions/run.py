"""What the IPU extension does around a ``fit`` / ``evaluate`` / ``predict``: the IPU's data
checks, the lowered step, the loop settings, and the simulation attached to the result.

:func:`begin_run` is the extension's ``begin_run`` hook (:mod:`ipusim.keras.engine.ipu_hooks`):
the Keras loop calls it first, runs with the :class:`~ipusim.keras.engine.ipu_hooks.LoopSettings`
it returns and passes its result to :meth:`ExtensionRun.finish`. Everything the run decides is
held here, never set on the model for the length of the call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras import callbacks as callbacks_module
from ipusim.keras.engine.ipu_hooks import LoopSettings, RunCall, RunKind, no_step
from ipusim.keras.engine.layer import timing_only
from ipusim.keras.extensions.data import IPUDataPlan, check_data
from ipusim.keras.extensions.simulated_time import FitClock, planned_fit_executions, preview_fit

__all__ = ["ExtensionRun", "begin_run"]

#: The kind of step program each run lowers.
_STEP_KIND = {"fit": "train", "evaluate": "test", "predict": "predict"}


@dataclass
class ExtensionRun:
    """One fit / evaluate / predict of an extended model (an
    :class:`~ipusim.keras.engine.ipu_hooks.IPURun`).

    Attributes:
        model: the model.
        kind: "fit", "evaluate" or "predict".
        call: the call's arguments.
        x, y: the data the Keras loop runs on.
        config, system: the IPUConfig (or None) and the system simulated.
        lowered: the lowered step (None when timing is off).
        executions: the planned (epoch, steps) executions.
        preview: the simulated clock's preview of the executions (None without a clock).
        loop: how the Keras loop runs its steps.
        numerics: whether the Keras loop runs (False in timing-only mode).
    """

    model: Any
    kind: RunKind
    call: RunCall
    x: Any
    y: Any
    config: Any
    system: Any
    lowered: Any
    executions: list[tuple[int, int]]
    preview: FitClock | None = None
    loop: LoopSettings = field(default_factory=LoopSettings)
    numerics: bool = True

    def finish(self, result: Any) -> Any:
        """Attach the simulation to what the Keras loop returned (fit: the History)."""
        if self.kind == "fit":
            return self._finish_fit(result)
        if not self.numerics and self.kind == "evaluate":  # NaN for the loss and each metric
            values = [float("nan")] * max(1, len(self.model.metrics_names))
            result = values[0] if len(values) == 1 else values
        if self.lowered is not None:
            verbose = self.call.verbose
            if self.kind == "predict" and verbose == "auto":
                verbose = 0  # predict is quiet unless asked
            self._simulate(
                self.executions, progress=True if not self.numerics and verbose != 0 else None
            )
        return result  # timing-only predict computes no outputs: None

    def _finish_fit(self, history: Any) -> Any:
        if not self.numerics:
            history = callbacks_module.History()
            history.set_model(self.model)
            history.on_train_begin()
            self.model.history = history
            history.epoch = list(range(self.call.initial_epoch, self.call.epochs))
            # No Keras progress bar runs without numerics: the simulation shows its own, so a
            # long timing-only run (BERT-Large) is never silent.
            verbose = self.call.verbose
            report, seconds = self.model._simulate(
                self.lowered, self.executions, self.config, self.system, verbose != 0
            )
            _attach(history, report, seconds)
        elif self.lowered is not None:
            _attach(history, *self._simulate(self.model._execution_log))
        return history

    def _simulate(
        self, executions: list[tuple[int, int]], progress: bool | None = None
    ) -> tuple[Any, list[float]]:
        """The report of ``executions`` and its epoch seconds: the preview's when they are the
        previewed ones, else a new simulation."""
        model, preview = self.model, self.preview
        if preview is not None:
            preview.settle()
        if preview is None or not preview.ran_as_planned(executions):
            simulated: tuple[Any, list[float]] = model._simulate(
                self.lowered, executions, self.config, self.system, progress
            )
            return simulated
        from ipusim import session

        session.publish(preview.run.report)
        model.last_simulation = preview.run.report
        model.last_program = self.lowered.program
        return preview.run.report, list(preview.run.epoch_seconds)


#: Called with the model and the call at the start of every ``fit``, before anything runs
#: (``ipusim run --plan`` stops the script there to plan its model).
FIT_OBSERVERS: list[Callable[[Any, RunCall], None]] = []
#: Called with the model, the kind and the data plan of every ``evaluate`` / ``predict`` once its
#: data are checked, before anything runs (``ipusim run --plan --inference`` stops there).
INFERENCE_OBSERVERS: list[Callable[[Any, RunKind, IPUDataPlan], None]] = []


def begin_run(model: Any, kind: RunKind, call: RunCall) -> ExtensionRun:
    """Check a fit / evaluate / predict as the IPU would and plan it (the ``begin_run`` hook).

    Raises:
        IncompatibleStateError: a Keras step method is overridden, or the model is not compiled
            (fit / evaluate).
        InputDataError / ConfigurationError: data the IPU cannot run (see
            :func:`~ipusim.keras.extensions.data.check_data`).
    """
    for observe in FIT_OBSERVERS if kind == "fit" else ():
        observe(model, call)
    model._check_overrides()
    if kind != "predict":
        model._assert_compiled("training/testing")
    x, y = _data_arguments(kind, call.x, call.y, call.batch_size, call.steps)
    config, system = model._ipu_environment()
    if kind == "fit":
        if timing_only() and config is not None and not config.ipusim.timing:
            raise ConfigurationError("timing-only mode needs config.ipusim.timing = True")
        model._check_pipelined_fit(x, call.batch_size)  # pipelined: N micro-batches per update
    plan = _check_data(model, kind, x, call)
    for observe_inference in INFERENCE_OBSERVERS if kind != "fit" else ():
        observe_inference(model, kind, plan)
    model._infeed_source = (x, plan.batch_size)  # what the host feeds (timing)
    if kind == "fit":
        model._set_effective_batch_size(plan.batch_size, model._replication_factor())
    lowered = None
    if config is None or config.ipusim.timing:
        lowered = model._ipu_program(
            _STEP_KIND[kind],
            x,
            y,
            call.sample_weight,
            call.batch_size,
            config,
            system,
            None if kind == "fit" else plan.steps_per_execution,
        )
    run = ExtensionRun(model, kind, call, x, y, config, system, lowered, [])
    run.numerics = not timing_only()
    if kind == "fit":
        _plan_fit_loop(run, plan)
    else:
        _plan_inference_loop(run, plan)
    return run


def _check_data(model: Any, kind: RunKind, x: Any, call: RunCall) -> IPUDataPlan:
    local = model._local_replicas()  # the replicas whose data and numbers this process runs
    fit = kind == "fit"  # evaluate / predict: one batch per step, not pipelined
    return check_data(
        model,
        kind,
        x,
        call.batch_size,
        call.steps,
        model._steps_per_execution,
        model._gradient_accumulation if fit else 1,
        model._is_pipelined() if fit else False,
        local,
    )


def _plan_fit_loop(run: ExtensionRun, plan: IPUDataPlan) -> None:
    run.executions = planned_fit_executions(
        plan.steps_per_epoch, plan.steps_per_execution, run.call.initial_epoch, run.call.epochs
    )
    if not run.numerics:
        return
    model = run.model
    run.preview = preview_fit(run.lowered, run.executions)
    run.loop = LoopSettings(
        steps_per_execution=plan.steps_per_execution,
        replicas=model._local_replicas(),
        norm_group=_norm_group(run.config, model._replication_factor()),
        on_step=no_step if run.preview is None else run.preview.step_done,
    )


def _plan_inference_loop(run: ExtensionRun, plan: IPUDataPlan) -> None:
    run.executions = [(0, plan.steps_per_execution)] * (
        plan.steps_per_epoch // plan.steps_per_execution
    )
    if not run.numerics:
        return
    run.preview = preview_fit(run.lowered, run.executions, run.model._local_replicas())
    run.loop = LoopSettings(
        steps_per_execution=run.model._steps_per_execution,
        on_step=no_step if run.preview is None else run.preview.step_done,
    )


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
