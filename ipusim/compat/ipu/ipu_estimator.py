"""``ipu.ipu_estimator``: ``IPUEstimator`` and ``IPUEstimatorSpec`` on ipusim's custom-training-
loop runtime.

Each mode (train, evaluate, predict) becomes one device program, as IPU TensorFlow compiles
one: a ``loops.repeat(iterations_per_loop)`` over an infeed of the ``input_fn``'s dataset whose
body calls ``model_fn(features, labels, mode, params, config)`` (each argument passed when the
function names it) and sends the loss (evaluation: also the metrics; prediction: the
predictions) to an outfeed. The program is traced once per mode and executed
``steps / iterations_per_loop`` times through ``IPUStrategy.run``, so the numbers come from
ipusim's kernels and every execution is simulated (``estimator.last_simulation``).

Variables: a mode's program keeps its variables (and its optimizer's slots) between calls.
Between modes the values are carried over by creation order, where TensorFlow's Estimator
restores them from its checkpoint by name (ipusim writes no checkpoint). The global step is
kept on the host and advances by ``iterations_per_loop`` per execution.

Not simulated (raise ``UnsupportedError``): ``IPUEstimatorSpec``'s ``host_call`` and
``eval_metrics`` (functions run on the host), ``warm_start_from``, session hooks, saving
listeners and checkpoint paths (no checkpoint or event file is written to ``model_dir``).
"""

from __future__ import annotations

import collections
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ipusim.compat.ipu import ipu_strategy  # is ipusim.strategy (no package-level cycle)
from ipusim.compat.ipu.ipu_run_config import RunConfig
from ipusim.compat.runtime import context, loops, ops
from ipusim.compat.runtime.feeds import IPUInfeedQueue, IPUOutfeedQueue
from ipusim.compat.runtime.function import function
from ipusim.compat.tf import v1_metrics, v1_train
from ipusim.compat.tf.estimator import EstimatorSpec, ModeKeys
from ipusim.config import configured_num_ipus
from ipusim.data import Dataset
from ipusim.errors import ConfigurationError, IncompatibleStateError, UnsupportedError
from ipusim.keras import backend as keras_backend

__all__ = ["IPUEstimator", "IPUEstimatorSpec"]

log = logging.getLogger("ipusim")


class IPUEstimatorSpec(EstimatorSpec):
    """``EstimatorSpec`` with the IPU's host-side extras (not simulated when given)."""

    def __init__(
        self,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metric_ops: Any = None,
        eval_metrics: Any = None,
        host_call: Any = None,
        training_hooks: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
    ) -> None:
        for name, value in (("host_call", host_call), ("eval_metrics", eval_metrics)):
            if value is not None:
                raise UnsupportedError(
                    f"IPUEstimatorSpec({name}=...) is not simulated by ipusim (it runs a "
                    "function on the host); use eval_metric_ops with tf.compat.v1.metrics"
                )
        super().__init__(
            mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=eval_metric_ops,
            training_hooks=training_hooks,
            evaluation_hooks=evaluation_hooks,
            prediction_hooks=prediction_hooks,
        )


@contextmanager
def fresh_layer_names() -> Iterator[None]:
    """Name layers as in a new TensorFlow graph (``dense``, ``dense_1``...), as the Estimator
    builds every mode's model in a fresh graph; the process' counters are restored after."""
    with keras_backend._lock:
        saved = dict(keras_backend._name_counts)
        keras_backend._name_counts.clear()
    try:
        yield
    finally:
        with keras_backend._lock:
            keras_backend._name_counts.clear()
            keras_backend._name_counts.update(saved)


def _refuse(what: str, value: Any) -> None:
    """Session hooks, listeners and checkpoints are not simulated: say so if any are given."""
    if value:
        raise UnsupportedError(
            f"IPUEstimator: {what} are not simulated by ipusim (it runs no TF1 session and "
            "writes no checkpoint); remove them, or read results from the returned values"
        )


def _call_with(
    fn: Callable[..., Any], available: dict[str, Any], first: tuple[Any, ...] = ()
) -> Any:
    """Call ``fn`` with ``first`` positionally and the ``available`` arguments it names."""
    params = inspect.signature(fn).parameters
    names = [p for p in params if p not in ("self",)][len(first) :]
    return fn(*first, **{k: available[k] for k in names if k in available})


class _Program:
    """One mode's device program: infeed, traced loop, outfeed."""

    def __init__(self, estimator: IPUEstimator, mode: str, element_spec: Any) -> None:
        self.estimator = estimator
        self.mode = mode
        self.buffer: collections.deque[Any] = collections.deque()  # dataset elements
        dataset = Dataset.from_generator(self._generate, output_signature=element_spec)
        self.infeed = IPUInfeedQueue(dataset)
        self.outfeed = IPUOutfeedQueue()
        self.variables: list[Any] = []
        self.metrics: list[str] = []
        iterations = estimator.iterations_per_loop
        self.function = function(lambda: loops.repeat(iterations, self._body, [], self.infeed))

    def _generate(self) -> Iterator[Any]:
        while self.buffer:
            yield self.buffer.popleft()

    def _body(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            features, labels = kwargs, None
        elif len(args) == 2:
            features, labels = args
        elif len(args) == 1:
            features, labels = args[0], None
        else:
            raise ConfigurationError(
                "input_fn's dataset must yield features or (features, labels), received "
                f"elements of {len(args)} parts"
            )
        with fresh_layer_names():
            spec = self.estimator._call_model_fn(features, labels, self.mode)
        ctx = context.current()
        assert ctx is not None  # the loop body runs while its function is traced
        self.variables = list(ctx.graph.variables)
        # Traced before the first execution: give the new variables the trained values now.
        self.estimator._restore(self)
        return self.outfeed.enqueue(self._outputs(spec))

    def _outputs(self, spec: EstimatorSpec) -> Any:
        if self.mode == ModeKeys.PREDICT:
            return spec.predictions
        outputs = {"loss": ops.cast(spec.loss, "float32")}
        if self.mode == ModeKeys.EVAL:
            for name, pair in sorted((spec.eval_metric_ops or {}).items()):
                metric = pair[0] if isinstance(pair, tuple | list) else pair
                if not isinstance(metric, v1_metrics.StreamingMetric):
                    raise UnsupportedError(
                        f"eval_metric_ops[{name!r}]: ipusim evaluates tf.compat.v1.metrics "
                        f"(mean, accuracy, ...) only, received {type(metric).__name__}"
                    )
                self.metrics.append(name)
                outputs[f"{name}/total"] = metric.total
                outputs[f"{name}/count"] = metric.count
        return outputs

    def run(self, elements: list[Any]) -> Any:
        """One device execution over ``elements`` (``iterations_per_loop`` of them)."""
        self.buffer.extend(elements)
        self.estimator._restore(self)
        strategy = self.estimator._strategy
        strategy.run(self.function)
        self.estimator.last_simulation = getattr(strategy, "last_simulation", None)
        self.estimator._save(self)
        return self.outfeed.dequeue()


class IPUEstimator:
    """Trains, evaluates and predicts with a ``model_fn`` on the simulated IPU.

    Args:
        model_fn: ``model_fn(features, labels, mode, params, config)`` returning an
            ``EstimatorSpec`` / ``IPUEstimatorSpec`` (only the arguments it names are passed).
        model_dir: directory of the run (default: the config's, else a temporary one).
        config: an ``ipu.ipu_run_config.RunConfig``.
        params: a dict passed to ``model_fn`` and ``input_fn`` as ``params``.
        warm_start_from: not simulated (must be None).
        train_batch_size, eval_batch_size, predict_batch_size: accepted for compatibility
            (the dataset's batches are used).

    Raises:
        ConfigurationError: ``model_fn`` is not callable or ``config`` is not a RunConfig.
        UnsupportedError: ``warm_start_from`` is given.
    """

    def __init__(
        self,
        model_fn: Callable[..., Any],
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: dict[str, Any] | None = None,
        warm_start_from: Any = None,
        train_batch_size: int | None = None,
        eval_batch_size: int | None = None,
        predict_batch_size: int | None = None,
    ) -> None:
        if not callable(model_fn):
            raise ConfigurationError(f"model_fn must be callable, received {model_fn!r}")
        if config is not None and not isinstance(config, RunConfig):
            raise ConfigurationError(
                "config must be an ipu.ipu_run_config.RunConfig (it carries the IPURunConfig), "
                f"received {type(config).__name__}"
            )
        if warm_start_from is not None:
            raise UnsupportedError("IPUEstimator(warm_start_from=...) is not simulated by ipusim")
        self._model_fn = model_fn
        self._config = config or RunConfig(model_dir=model_dir)
        if model_dir is not None:
            self._config.model_dir = model_dir
        self._params = dict(params or {})
        self._programs: dict[tuple[str, str], _Program] = {}
        self._state: list[np.ndarray] | None = None
        self._names: list[str] = []
        self._global_step = 0
        self._strategy: Any = None
        self.last_simulation: Any = None

    # ------------------------------------------------------------------ properties
    @property
    def model_dir(self) -> str:
        return str(self._config.model_dir)

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def params(self) -> dict[str, Any]:
        return dict(self._params)

    @property
    def model_fn(self) -> Callable[..., Any]:
        return self._model_fn

    @property
    def iterations_per_loop(self) -> int:
        return self._config.ipu_run_config.iterations_per_loop

    def get_variable_names(self) -> list[str]:
        """Names of the model's variables (and ``global_step``)."""
        return [*self._names, "global_step"]

    def get_variable_value(self, name: str) -> np.ndarray:
        """The current value of variable ``name`` (``"dense/kernel"`` or ``"dense/kernel:0"``).

        Raises:
            ValueError: no such variable.
        """
        if name in ("global_step", "global_step:0"):
            return np.array(self._global_step, np.int64)
        for known, value in zip(self._names, self._state or [], strict=False):
            if name in (known, known.removesuffix(":0")):
                return value.copy()
        raise ConfigurationError(f"Variable {name!r} not found; known: {self.get_variable_names()}")

    # ------------------------------------------------------------------ modes
    def train(
        self,
        input_fn: Callable[..., Any],
        hooks: Any = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Any = None,
    ) -> IPUEstimator:
        """Train for ``steps`` more steps (or up to ``max_steps``, or until the input ends).

        Raises:
            ValueError: both ``steps`` and ``max_steps``, a count below 1, or a count that is
                not a multiple of ``iterations_per_loop``.
        """
        _refuse("hooks", hooks)
        _refuse("saving listeners", saving_listeners)
        if steps is not None and max_steps is not None:
            raise ConfigurationError("Can not provide both steps and max_steps.")
        if max_steps is not None:
            steps = max_steps - self._global_step
            if steps <= 0:
                return self
        self._check_steps(steps)
        program, batches = self._start(input_fn, ModeKeys.TRAIN)
        done, interval = 0, self._config.log_step_count_steps or 0
        while (steps is None or done < steps) and (elements := self._take(batches, ModeKeys.TRAIN)):
            outputs = program.run(elements)
            losses = outputs["loss"] if isinstance(outputs, dict) else outputs
            ipl = self.iterations_per_loop
            done += ipl
            self._global_step += ipl
            if interval and self._global_step % interval < ipl:
                log.info("loss = %s, step = %d", float(np.mean(losses)), self._global_step)
        return self

    def evaluate(
        self,
        input_fn: Callable[..., Any],
        steps: int | None = None,
        hooks: Any = None,
        checkpoint_path: Any = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Evaluate for ``steps`` steps (or until the input ends): the mean loss and the
        ``eval_metric_ops`` over every evaluated batch, and ``global_step``."""
        _refuse("hooks", hooks)
        _refuse("checkpoint paths", checkpoint_path)
        self._check_steps(steps)
        program, batches = self._start(input_fn, ModeKeys.EVAL)
        collected: list[dict[str, np.ndarray]] = []
        while steps is None or len(collected) * self.iterations_per_loop < steps:
            elements = self._take(batches, ModeKeys.EVAL)
            if elements is None:
                break
            collected.append(program.run(elements))
        if not collected:
            raise ConfigurationError("evaluate: input_fn's dataset gave no complete loop")
        results = self._evaluation_results(program, collected)
        results["global_step"] = self._global_step
        return results

    def predict(
        self,
        input_fn: Callable[..., Any],
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: Any = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yield the predictions, example by example (or batch by batch)."""
        _refuse("hooks", hooks)
        _refuse("checkpoint paths", checkpoint_path)
        program, batches = self._start(input_fn, ModeKeys.PREDICT)
        while (elements := self._take(batches, ModeKeys.PREDICT)) is not None:
            outputs = program.run(elements)
            if self._replicas() > 1:  # (iterations, replicas, ...) in the order fed
                outputs = _merge_leading(outputs)
            for batch in _unstack(outputs):
                if isinstance(batch, dict) and predict_keys is not None:
                    keys = [predict_keys] if isinstance(predict_keys, str) else predict_keys
                    batch = {k: batch[k] for k in keys}
                if yield_single_examples:
                    yield from _unstack(batch)
                else:
                    yield batch

    # ------------------------------------------------------------------ internals
    _program_type: type[_Program] = _Program

    def _elements_per_execution(self, mode: str) -> int:
        """Dataset elements one device execution consumes (each replica takes its own)."""
        return self.iterations_per_loop * self._replicas()

    def _replicas(self) -> int:
        """Replicas of the configured device: its IPUs over ``num_shards``, which must agree
        with ``IPURunConfig.num_replicas`` (IPU TensorFlow checks the same)."""
        run = self._config.ipu_run_config
        ipus = configured_num_ipus()
        if ipus != run.num_replicas * run.num_shards:
            raise ConfigurationError(
                f"IPURunConfig asks for num_replicas={run.num_replicas} x num_shards="
                f"{run.num_shards} IPUs but the device has {ipus}; set ipu_options."
                f"auto_select_ipus = {run.num_replicas * run.num_shards}"
            )
        return run.num_replicas

    def _evaluation_results(self, program: _Program, collected: list[Any]) -> dict[str, Any]:
        """The mean loss and the streaming metrics over every evaluated batch."""
        joined = {k: np.concatenate([c[k].reshape(-1) for c in collected]) for k in collected[0]}
        results: dict[str, Any] = {"loss": float(np.mean(joined["loss"]))}
        for metric in program.metrics:
            totals, counts = joined[f"{metric}/total"], joined[f"{metric}/count"]
            results[metric] = v1_metrics.StreamingMetric.result(totals, counts)
        return results

    def _check_steps(self, steps: int | None) -> None:
        if steps is None:
            return
        ipl = self.iterations_per_loop
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigurationError(f"steps must be a positive int, received {steps!r}")
        if steps % ipl:
            raise ConfigurationError(
                f"steps ({steps}) must be a multiple of iterations_per_loop ({ipl}): each "
                "device execution runs iterations_per_loop steps"
            )

    def _start(self, input_fn: Callable[..., Any], mode: str) -> tuple[_Program, Iterator[Any]]:
        if self._strategy is None:
            options = self._config.ipu_run_config.ipu_options
            if options is not None and hasattr(options, "configure_ipu_system"):
                options.configure_ipu_system()
            self._strategy = ipu_strategy.IPUStrategy()
        available = {"params": self._params, "mode": mode, "config": self._config}
        dataset = _call_with(input_fn, available)
        if not isinstance(dataset, Dataset):
            raise ConfigurationError(
                f"input_fn must return a tf.data.Dataset, received {type(dataset).__name__}"
            )
        key = (mode, repr(dataset.element_spec))
        if key not in self._programs:
            self._programs[key] = self._program_type(self, mode, dataset.element_spec)
        return self._programs[key], iter(dataset)

    def _take(self, batches: Iterator[Any], mode: str) -> list[Any] | None:
        """The elements of the next execution, or None when fewer remain."""
        elements, wanted = [], self._elements_per_execution(mode)
        for element in batches:
            elements.append(element)
            if len(elements) == wanted:
                return elements
        return None

    def _call_model_fn(self, features: Any, labels: Any, mode: str) -> EstimatorSpec:
        v1_train.reset_global_step()
        available = {"labels": labels, "mode": mode, "params": self._params, "config": self._config}
        spec = _call_with(self._model_fn, available, first=(features,))
        if not isinstance(spec, EstimatorSpec):
            raise ConfigurationError(
                f"model_fn must return an EstimatorSpec, received {type(spec).__name__}"
            )
        for name in ("training_hooks", "evaluation_hooks", "prediction_hooks"):
            _refuse(f"EstimatorSpec {name}", getattr(spec, name))
        if spec.mode != mode:
            raise ConfigurationError(
                f"model_fn returned an EstimatorSpec for mode {spec.mode!r} when called with "
                f"mode {mode!r}"
            )
        return spec

    def _restore(self, program: _Program) -> None:
        """Give ``program``'s variables the estimator's values (by creation order)."""
        if self._state is None or not program.variables:
            return
        shapes = [v.shape for v in program.variables]
        if shapes != [s.shape for s in self._state]:
            raise IncompatibleStateError(
                f"the {program.mode} program's variables ({shapes}) differ from the trained "
                f"ones ({[s.shape for s in self._state]}); model_fn must create the same "
                "variables in the same order in every mode"
            )
        for variable, value in zip(program.variables, self._state, strict=True):
            variable.assign(value)

    def _save(self, program: _Program) -> None:
        self._state = [v.numpy() for v in program.variables]
        if not self._names:  # the first program's names (TF names them in a fresh graph)
            self._names = [v.name for v in program.variables]
        step = v1_train.get_global_step()
        if step is not None:
            step.value[...] = self._global_step


def _merge_leading(outputs: Any) -> Any:
    """Merge the iteration and replica axes of outfed arrays."""
    if isinstance(outputs, dict):
        return {k: _merge_leading(v) for k, v in outputs.items()}
    array = np.asarray(outputs)
    return array.reshape(-1, *array.shape[2:])


def _unstack(outputs: Any) -> Iterator[Any]:
    """Split along the first axis: a dict of arrays into dicts, an array into rows."""
    if isinstance(outputs, dict):
        keys = list(outputs)
        for i in range(len(outputs[keys[0]])):
            yield {k: outputs[k][i] for k in keys}
    else:
        yield from np.asarray(outputs)
