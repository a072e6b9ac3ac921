"""Serving: ``export_for_ipu_serving`` (the Keras extension method) and
:func:`simulate_predict_execution`, the one seam :mod:`ipusim.serving` uses to lower and simulate
an extended model's predict step."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.keras.engine.nest import flatten, map_structure

if TYPE_CHECKING:
    from ipusim.graph.spec import TensorSpec
    from ipusim.session import LoweredRun
    from ipusim.trace import Report


@dataclass(frozen=True)
class PredictExecution:
    """One simulated execution of a model's predict step.

    Attributes:
        lowered: the lowered step (its ``config`` is the active IPUConfig, or None).
        report: the simulation of one execution (also ``model.last_simulation``).
    """

    lowered: LoweredRun
    report: Report


def simulate_predict_execution(
    model: Any, input_specs: Any, iterations: int, keep_all_records: bool = False
) -> PredictExecution:
    """Lower ``model``'s predict step for inputs of ``input_specs`` and simulate one execution
    of the on-device loop of ``iterations`` steps on the configured system.

    Args:
        model: a Keras model created in an ``IPUStrategy`` scope.
        input_specs: the model's input ``TensorSpec`` structure, batch dimension included.
        iterations: steps (requests) in the execution.
        keep_all_records: keep every trace record whatever ``trace_detail`` says.

    Raises:
        ConfigurationError: the model was not created in an IPUStrategy scope.
        OutOfMemoryError: the step does not fit the IPU.
    """
    from ipusim.keras.extensions.base import KerasExtensionBase
    from ipusim.session.options import full_trace

    if not isinstance(model, KerasExtensionBase):
        raise ConfigurationError(
            f"Model {getattr(model, 'name', model)!r} was not created inside an IPUStrategy "
            "scope, so its predict step cannot be simulated; create it in "
            "`with ipusim.IPUStrategy().scope():`"
        )
    config, system = model._ipu_environment()
    batch = _batch_of(input_specs)
    samples = map_structure(
        lambda s: np.zeros((batch * iterations, *s.shape[1:]), s.dtype), input_specs
    )
    lowered = model._ipu_program("predict", samples, None, None, batch, config, system, iterations)
    with full_trace() if keep_all_records else contextlib.nullcontext():
        report, _ = model._simulate(lowered, [(0, iterations)], config, system)
    return PredictExecution(lowered, report)


def _batch_of(input_specs: Any) -> int:
    specs: list[TensorSpec] = flatten(input_specs)
    batch = specs[0].shape[0] if specs and specs[0].shape else None
    if batch is None:
        raise ConfigurationError(
            f"simulate_predict_execution: `input_specs` need a known batch size, received "
            f"{input_specs!r}"
        )
    return int(batch)


class ServingExtension:
    """Adds ``export_for_ipu_serving`` to models created in an IPUStrategy scope."""

    def export_for_ipu_serving(
        self,
        export_dir: Any,
        batch_size: int | None = None,
        output_names: Any = None,
        preprocessing_step: Any = None,
        preprocessing_step_signature: Any = None,
        postprocessing_step: Any = None,
        postprocessing_step_signature: Any = None,
    ) -> Any:
        """Export this model for serving (see :func:`ipusim.serving.export_keras`).

        Args:
            export_dir: a new or empty directory.
            batch_size: samples per request; default: the batch size of the model's inputs.
            output_names: names for the outputs.
            preprocessing_step / postprocessing_step (and their ``_signature``): functions run
                on the host before / after the IPU program (:mod:`ipusim.serving.host_steps`).

        Returns:
            The loaded export: call it with one request; ``.timing`` has the simulated figures.
        """
        from ipusim.serving import export_keras

        return export_keras(
            self,
            export_dir,
            batch_size=batch_size,
            output_names=output_names,
            preprocessing_step=preprocessing_step,
            preprocessing_step_signature=preprocessing_step_signature,
            postprocessing_step=postprocessing_step,
            postprocessing_step_signature=postprocessing_step_signature,
        )
