"""evaluate / predict: the Keras inference loops over traced step programs (mixed into
:class:`ipusim.keras.engine.training.TrainingMixin`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ipusim.errors import InputDataError
from ipusim.keras import callbacks as callbacks_module
from ipusim.keras.engine.data_adapter import DataHandler
from ipusim.keras.engine.ipu_hooks import IPURun, RunCall, RunKind

if TYPE_CHECKING:
    from ipusim.graph.execute import ExecContext
    from ipusim.keras.engine.step import StepProgram
from ipusim.keras.engine.nest import pack_sequence_as

#: The logs fit / evaluate report (to callbacks, History, ``return_dict=True``): floats, and
#: arrays for metrics with one value per class or threshold (F1Score(), Precision([...])).
Logs: TypeAlias = dict[str, float | np.ndarray]


def callback_list(
    model: Any,
    callbacks: Any,
    verbose: int,
    steps: int | None,
    epochs: int = 1,
    history: bool = False,
) -> callbacks_module.CallbackList:
    """The Keras loops' ``CallbackList``: a progress bar unless ``verbose`` is 0, a ``History``
    only for ``fit``."""
    return callbacks_module.CallbackList(
        callbacks,
        add_history=history,
        add_progbar=verbose != 0,
        model=model,
        verbose=verbose,
        epochs=epochs,
        steps=steps,
    )


class InferenceMixin:
    """evaluate / predict and their single-batch forms; the step helpers (``_prepare``,
    ``_program``, ``_logs`` ...) and the IPU hook ``_ipu_begin_run`` are TrainingMixin's."""

    _last_programs: dict[str, StepProgram]

    if TYPE_CHECKING:  # TrainingMixin's, which mixes this class in

        @property
        def metrics_names(self) -> list[str]: ...
        def reset_metrics(self) -> None: ...
        def _assert_compiled(self, what: str) -> None: ...
        def _ipu_begin_run(self, kind: RunKind, call: RunCall) -> IPURun | None: ...
        def _prepare(
            self, x: Any, y: Any, sample_weight: Any
        ) -> tuple[list[Any], Any, Any, Any]: ...
        def _program(self, kind: str, x_spec: Any, y_spec: Any, sw_spec: Any) -> StepProgram: ...
        def _next_ctx(self, training: bool) -> ExecContext: ...
        def _update_metrics(
            self, result: Any, y: Any, sample_weight: Any, arrays: list[Any]
        ) -> None: ...
        def _logs(self) -> Logs: ...

    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        verbose: Any = "auto",
        sample_weight: Any = None,
        steps: int | None = None,
        callbacks: Any = None,
        max_queue_size: int = 10,
        workers: int = 1,
        use_multiprocessing: bool = False,
        return_dict: bool = False,
    ) -> Any:
        """Loss and metrics over the data: a scalar, a list, or a dict (``return_dict``)."""
        run = self._ipu_begin_run(
            "evaluate", RunCall(x, y, sample_weight, batch_size, steps, verbose)
        )
        if run is not None and not run.numerics:
            return run.finish(None)
        if run is not None:
            x, y = run.x, run.y
        self._assert_compiled("training/testing")
        verbose = 1 if verbose == "auto" else int(verbose)
        handler = DataHandler(x, y, sample_weight, batch_size, steps, False, "evaluate")
        on_step = run.loop.on_step if run is not None else None
        logs = self._evaluate_handler(handler, callbacks, verbose, on_step)
        result = self._batch_result(return_dict, logs)
        return result if run is None else run.finish(result)

    def _evaluate_handler(
        self,
        handler: DataHandler,
        callbacks: Any,
        verbose: int,
        on_step: Callable[[], None] | None = None,
    ) -> Logs:
        cb = callback_list(self, callbacks, verbose, handler.steps)
        self.reset_metrics()
        cb.on_test_begin()
        logs: Logs = {}
        for step, (bx, by, bsw) in enumerate(handler.epoch_iterator()):
            cb.on_test_batch_begin(step)
            _, result, arrays = self._infer("test", bx, by, bsw)
            self._update_metrics(result, by, bsw, arrays)
            if on_step is not None:
                on_step()
            logs = self._logs()
            cb.on_test_batch_end(step, logs)
        cb.on_test_end(logs)
        return logs

    def predict(
        self,
        x: Any,
        batch_size: int | None = None,
        verbose: Any = "auto",
        steps: int | None = None,
        callbacks: Any = None,
        max_queue_size: int = 10,
        workers: int = 1,
        use_multiprocessing: bool = False,
    ) -> Any:
        """Model outputs for every input sample, batches concatenated."""
        run = self._ipu_begin_run("predict", RunCall(x, None, None, batch_size, steps, verbose))
        if run is not None and not run.numerics:
            return run.finish(None)
        if run is not None:
            x = run.x
        outputs = self._predict_batches(x, batch_size, verbose, steps, callbacks, run)
        return outputs if run is None else run.finish(outputs)

    def _predict_batches(
        self,
        x: Any,
        batch_size: int | None,
        verbose: Any,
        steps: int | None,
        callbacks: Any,
        run: IPURun | None,
    ) -> Any:
        """The Keras predict loop."""
        verbose = 0 if verbose == "auto" else int(verbose)
        handler = DataHandler(x, None, None, batch_size, steps, False, "predict")
        cb = callback_list(self, callbacks, verbose, handler.steps)
        cb.on_predict_begin()
        chunks: list[list[np.ndarray]] = []
        structure = None
        for step, (bx, _, _) in enumerate(handler.epoch_iterator()):
            cb.on_predict_batch_begin(step)
            program, result, _ = self._infer("predict", bx, None, None)
            self._last_programs["predict"] = program
            structure = program.trace.outputs
            outputs = result.predictions
            chunks.append(outputs)
            if run is not None:
                run.loop.on_step()
            cb.on_predict_batch_end(step, {"outputs": outputs})
        cb.on_predict_end()
        if not chunks:
            raise InputDataError(
                "predict: the input produced no batches; pass at least one sample (or a "
                "Dataset that yields at least one batch)"
            )
        merged = [np.concatenate([c[i] for c in chunks], axis=0) for i in range(len(chunks[0]))]
        return pack_sequence_as(structure, merged)

    def test_on_batch(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        reset_metrics: bool = True,
        return_dict: bool = False,
    ) -> Any:
        self._assert_compiled("training/testing")
        if reset_metrics:
            self.reset_metrics()
        _, result, arrays = self._infer("test", x, y, sample_weight)
        self._update_metrics(result, y, sample_weight, arrays)
        return self._batch_result(return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        program, result, _ = self._infer("predict", x, None, None)
        return pack_sequence_as(program.trace.outputs, result.predictions)

    def _infer(
        self, kind: str, x: Any, y: Any, sample_weight: Any
    ) -> tuple[StepProgram, Any, list[np.ndarray]]:
        """Run the ``kind`` ("test" / "predict") step on one batch, keeping the states its
        layers carry to the next batch (a stateful RNN's): (program, result, input arrays)."""
        arrays, x_spec, y_spec, sw_spec = self._prepare(x, y, sample_weight)
        program = self._program(kind, x_spec, y_spec, sw_spec)
        result = program.run(arrays, self._next_ctx(False))
        for (variable, _), value in zip(program.updates, result.updates, strict=True):
            variable.assign(value)
        return program, result, arrays

    def _batch_result(self, return_dict: bool, logs: Logs | None = None) -> Any:
        logs = self._logs() if logs is None else logs
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names]
        return values[0] if len(values) == 1 else values
