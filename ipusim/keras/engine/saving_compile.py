"""What ``compile()`` was given, as JSON in a saved model, and the ``compile()`` that restores it.

The optimizer is saved as ``{"class_name", "config"}``. Losses and metrics are saved in the
structure they were given (one, a list, or a dict per output); each one is:

- a name (``"mse"``, ``"accuracy"``) as the name;
- a loss or metric object (``SparseCategoricalCrossentropy(from_logits=True)``,
  ``SparseCategoricalAccuracy()``) as ``{"class_name", "config"}``, so its arguments come back;
- a built-in loss or metric function as its name;
- anything else (a function or class of the user's) by its name, found again through
  ``custom_objects`` when the model is loaded (as Keras does).

Each saved loss is wrapped as ``{"__loss__": ...}`` and each metric object or function as
``{"__metric__": ...}``, which keeps them apart from the dicts that map outputs to losses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ipusim.errors import InvalidTypeError, ModelFileError

__all__ = ["compile_config", "compile_from_config"]

_LOSS, _METRIC = "__loss__", "__metric__"


def _walk(value: Any, leaf: Callable[[Any], Any], marker: str | None = None) -> Any:
    """Apply ``leaf`` to every leaf of a loss / metric structure (lists, tuples, dicts)."""
    if isinstance(value, dict) and (marker is None or marker not in value):
        return {str(k): _walk(v, leaf, marker) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, leaf, marker) for v in value]
    return leaf(value)


def _encode_loss(loss: Any) -> Any:
    from ipusim.keras import losses

    if loss is None or isinstance(loss, str):
        return loss
    if isinstance(loss, losses.Loss):
        try:
            return {_LOSS: losses.serialize(loss)}
        except ValueError:  # a Loss class of the user's: restored through custom_objects
            return {_LOSS: {"class_name": type(loss).__name__, "config": loss.get_config()}}
    name = getattr(loss, "__name__", None)
    if name is None:
        raise InvalidTypeError(f"the loss {loss!r} has no name to save it by")
    return {_LOSS: {"function": name}}


def _encode_metric(metric: Any) -> Any:
    from ipusim.keras.metrics.base import Metric

    if metric is None or isinstance(metric, str):
        return metric
    if isinstance(metric, Metric):
        return {_METRIC: {"class_name": type(metric).__name__, "config": metric.get_config()}}
    name = getattr(metric, "__name__", None)
    if name is None:
        raise InvalidTypeError(f"the metric {metric!r} has no name to save it by")
    return {_METRIC: name}


def compile_config(model: Any) -> dict[str, Any]:
    """The arguments of the model's ``compile()`` as JSON-able values.

    Raises:
        TypeError: a loss or metric that cannot be named (e.g. an object with no class).
    """
    from ipusim.keras import optimizers

    return {
        "optimizer": optimizers.serialize(model.optimizer),
        "loss": _walk(model._loss_spec, _encode_loss),
        "loss_weights": model._loss_weights,
        "metrics": _walk(model._metrics_spec, _encode_metric),
        "weighted_metrics": _walk(getattr(model, "_weighted_metrics_spec", None), _encode_metric),
        "steps_per_execution": model.steps_per_execution,
    }


def _custom(name: str, custom_objects: dict[str, Any], what: str) -> Any:
    if name in custom_objects:
        return custom_objects[name]
    raise ModelFileError(
        f"the model was compiled with the {what} {name!r}, which is not built into ipusim. Pass "
        f"it to load_model(..., custom_objects={{{name!r}: {name}}}), or load the model with "
        "compile=False and compile it yourself."
    )


def _decode_loss(value: Any, custom_objects: dict[str, Any]) -> Any:
    from ipusim.keras import losses

    if not isinstance(value, dict):
        return value
    saved = value[_LOSS]
    if "function" in saved:
        name = saved["function"]
        if name in custom_objects:
            return custom_objects[name]
        try:
            return losses.get(name)
        except ValueError:
            return _custom(name, custom_objects, "loss function")
    name = saved["class_name"]
    cls = custom_objects.get(name)
    if cls is not None:
        return cls.from_config(dict(saved.get("config") or {}))
    try:
        return losses.get(saved)
    except ValueError:
        return _custom(name, custom_objects, "loss class")


def _decode_metric(value: Any, custom_objects: dict[str, Any]) -> Any:
    from ipusim.keras import metrics

    if not isinstance(value, dict):
        return value
    saved = value[_METRIC]
    name = saved if isinstance(saved, str) else saved["class_name"]
    if name in custom_objects:
        found = custom_objects[name]
        return (
            found.from_config(dict(saved.get("config") or {})) if isinstance(saved, dict) else found
        )
    try:
        return metrics.deserialize(saved)
    except ValueError:
        return _custom(name, custom_objects, "metric")


def compile_from_config(
    model: Any, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
) -> None:
    """Compile ``model`` as the saved ``config`` says.

    Raises:
        ModelFileError: the config is damaged, or names a loss / metric / optimizer that is
            neither built in nor in ``custom_objects``.
    """
    from ipusim.keras import optimizers

    custom = dict(custom_objects or {})
    try:
        optimizer = optimizers.deserialize(config["optimizer"], custom_objects=custom)
        loss = _walk(config.get("loss"), lambda v: _decode_loss(v, custom), _LOSS)
        metrics = _walk(config.get("metrics"), lambda v: _decode_metric(v, custom), _METRIC)
        weighted = _walk(
            config.get("weighted_metrics"), lambda v: _decode_metric(v, custom), _METRIC
        )
        steps = config.get("steps_per_execution")
    except (KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(
            f"the saved compile arguments are damaged ({type(exc).__name__}: {exc}); load the "
            "model with compile=False and compile it again"
        ) from None
    except ValueError as exc:  # an optimizer name ipusim does not know
        raise ModelFileError(
            f"the saved compile arguments cannot be restored: {exc}. Pass the missing class in "
            "custom_objects, or load the model with compile=False."
        ) from None
    model.compile(
        optimizer=optimizer,
        loss=loss,
        loss_weights=config.get("loss_weights"),
        metrics=metrics,
        weighted_metrics=weighted,
        steps_per_execution=steps,
    )
    _check_compiled(model)


def _check_compiled(model: Any) -> None:
    """Resolve now what ``compile`` leaves to the first ``fit``: each loss and its weight per
    output, and each metric name, so a damaged name fails the load, not a later fit."""
    from ipusim.keras import metrics as metrics_module
    from ipusim.keras.engine.compile_utils import LossesContainer, MetricsContainer

    names = model.output_names
    losses = (
        LossesContainer(model._loss_spec, model._loss_weights, names).losses
        if model._loss_spec is not None
        else []
    )
    MetricsContainer(model._metrics_spec, losses, names, model._weighted_metrics_spec)
    for spec in (model._metrics_spec, model._weighted_metrics_spec):
        for identifier in _metric_leaves(spec, top=True):
            if not (isinstance(identifier, str) and identifier in metrics_module._SHAPE_RESOLVED):
                metrics_module.to_metric(identifier)


def _metric_leaves(spec: Any, top: bool) -> list[Any]:
    """The metric identifiers of a ``metrics`` argument: a list (or a list per output) of them,
    or a dict keyed by output name at the top (a dict anywhere else is a metric config)."""
    if spec is None:
        return []
    if isinstance(spec, dict) and top:
        return [leaf for value in spec.values() for leaf in _metric_leaves(value, False)]
    if isinstance(spec, list | tuple):
        return [leaf for value in spec for leaf in _metric_leaves(value, False)]
    return [spec]
