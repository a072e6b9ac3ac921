"""Optimizers, as ``tf.keras.optimizers`` in TensorFlow 2.4–2.6 (Keras 2 ``optimizer_v2``).

Also the tf-keras 2.11+ ``AdamW``, ``Lion`` and ``Adafactor``, ``legacy`` (the same classes), and
the IPU Addons optimizers (``ipu_tensorflow_addons.keras.optimizers`` resolves here).

``get(identifier)`` resolves what ``model.compile(optimizer=...)`` receives: a name
(``"adam"``, case-insensitive), an optimizer instance (returned as is) or a
``{"class_name": ..., "config": ...}`` dict.
"""

from __future__ import annotations

import difflib
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras.optimizers import legacy, schedules
from ipusim.keras.optimizers.adaptive import Adadelta, Adamax, Ftrl, Nadam
from ipusim.keras.optimizers.algorithms import SGD, Adagrad, Adam, RMSprop
from ipusim.keras.optimizers.ipu_addons import (
    AdamIpuOptimizer,
    IpuOptimizerBase,
    LAMBIpuOptimizer,
    SGDIpuOptimizer,
)
from ipusim.keras.optimizers.modern import Adafactor, AdamW, Lion
from ipusim.keras.optimizers.optimizer import Optimizer

__all__ = [
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "AdamIpuOptimizer",
    "Adamax",
    "Ftrl",
    "IpuOptimizerBase",
    "LAMBIpuOptimizer",
    "Lion",
    "Nadam",
    "Optimizer",
    "RMSprop",
    "SGDIpuOptimizer",
    "deserialize",
    "get",
    "legacy",
    "schedules",
    "serialize",
]

#: Built-in optimizers by lower-case name (Keras resolves built-in class names case-insensitively).
_BUILTINS: dict[str, type[Optimizer]] = {
    cls.__name__.lower(): cls
    for cls in (SGD, RMSprop, Adam, Adagrad, Adadelta, Adamax, Nadam, Ftrl, AdamW, Lion, Adafactor)
}


def _ipu_optimizers() -> dict[str, type[Optimizer]]:
    """Graphcore's optimizers and wrappers (ipu_tensorflow_addons, keras.ipu.optimizers) by
    their exact class names (imported here: the wrappers import the Keras extensions)."""
    from ipusim.keras.optimizers.accumulation import GradientAccumulationOptimizer
    from ipusim.keras.optimizers.als import ALSGradientAccumulationOptimizer, ALSOptimizer

    classes = (
        AdamIpuOptimizer,
        LAMBIpuOptimizer,
        SGDIpuOptimizer,
        ALSOptimizer,
        ALSGradientAccumulationOptimizer,
        GradientAccumulationOptimizer,
    )
    return {cls.__name__: cls for cls in classes}


def serialize(optimizer: Optimizer) -> dict[str, Any]:
    """``{"class_name": <class name>, "config": optimizer.get_config()}``."""
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def _unknown(name: object, known: list[str]) -> ValueError:
    close = difflib.get_close_matches(str(name).lower(), known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(f"Unknown optimizer: {name!r}. Valid names: {', '.join(known)}.{hint}")


def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Optimizer:
    """The optimizer a :func:`serialize` dict describes.

    Args:
        config: ``{"class_name": ..., "config": {...}}``; built-in class names match
            case-insensitively (``"adam"``, ``"Adam"``, ``"ADAM"``).
        custom_objects: extra ``{class_name: class}`` entries, matched exactly.

    Raises:
        ValueError: for a malformed dict or an unknown class name (with a close-match suggestion).
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ConfigurationError(
            "optimizer config must be a dict with 'class_name' and 'config' keys, received "
            f"{config!r}"
        )
    class_name = config["class_name"]
    custom = dict(custom_objects or {})
    cls: type[Optimizer]
    if class_name in custom:
        cls = custom[class_name]
    elif isinstance(class_name, str) and class_name.lower() in _BUILTINS:
        cls = _BUILTINS[class_name.lower()]
    elif class_name == "LossScaleOptimizer":
        from ipusim.keras.mixed_precision import LossScaleOptimizer

        return LossScaleOptimizer.from_config(dict(config.get("config") or {}), custom_objects)
    elif isinstance(class_name, str) and class_name in _ipu_optimizers():
        cls = _ipu_optimizers()[class_name]
        return cls.from_config(dict(config.get("config") or {}), custom_objects)
    else:
        raise _unknown(class_name, sorted(_BUILTINS) + sorted(custom))
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier: Any) -> Optimizer:
    """Resolve an optimizer identifier, as ``tf.keras.optimizers.get``.

    Args:
        identifier: an :class:`Optimizer` (returned as is), a name such as ``"sgd"``,
            ``"RMSprop"`` or ``"adam"`` (default arguments), a config dict, or a script's TF1
            optimizer (``tf.compat.v1.train.Optimizer`` subclass), wrapped in a
            :class:`~ipusim.keras.optimizers.tf_optimizer.TFOptimizer` as tf.keras does.

    Raises:
        ValueError: for an unknown name (listing the valid ones) or an uninterpretable value.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if getattr(identifier, "is_tf1", False):  # a script's TF1 optimizer: Keras wraps it
        from ipusim.keras.optimizers.tf_optimizer import TFOptimizer

        return TFOptimizer(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    raise ConfigurationError(
        f"Could not interpret optimizer identifier: {identifier!r}; expected an Optimizer, one of "
        f"{sorted(_BUILTINS)} or a {{'class_name': ..., 'config': ...}} dict"
    )
