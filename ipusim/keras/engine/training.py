"""compile / fit / evaluate / predict: the Keras training loop over traced step programs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import (
    ConfigurationError,
    IncompatibleStateError,
    InputDataError,
    InvalidTypeError,
    NonFiniteLossError,
)
from ipusim.graph.execute import ExecContext
from ipusim.graph.ops.update import GradientAccumulator
from ipusim.graph.spec import TensorSpec
from ipusim.keras import metrics as metrics_module
from ipusim.keras import optimizers as optimizers_module
from ipusim.keras.engine.compile_utils import (
    LossesContainer,
    MetricsContainer,
    check_duplicated_metrics,
)
from ipusim.keras.engine.data_adapter import (
    Batch,
    DataHandler,
    apply_class_weight,
    as_arrays,
    train_validation_split,
)
from ipusim.keras.engine.gradient_update import GradientUpdateMixin
from ipusim.keras.engine.inference import InferenceMixin, Logs, callback_list
from ipusim.keras.engine.ipu_hooks import IPUExtension, IPURun, LoopSettings, RunCall, RunKind
from ipusim.keras.engine.layer import input_dtype_for
from ipusim.keras.engine.nest import flatten, map_structure, pack_sequence_as
from ipusim.keras.engine.replicas import job_replicas, replica_mean
from ipusim.keras.engine.step import StepProgram

_COMPILE_KWARGS = {"sample_weight_mode", "target_tensors", "distribute"}


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ConfigurationError(f"`{what}` must be a positive integer, received {value!r}")
    return int(value)


class TrainingMixin(InferenceMixin, GradientUpdateMixin):
    """compile/fit/evaluate/predict for :class:`ipusim.keras.Model` (mixed into it)."""

    #: The variable dtype of the Layer this class is mixed into (Model is a Layer).
    _dtype: str

    def _init_training_state(self) -> None:
        self.optimizer: Any = None
        self._loss_spec: Any = None
        self._loss_weights: Any = None
        self._metrics_spec: Any = None
        self._weighted_metrics_spec: Any = None
        self._losses_container: LossesContainer | None = None
        self.compiled_metrics: MetricsContainer | None = None
        self._loss_tracker = metrics_module.Mean(name="loss")
        self._is_compiled = False
        self._steps_per_execution = 1
        self.stop_training = False
        self.history: Any = None
        self._programs: dict[Any, StepProgram] = {}
        self._exec_step = 0
        # Gradient accumulation (set by the IPU extensions): steps per weight update, the
        # reduction method ("sum", "mean", "running_mean"), and the running state.
        self._gradient_accumulation = 1
        self._accumulation_method = "sum"
        self._accumulators: GradientAccumulator | None = None
        # The IPU extension of a model created in an IPUStrategy scope (ipu_hooks), or None.
        self._ipu_extension: IPUExtension | None = None
        # Per-step batch callbacks instead of once per execution (asynchronous callbacks).
        self._per_step_callbacks = False
        # What the last fit/evaluate/predict ran: [(epoch, steps in the execution), ...] and the
        # step program used, for the simulation.
        self._execution_log: list[tuple[int, int]] = []
        self._last_programs: dict[str, StepProgram] = {}

    # ------------------------------------------------------------------ compile
    def compile(
        self,
        optimizer: Any = "rmsprop",
        loss: Any = None,
        metrics: Any = None,
        loss_weights: Any = None,
        weighted_metrics: Any = None,
        run_eagerly: bool | None = None,
        steps_per_execution: int | None = None,
        jit_compile: bool | None = None,
        **kwargs: Any,
    ) -> None:
        """Configure the model for training.

        Args:
            optimizer: name (``'sgd'``, ``'rmsprop'``, ``'adam'``) or optimizer instance.
            loss: loss name, instance or function; a list/dict for several outputs.
            metrics: list of metric names/instances (``'accuracy'`` resolves by the shapes);
                updated without sample weights, as in Keras.
            weighted_metrics: metrics updated with the sample weights.
            loss_weights: per-output loss weights.
            steps_per_execution: batches run per execution; callbacks see one batch-end per
                execution (default 1).
        """
        unknown = set(kwargs) - _COMPILE_KWARGS
        if unknown:
            raise InvalidTypeError(f"compile(): unexpected keyword argument(s) {sorted(unknown)}")
        if run_eagerly:
            raise ConfigurationError(
                "run_eagerly=True is not supported: ipusim always executes the "
                "traced graph. Set run_eagerly=False (or leave it unset)."
            )
        spe = (
            1
            if steps_per_execution is None
            else _positive_int(steps_per_execution, "steps_per_execution")
        )
        check_duplicated_metrics(metrics, weighted_metrics)
        new_optimizer = optimizers_module.get(optimizer)
        if loss is not None:  # validate names now, before anything changes
            for item in flatten(loss if isinstance(loss, list | tuple | dict) else [loss]):
                if item is not None:
                    from ipusim.keras import losses as losses_module

                    losses_module.get(item)
        self.optimizer = new_optimizer
        self._loss_spec, self._loss_weights, self._metrics_spec = loss, loss_weights, metrics
        self._weighted_metrics_spec = weighted_metrics
        self._losses_container = None
        self.compiled_metrics = None
        self._steps_per_execution = spe
        self._programs.clear()
        self._is_compiled = True

    @property
    def steps_per_execution(self) -> int:
        return self._steps_per_execution

    @property
    def loss(self) -> Any:
        """The ``loss`` given to :meth:`compile` (None before; Keras' ``model.loss``)."""
        return self._loss_spec

    @loss.setter
    def loss(self, value: Any) -> None:
        self._loss_spec, self._losses_container = value, None

    @property
    def output_names(self) -> list[str]:
        count = getattr(self, "_num_outputs", None) or 1
        return [f"output_{i + 1}" for i in range(count)]

    def _loss_symbol(self, y_true: Any, y_pred: Any, sample_weight: Any) -> Any:
        if self._loss_spec is None:
            raise ConfigurationError(
                "compile: a loss is needed to train or evaluate; pass `loss=` to "
                "compile() (e.g. loss='sparse_categorical_crossentropy')"
            )
        self._num_outputs = len(flatten(y_pred))
        if self._losses_container is None:
            self._losses_container = LossesContainer(
                self._loss_spec, self._loss_weights, self.output_names
            )
        return self._losses_container(y_true, y_pred, sample_weight)

    def _metrics_container(self) -> MetricsContainer:
        if self.compiled_metrics is None:
            losses = self._losses_container.losses if self._losses_container else []
            self.compiled_metrics = MetricsContainer(
                self._metrics_spec,
                losses,
                self.output_names,
                self._weighted_metrics_spec,
            )
        return self.compiled_metrics

    @property
    def metrics(self) -> list[Any]:
        out = [self._loss_tracker] if self._is_compiled else []
        if self.compiled_metrics is not None:
            out += self.compiled_metrics.metrics
        return out

    @property
    def metrics_names(self) -> list[str]:
        return [metric.name for metric in self.metrics]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    def _assert_compiled(self, what: str) -> None:
        if not self._is_compiled:
            raise IncompatibleStateError(
                f"You must compile your model before {what}. Call `model.compile(optimizer, loss)`."
            )

    # ------------------------------------------------------------------ steps
    def _prepare(self, x: Any, y: Any, sample_weight: Any) -> tuple[list[Any], Any, Any, Any]:
        """Flat arrays (x, y, sw) converted to the dtypes the graph expects, and their specs."""
        x = as_arrays(x)
        x = map_structure(lambda a: a.astype(input_dtype_for(a, self._dtype), copy=False), x)
        x_spec = map_structure(lambda a: TensorSpec(a.shape, a.dtype.name), x)
        arrays = flatten(x)
        y_spec = sw_spec = None
        if y is not None:
            y = as_arrays(y)
            y = map_structure(lambda a: a.astype(input_dtype_for(a, self._dtype), copy=False), y)
            y_spec = map_structure(lambda a: TensorSpec(a.shape, a.dtype.name), y)
            arrays += flatten(y)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=self._dtype)
            sw_spec = TensorSpec(sample_weight.shape, sample_weight.dtype.name)
            arrays.append(sample_weight)
        return arrays, x_spec, y_spec, sw_spec

    def _program(self, kind: str, x_spec: Any, y_spec: Any, sw_spec: Any) -> StepProgram:
        key = (kind, repr(x_spec), repr(y_spec), repr(sw_spec))
        if key not in self._programs:
            self._programs[key] = StepProgram(self, kind, x_spec, y_spec, sw_spec)
        return self._programs[key]

    def _next_ctx(self, training: bool) -> ExecContext:
        ctx = ExecContext(training=training, step=self._exec_step)
        self._exec_step += 1
        return ctx

    def _train_step(
        self, batches: list[tuple[Any, Any, Any]], where: str, norm_group: int = 1
    ) -> None:
        """One training step: one micro-batch per replica, gradients averaged over replicas.

        With one replica this is an ordinary step. Nothing changes until every replica's loss is
        known to be finite. ``norm_group`` consecutive replicas share batch-norm statistics.
        """
        runs = []
        if norm_group > 1:
            batches = [
                _end_to_end(batches[i : i + norm_group]) for i in range(0, len(batches), norm_group)
            ]
        for x, y, sample_weight in batches:
            arrays, x_spec, y_spec, sw_spec = self._prepare(x, y, sample_weight)
            program = self._program("train", x_spec, y_spec, sw_spec)
            result = program.run(arrays, self._next_ctx(True))
            assert result.loss is not None  # a train step always computes its loss
            if not np.isfinite(result.loss):
                raise NonFiniteLossError(
                    f"The training loss became {result.loss} {where}. The weights were left as "
                    "they were before this step. Lower the learning rate, check the inputs and "
                    "labels for NaN/inf values, or use a numerically stable loss "
                    "(from_logits=True)."
                )
            runs.append((program, result, y, sample_weight, arrays))
        program = runs[0][0]
        # One reduction over every replica of the job (the other instances' too, under
        # ipusim run --instances): the gradients, then the layers' state updates.
        n_grads = len(runs[0][1].gradients)
        job = job_replicas([list(r[1].gradients) + list(r[1].updates) for r in runs])
        # Gradients captured by keras.ipu.layers go to an optimizer that takes them.
        self._captured_grads = runs[0][1].captured
        grads = [replica[:n_grads] for replica in job]
        self._apply_or_accumulate(grads, program.trainable, program.update)
        updates = replica_mean([replica[n_grads:] for replica in job])
        for (variable, _), value in zip(program.updates, updates):
            variable.assign(value)
        self._last_programs["train"] = program
        for _, result, y, sample_weight, arrays in runs:
            self._update_metrics(result, y, sample_weight, arrays)

    def _update_metrics(self, result: Any, y: Any, sample_weight: Any, arrays: list[Any]) -> None:
        batch = int(np.shape(arrays[0])[0]) if np.ndim(arrays[0]) else 1
        self._loss_tracker.update_state(result.loss, sample_weight=batch)
        container = self._metrics_container()
        container.update_state(
            [np.asarray(t) for t in flatten(y)],
            result.predictions,
            None if sample_weight is None else np.asarray(sample_weight),
        )

    def _logs(self) -> Logs:
        # Scalars as floats; metrics with one value per class or threshold (F1Score(),
        # Precision(thresholds=[...])) stay arrays, as Keras' logs hold them.
        results = {metric.name: metric.result() for metric in self.metrics}
        return {k: float(v) if np.ndim(v) == 0 else np.asarray(v) for k, v in results.items()}

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        verbose: Any = "auto",
        callbacks: Any = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: bool = True,
        class_weight: Any = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        validation_batch_size: int | None = None,
        validation_freq: int = 1,
        max_queue_size: int = 10,
        workers: int = 1,
        use_multiprocessing: bool = False,
    ) -> Any:
        """Train for ``epochs`` epochs; returns a ``History``."""
        call = RunCall(
            x, y, sample_weight, batch_size, steps_per_epoch, verbose, epochs, initial_epoch
        )
        run = self._ipu_begin_run("fit", call)
        if run is not None and not run.numerics:
            return run.finish(None)
        if run is not None:
            x, y = run.x, run.y
        self._assert_compiled("training/testing")
        epochs = _positive_int(epochs, "epochs")
        verbose = 1 if verbose == "auto" else int(verbose)
        x, y = as_arrays(x), as_arrays(y)
        if class_weight is not None:  # as tf.keras: per-class weights become sample weights
            x, y, sample_weight = apply_class_weight(class_weight, x, y, sample_weight)
        if validation_split and validation_data is None:
            if not isinstance(x, np.ndarray | list | tuple | dict):
                raise InputDataError(
                    "`validation_split` is only supported for numpy array inputs; "
                    "pass `validation_data` for a Dataset"
                )
            (x, y, sample_weight), validation_data = train_validation_split(
                (x, y, sample_weight), validation_split
            )
        handler = DataHandler(x, y, sample_weight, batch_size, steps_per_epoch, shuffle, "fit")
        validation = self._validation_handler(
            validation_data, validation_batch_size or batch_size, validation_steps
        )
        cb = callback_list(self, callbacks, verbose, handler.steps, epochs, history=True)
        loop = run.loop if run is not None else LoopSettings(self._steps_per_execution)
        history = self._fit_epochs(
            handler, validation, cb, range(initial_epoch, epochs), validation_freq, loop
        )
        return history if run is None else run.finish(history)

    def _fit_epochs(
        self,
        handler: DataHandler,
        validation: DataHandler | None,
        cb: Any,
        epochs: range,
        validation_freq: int,
        loop: LoopSettings,
    ) -> Any:
        """The epochs of a fit (from ``epochs.start``, or after a BackupAndRestore backup)."""
        self.stop_training = False
        self._execution_log = []
        cb.on_train_begin()
        # BackupAndRestore found a backup: continue after its epoch (as Keras' saved counter).
        initial_epoch = max(epochs.start, self.__dict__.pop("_backup_initial_epoch", 0))
        epoch_logs: Logs = {}
        for epoch in range(initial_epoch, epochs.stop):
            self.reset_metrics()
            cb.on_epoch_begin(epoch)
            logs = self._run_epoch(handler, cb, epoch, loop)
            epoch_logs = dict(logs)
            if validation is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate_handler(validation, None, verbose=0)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cb.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cb.on_train_end(logs=epoch_logs)
        return self.history

    def _run_epoch(self, handler: DataHandler, cb: Any, epoch: int, loop: LoopSettings) -> Logs:
        """Executions of ``steps_per_execution`` steps; each step takes one batch per replica."""
        logs: Logs = {}
        step = 0
        iterator = handler.epoch_iterator()
        spe, replicas = loop.steps_per_execution, loop.replicas
        exhausted = False
        while not exhausted:
            group: list[list[Batch]] = []
            for _ in range(spe):
                taken = [next(iterator, None) for _ in range(replicas)]
                batches = [b for b in taken if b is not None]
                if len(batches) < len(taken):
                    exhausted = True
                    break
                group.append(batches)
            if not group:
                break
            self._execution_log.append((epoch, len(group)))
            if not self._per_step_callbacks:
                cb.on_train_batch_begin(step)
            for offset, batches in enumerate(group):
                if self._per_step_callbacks:
                    cb.on_train_batch_begin(step + offset)
                where = f"at epoch {epoch + 1}, step {step + offset + 1}"
                self._train_step(batches, where, loop.norm_group)
                loop.on_step()
                if self._per_step_callbacks:
                    logs = self._logs()
                    cb.on_train_batch_end(step + offset, logs)
            step += len(group)
            if not self._per_step_callbacks:
                logs = self._logs()
                cb.on_train_batch_end(step - 1, logs)
            if self.stop_training:
                break
        return logs

    def _ipu_begin_run(self, kind: RunKind, call: RunCall) -> IPURun | None:
        """Template hook: the IPU extension's plan of this call (None for plain Keras models)."""
        extension = self._ipu_extension
        return None if extension is None else extension.begin_run(self, kind, call)

    def _validation_handler(
        self, validation_data: Any, batch_size: int | None, steps: int | None
    ) -> DataHandler | None:
        if validation_data is None:
            return None
        from ipusim.data import Dataset

        if isinstance(validation_data, Dataset):
            return DataHandler(validation_data, steps_per_epoch=steps, what="validation")
        vx, vy, vsw = _unpack_validation(validation_data)
        return DataHandler(vx, vy, vsw, batch_size, steps, False, "validation")

    # ------------------------------------------------------------------ single batches
    def train_on_batch(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        class_weight: Any = None,
        reset_metrics: bool = True,
        return_dict: bool = False,
    ) -> Any:
        """One training step on one batch; returns loss (and metrics)."""
        self._assert_compiled("training/testing")
        if reset_metrics:
            self.reset_metrics()
        self._train_step([(x, y, sample_weight)], "in train_on_batch")
        return self._batch_result(return_dict)


def _end_to_end(batches: list[tuple[Any, Any, Any]]) -> tuple[Any, Any, Any]:
    """One group's micro-batches end to end, as one batch (x, y, sample weights).

    Under distributed batch norm a group's replicas normalise with the statistics of all their
    micro-batches, and their backward passes all-reduce the statistics' gradient sums: the
    group's mean gradient is that of its micro-batches run as one batch (the losses average
    over equal micro-batches), which is how the numerics run it.
    """

    def joined(parts: tuple[Any, ...]) -> Any:
        if parts[0] is None:
            return None
        flat = [flatten(as_arrays(p)) for p in parts]
        return pack_sequence_as(
            as_arrays(parts[0]), [np.concatenate(column) for column in zip(*flat)]
        )

    xs, ys, weights = zip(*batches)
    return joined(xs), joined(ys), joined(weights)


def _unpack_validation(data: Any) -> tuple[Any, Any, Any]:
    if isinstance(data, tuple | list) and len(data) in (2, 3):
        return (data[0], data[1], data[2] if len(data) == 3 else None)
    raise InputDataError(
        "`validation_data` must be a Dataset or a tuple (x_val, y_val) or "
        f"(x_val, y_val, val_sample_weight); received {type(data).__name__}"
    )
