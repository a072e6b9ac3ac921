"""``tf.estimator`` (also ``tf.compat.v1.estimator``): the pieces IPU estimators use.

``ModeKeys``, ``EstimatorSpec``, ``RunConfig``, ``TrainSpec`` / ``EvalSpec`` and
``train_and_evaluate``, as TensorFlow 2.6 defines them. The estimators themselves are
``ipu.ipu_estimator.IPUEstimator`` and ``ipu.ipu_pipeline_estimator.IPUPipelineEstimator``
(:mod:`ipusim.compat.ipu.ipu_estimator`); a plain ``tf.estimator.Estimator`` runs on the CPU in
TensorFlow and is not simulated.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass, field
from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError

__all__ = [
    "Estimator",
    "EstimatorSpec",
    "EvalSpec",
    "ModeKeys",
    "RunConfig",
    "TrainSpec",
    "train_and_evaluate",
]


class ModeKeys:
    """The three estimator modes (their string values are TensorFlow's)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)


@dataclass
class EstimatorSpec:
    """What a ``model_fn`` returns: the ops and tensors of one mode.

    Raises:
        ValueError: an unknown ``mode``, or a mode without the tensors it needs (TRAIN: ``loss``
            and ``train_op``; EVAL: ``loss``; PREDICT: ``predictions``), as TensorFlow checks.
    """

    mode: str
    predictions: Any = None
    loss: Any = None
    train_op: Any = None
    eval_metric_ops: Any = None
    export_outputs: Any = None
    training_chief_hooks: Any = None
    training_hooks: Any = None
    scaffold: Any = None
    evaluation_hooks: Any = None
    prediction_hooks: Any = None

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ConfigurationError(
                f"mode={self.mode!r} is not one of {_MODES} (tf.estimator.ModeKeys)"
            )
        if self.mode == ModeKeys.TRAIN and self.train_op is None:
            raise ConfigurationError("Missing train_op.")
        if self.mode in (ModeKeys.TRAIN, ModeKeys.EVAL) and self.loss is None:
            raise ConfigurationError("Missing loss.")
        if self.mode == ModeKeys.PREDICT and self.predictions is None:
            raise ConfigurationError("Missing predictions.")


@dataclass
class RunConfig:
    """``tf.estimator.RunConfig``: where checkpoints and summaries go and how often to log.

    ``model_dir`` defaults to a new temporary directory, as the Estimator chooses one.
    """

    model_dir: str | None = None
    tf_random_seed: int | None = None
    save_summary_steps: int = 100
    save_checkpoints_steps: int | None = None
    save_checkpoints_secs: int | None = None
    session_config: Any = None
    keep_checkpoint_max: int = 5
    keep_checkpoint_every_n_hours: int = 10000
    log_step_count_steps: int = 100
    train_distribute: Any = None
    device_fn: Any = None
    protocol: Any = None
    eval_distribute: Any = None
    experimental_distribute: Any = None
    experimental_max_worker_delay_secs: Any = None
    session_creation_timeout_secs: int = 7200
    checkpoint_save_graph_def: bool = True

    def __post_init__(self) -> None:
        if self.model_dir is None:
            self.model_dir = tempfile.mkdtemp(prefix="ipusim_estimator_")

    def replace(self, **kwargs: Any) -> RunConfig:
        """A copy with the given fields changed."""
        return dataclasses.replace(self, **kwargs)


@dataclass
class TrainSpec:
    input_fn: Any
    max_steps: int | None = None
    hooks: Any = field(default_factory=list)


@dataclass
class EvalSpec:
    input_fn: Any
    steps: int | None = 100
    name: str | None = None
    hooks: Any = field(default_factory=list)
    exporters: Any = None
    start_delay_secs: int = 120
    throttle_secs: int = 600


def train_and_evaluate(estimator: Any, train_spec: TrainSpec, eval_spec: EvalSpec) -> Any:
    """Train to ``train_spec.max_steps``, then evaluate once (one local worker, as TensorFlow
    does without a cluster). Returns ``(eval metrics, export results)``."""
    estimator.train(train_spec.input_fn, hooks=train_spec.hooks, max_steps=train_spec.max_steps)
    metrics = estimator.evaluate(
        eval_spec.input_fn, steps=eval_spec.steps, hooks=eval_spec.hooks, name=eval_spec.name
    )
    return metrics, []


class Estimator:
    """``tf.estimator.Estimator`` runs on the CPU in TensorFlow: not simulated by ipusim."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise UnsupportedError(
            "tf.estimator.Estimator is not simulated by ipusim (it runs on the CPU); use "
            "ipu.ipu_estimator.IPUEstimator with the same model_fn to run it on the IPU"
        )
