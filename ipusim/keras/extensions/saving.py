"""The IPU options of a Keras model, as JSON in a saved model, and their restoration.

IPU TensorFlow keeps a model's IPU-specific settings in its ``get_config()`` (gradient
accumulation, pipelining options and device mapping, the pipeline stage assignment, infeed /
outfeed options, asynchronous callbacks; API reference §8) so that a model saved and loaded
inside an ``IPUStrategy`` scope runs as it did. ipusim saves the same settings next to the
model's config and restores them by calling the same setters, so every check they make runs
again. Enums and ``PipelineStageOptions`` are saved by name.
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError, ModelFileError
from ipusim.keras.keyword_init import fields

__all__ = ["ipu_state", "restore_ipu_state"]

log = logging.getLogger("ipusim")


def _enums() -> dict[str, type[Enum]]:
    from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod
    from ipusim.pipelining import PipelineSchedule, RecomputationMode

    return {
        cls.__name__: cls
        for cls in (PipelineSchedule, RecomputationMode, GradientAccumulationReductionMethod)
    }


def _encode(value: Any, where: str) -> Any:
    from ipusim.pipelining import PipelineStageOptions

    if isinstance(value, Enum) and type(value).__name__ in _enums():
        return {"__enum__": type(value).__name__, "name": value.name}
    if isinstance(value, PipelineStageOptions):
        names = "convolution_options matmul_options slice_options"
        return {"__stage_options__": fields(value, names)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_encode(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v, where) for k, v in value.items()}
    name = getattr(value, "name", None)  # a dtype, e.g. gradient_accumulation_dtype
    if isinstance(name, str):
        return {"__dtype__": name}
    raise InvalidTypeError(f"{where}: {value!r} cannot be saved")


def _decode(value: Any) -> Any:
    from ipusim.pipelining import PipelineStageOptions

    if isinstance(value, dict):
        if "__enum__" in value:
            return _enums()[value["__enum__"]][value["name"]]
        if "__stage_options__" in value:
            return PipelineStageOptions(**value["__stage_options__"])
        if "__dtype__" in value:
            return value["__dtype__"]
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _pipelining_call(model: Any) -> dict[str, Any] | None:
    """The arguments of the model's last ``set_pipelining_options`` call, or None."""
    options = getattr(model, "_pipelining_options", None)
    if options is None:
        return None
    mapping = options.device_mapping
    return {
        "gradient_accumulation_steps_per_replica": options.gradient_accumulation_steps_per_replica,
        "device_mapping": None if mapping is None else list(mapping),
        "accumulate_outfeed": options.accumulate_outfeed,
        "experimental_normalize_gradients": options.experimental_normalize_gradients,
        "gradient_accumulation_reduction_method": options.reduction_method,
        **dict(options.kwargs),
    }


def _stage_assignment(model: Any) -> list[int] | None:
    """The stage of every layer invocation, in get_pipeline_stage_assignment() order."""
    if not model._is_pipelined():
        return None
    return [int(a.pipeline_stage) for a in model.get_pipeline_stage_assignment()]


def ipu_state(model: Any) -> dict[str, Any] | None:
    """The IPU settings of ``model`` (None for a model made outside an ``IPUStrategy`` scope).

    Options that cannot be written as JSON are left out with a warning.
    """
    from ipusim.keras.extensions.base import KerasExtensionBase

    if not isinstance(model, KerasExtensionBase):
        return None
    steps, method = model._plain_gradient_accumulation
    state: dict[str, Any] = {
        "gradient_accumulation": {
            "gradient_accumulation_steps_per_replica": steps,
            "gradient_accumulation_reduction_method": method.upper(),
            **model._gradient_accumulation_kwargs,
        },
        "pipelining": _pipelining_call(model),
        "pipeline_stage_assignment": _stage_assignment(model),
        "infeed": dict(model._infeed_kwargs),
        "outfeed": dict(model._outfeed_kwargs),
        "asynchronous_callbacks": bool(model._asynchronous_callbacks),
    }
    saved: dict[str, Any] = {}
    for key, value in state.items():
        try:
            saved[key] = _encode(value, key)
        except TypeError as exc:
            log.warning("model.save: the IPU option %s is not saved (%s).", key, exc)
    return saved


def restore_ipu_state(model: Any, state: dict[str, Any], filepath: str) -> None:
    """Apply saved IPU settings to a freshly loaded model, through the public setters.

    Raises:
        ModelFileError: the saved settings are damaged or no longer fit the model.
    """
    from ipusim.keras.extensions.base import KerasExtensionBase

    if not isinstance(model, KerasExtensionBase):
        log.warning(
            "%s holds IPU options (gradient accumulation, pipelining, stage assignment) but was "
            "loaded outside an IPUStrategy scope, so they do not apply. Load it inside "
            "`with IPUStrategy().scope():` to keep them.",
            filepath,
        )
        return
    try:
        state = _decode(state)
        accumulation = state.get("gradient_accumulation")
        if accumulation:
            model.set_gradient_accumulation_options(**accumulation)
        if state.get("pipelining") is not None:
            model.set_pipelining_options(**state["pipelining"])
        stages = state.get("pipeline_stage_assignment")
        if stages is not None:
            assignments = model.get_pipeline_stage_assignment()
            if len(assignments) != len(stages):
                raise ConfigurationError(
                    f"{len(stages)} stages were saved for {len(assignments)} layer invocations"
                )
            for assignment, stage in zip(assignments, stages):
                assignment.pipeline_stage = stage
            model.set_pipeline_stage_assignment(assignments)
        if state.get("infeed"):
            model.set_infeed_queue_options(**state["infeed"])
        if state.get("outfeed"):
            model.set_outfeed_queue_options(**state["outfeed"])
        if state.get("asynchronous_callbacks"):
            model.set_asynchronous_callbacks(True)
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
        raise ModelFileError(
            f"{filepath!r}: the saved IPU options cannot be restored ({type(exc).__name__}: "
            f"{exc}). Load the model outside an IPUStrategy scope to get it without them, then "
            "set the options again."
        ) from None
