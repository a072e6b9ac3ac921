"""``ipu.ipu_pipeline_estimator``: ``IPUPipelineEstimator`` and ``IPUPipelineEstimatorSpec``.

As :class:`~ipusim.compat.ipu.ipu_estimator.IPUEstimator`, but ``model_fn(mode, params,
config)`` (no features or labels: the first stage receives them from the infeed) returns the
pipeline's stages, and each device execution is ``pipelining_ops.pipeline(...,
repeat_count=iterations_per_loop)``: one step is one weight update of
``gradient_accumulation_count`` mini-batches, so an execution consumes ``iterations_per_loop *
gradient_accumulation_count`` batches (IPU TensorFlow 2's ``IPUPipelineEstimator``).

Training outfeeds the loss (``outfeed_loss``); evaluation outfeeds the last stage's outputs and
calls ``eval_metrics_fn`` on them on the host once, on every evaluated batch (its result must
hold ``"loss"``; ``tf.compat.v1.metrics`` values are reduced over all batches); prediction
yields the last stage's outputs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.compat.ipu.ipu_estimator import (
    IPUEstimator,
    _call_with,
    _Program,
    fresh_layer_names,
)
from ipusim.compat.runtime import context
from ipusim.compat.runtime.function import function
from ipusim.compat.runtime.pipeline_op import pipeline
from ipusim.compat.tf import v1_metrics
from ipusim.compat.tf.estimator import ModeKeys
from ipusim.errors import ConfigurationError, InvalidTypeError, KeyNotFoundError

__all__ = ["IPUPipelineEstimator", "IPUPipelineEstimatorSpec"]


class IPUPipelineEstimatorSpec:
    """What a pipeline ``model_fn`` returns.

    Raises:
        ValueError: training without ``optimizer_function`` or evaluating without
            ``eval_metrics_fn`` (IPU TensorFlow's messages).
    """

    def __init__(
        self,
        mode: str,
        computational_stages: list[Callable[..., Any]],
        gradient_accumulation_count: int | None = None,
        eval_metrics_fn: Callable[..., Any] | None = None,
        optimizer_function: Callable[..., Any] | None = None,
        device_mapping: Any = None,
        pipeline_schedule: Any = None,
        inputs: Any = None,
        **pipeline_op_kwargs: Any,
    ) -> None:
        if mode == ModeKeys.TRAIN and not optimizer_function:
            raise ConfigurationError(
                "`IPUPipelineEstimatorSpec` must contain `optimizer_function` when training"
            )
        if mode == ModeKeys.EVAL and not eval_metrics_fn:
            raise ConfigurationError(
                "`IPUPipelineEstimatorSpec` must contain `eval_metrics_fn` when evaluating"
            )
        self.mode = mode
        self.computational_stages = list(computational_stages)
        self.gradient_accumulation_count = gradient_accumulation_count
        self.eval_metrics_fn = eval_metrics_fn
        self.optimizer_function = optimizer_function
        self.device_mapping = device_mapping
        self.pipeline_schedule = pipeline_schedule
        self.inputs = inputs
        self.pipeline_op_kwargs = pipeline_op_kwargs


class _PipelineProgram(_Program):
    """One mode's pipeline program: the stages record the variables they read."""

    def __init__(self, estimator: IPUEstimator, mode: str, element_spec: Any) -> None:
        super().__init__(estimator, mode, element_spec)
        self.stage_variables: dict[int, list[Any]] = {}
        self.metrics_fn: Callable[..., Any] | None = None
        self.function = function(self._pipeline)

    def _recording(self, index: int, stage: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(stage)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            outputs = stage(*args, **kwargs)
            ctx = context.current()
            assert ctx is not None  # pipeline() traces its stages
            self.stage_variables[index] = list(ctx.graph.variables)
            return outputs

        return recorded

    def _pipeline(self) -> Any:
        estimator = self.estimator
        assert isinstance(estimator, IPUPipelineEstimator)  # the one whose _program_type this is
        with fresh_layer_names():
            spec = estimator._call_pipeline_model_fn(self.mode)
            self.metrics_fn = spec.eval_metrics_fn
            kwargs = dict(spec.pipeline_op_kwargs)
            if self.mode == ModeKeys.TRAIN:
                kwargs.update(optimizer_function=spec.optimizer_function, outfeed_loss=True)
            op = pipeline(
                [self._recording(i, s) for i, s in enumerate(spec.computational_stages)],
                gradient_accumulation_count=spec.gradient_accumulation_count,
                repeat_count=estimator.iterations_per_loop,
                inputs=spec.inputs,
                infeed_queue=self.infeed,
                outfeed_queue=self.outfeed,
                device_mapping=spec.device_mapping,
                pipeline_schedule=spec.pipeline_schedule,
                name=f"ipu_pipeline_estimator_{self.mode}",
                **kwargs,
            )
        stages = self.stage_variables
        unique = {id(v): v for index in sorted(stages) for v in stages[index]}
        self.variables = list(unique.values())
        estimator._restore(self)
        return op


class IPUPipelineEstimator(IPUEstimator):
    """Trains, evaluates and predicts a pipelined ``model_fn`` on the simulated IPUs.

    Args: as :class:`IPUEstimator` (``model_fn(mode, params, config)``).
    """

    _program_type = _PipelineProgram

    def _call_pipeline_model_fn(self, mode: str) -> IPUPipelineEstimatorSpec:
        names = set(inspect.signature(self._model_fn).parameters)
        if names & {"features", "labels"}:
            raise ConfigurationError(
                "The `model_fn` used with `IPUPipelineEstimator` must not have `features` or "
                "`labels` arguments. They are instead passed to the first pipeline stage function."
            )
        available = {"mode": mode, "params": self._params, "config": self._config}
        spec = _call_with(self._model_fn, available)
        if not isinstance(spec, IPUPipelineEstimatorSpec):
            raise InvalidTypeError(
                "The `model_fn` used with `IPUPipelineEstimator` must return "
                "`IPUPipelineEstimatorSpec`."
            )
        return spec

    def _elements_per_execution(self, mode: str) -> int:
        # One step is one pipeline run of gradient_accumulation_count mini-batches; the count
        # is in the spec, so the model_fn is asked for it once per mode before the first run.
        counts: dict[str, int] = self.__dict__.setdefault("_accumulation", {})
        if mode not in counts:
            counts[mode] = self._call_pipeline_model_fn(mode).gradient_accumulation_count or 1
        return self.iterations_per_loop * counts[mode] * self._replicas()

    def _evaluation_results(self, program: _Program, collected: list[Any]) -> dict[str, Any]:
        assert isinstance(program, _PipelineProgram) and program.metrics_fn is not None
        joined = _concatenate(collected)
        args = joined if isinstance(joined, list | tuple) else [joined]
        kwargs = joined if isinstance(joined, dict) else {}
        metrics = program.metrics_fn(**kwargs) if kwargs else program.metrics_fn(*args)
        if not isinstance(metrics, dict):
            raise InvalidTypeError(
                f"The `eval_metrics_fn` must return a dict, but got {type(metrics)}."
            )
        if "loss" not in metrics:
            raise KeyNotFoundError("The dict returned from `eval_metrics_fn` must contain 'loss'.")
        return {name: _metric_value(value) for name, value in metrics.items()}


def _concatenate(collected: list[Any]) -> Any:
    first = collected[0]
    if isinstance(first, dict):
        return {k: np.concatenate([c[k] for c in collected]) for k in first}
    if isinstance(first, list | tuple):
        return [np.concatenate([c[i] for c in collected]) for i in range(len(first))]
    return np.concatenate(collected)


def _metric_value(value: Any) -> float:
    metric = value[0] if isinstance(value, tuple | list) else value
    if isinstance(metric, v1_metrics.StreamingMetric):
        return v1_metrics.StreamingMetric.result(np.asarray(metric.total), np.asarray(metric.count))
    if np.size(np.asarray(metric)) == 0:
        raise ConfigurationError("eval_metrics_fn returned an empty metric")
    return float(np.mean(np.asarray(metric, dtype=np.float64)))
