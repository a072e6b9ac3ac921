"""Layer wrappers: ``Wrapper`` (the base) and ``TimeDistributed``."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import shape as s
from ipusim.keras.engine.layer import Layer


class Wrapper(Layer):
    """Base class of layers that wrap another layer (``self.layer``), as tf.keras' Wrapper."""

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ConfigurationError(
                f"{type(self).__name__}: `layer` must be a Keras layer instance, received {layer!r}"
            )
        super().__init__(**kwargs)
        self.layer = layer

    def get_config(self) -> dict[str, Any]:
        from ipusim.keras.engine.saving import serialize_layer

        return {**super().get_config(), "layer": serialize_layer(self.layer)}

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Layer:
        from ipusim.keras.engine.saving import _deserialize_layer

        config = dict(config)
        config["layer"] = _deserialize_layer(config["layer"], custom_objects)
        return super().from_config(config)


class TimeDistributed(Wrapper):
    """Applies ``layer`` to every time step of ``(batch, time, ...)`` inputs: the batch and time
    axes are merged, the layer runs once on ``(batch * time, ...)``, and they are split again
    (what tf.keras does when the time size is known)."""

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if inputs.ndim < 3:
            raise ConfigurationError(
                f"TimeDistributed expects inputs of rank >= 3 (batch, time, ...), received "
                f"shape {inputs.shape}"
            )
        steps = inputs.shape[1]
        if steps is None or any(d is None for d in inputs.shape[2:]):
            raise ConfigurationError(
                f"TimeDistributed: ipusim needs the time and feature sizes known, received "
                f"shape {inputs.shape}"
            )
        merged = s.reshape(inputs, (-1, *inputs.shape[2:]))
        kwargs = {"training": training} if self.layer._call_accepts_training else {}
        y = self.layer(merged, **kwargs)
        return s.reshape(y, (-1, steps, *y.shape[1:]))
