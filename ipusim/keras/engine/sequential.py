"""``keras.Sequential``: a linear stack of layers."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.spec import TensorSpec
from ipusim.keras.engine.input_layer import InputLayer
from ipusim.keras.engine.keras_tensor import KerasTensor
from ipusim.keras.engine.layer import Layer, conform_dtype
from ipusim.keras.engine.model import Model, check_input_spec


class Sequential(Model):
    """Layers applied one after the other.

    Args:
        layers: initial list of layers (an ``keras.Input`` tensor may come first).
        name: model name.
    """

    #: Each layer casts its own inputs; the model does not (as tf.keras Functional).
    _autocast = False

    def __init__(
        self, layers: list[Any] | None = None, name: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._layers: list[Layer] = []
        self._input_spec_declared: TensorSpec | None = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    def add(self, layer: Any) -> None:
        """Append a layer (or declare the input with a ``keras.Input`` tensor)."""
        if isinstance(layer, KerasTensor):
            if self._layers or self._input_spec_declared is not None:
                raise ConfigurationError(
                    "a keras.Input can only be the first element of a Sequential model"
                )
            self._input_spec_declared = layer.spec
            return
        if isinstance(layer, InputLayer):
            self._input_spec_declared = layer.output.spec
            return
        if not isinstance(layer, Layer):
            raise InvalidTypeError(
                f"The added layer must be an instance of class Layer. Received: "
                f"layer={layer!r} of type {type(layer).__name__}."
            )
        if any(layer.name == existing.name for existing in self._layers):
            raise ConfigurationError(
                f"All layers added to a Sequential model should have unique names. "
                f"Name {layer.name!r} is already the name of a layer in this model."
            )
        if (
            not self._layers
            and self._input_spec_declared is None
            and layer._batch_input_shape is not None
        ):
            self._input_spec_declared = TensorSpec(layer._batch_input_shape, layer.dtype)
        self._layers.append(layer)
        self._tracked_layers.append(layer)
        self._on_layers_changed()
        if self._input_spec_declared is not None:
            # As Keras: with a known input shape the model is built as layers are added, so a
            # layer that does not fit is reported at add() and leaves the model as it was.
            try:
                self.build(self._input_spec_declared.shape)
            except Exception:
                self._layers.pop()
                self._tracked_layers.remove(layer)
                raise

    def _on_layers_changed(self) -> None:
        """Forget the traced steps; the IPU extension's hook (a new layer invalidates a pipeline
        stage assignment)."""
        self._programs.clear()
        self._eager_cache.clear()
        if self._ipu_extension is not None:
            self._ipu_extension.layers_changed(self)

    def pop(self) -> None:
        """Remove the last layer."""
        if not self._layers:
            raise InvalidTypeError("There are no layers in the model.")
        layer = self._layers.pop()
        self._tracked_layers.remove(layer)
        self._on_layers_changed()

    @property
    def output_names(self) -> list[str]:
        return [self._layers[-1].name] if self._layers else ["output_1"]

    @property
    def input_spec_structure(self) -> Any:
        return self._input_spec_declared or self._build_input_spec

    def _ensure_built(self) -> None:
        if not self.built and self._input_spec_declared is not None and self._layers:
            self.build(self._input_spec_declared.shape)

    def trace(self, input_specs: Any, training: bool) -> Any:
        if not self._layers:
            raise ConfigurationError(
                f"Sequential model {self.name!r} has no layers; add layers before using it"
            )
        declared = self._input_spec_declared
        if declared is not None and isinstance(input_specs, TensorSpec):
            check_input_spec(self.name, 0, declared, input_specs)
        return super().trace(input_specs, training)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        declared = self._input_spec_declared
        x = inputs if declared is None else conform_dtype(inputs, declared.dtype)
        for layer in self._layers:
            x = layer(x, training=training) if layer._call_accepts_training else layer(x)
        return x

    def get_config(self) -> dict[str, Any]:
        from ipusim.keras.engine.saving import sequential_config

        return sequential_config(self)

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Sequential:
        from ipusim.keras.engine.saving import sequential_from_config

        return sequential_from_config(config, custom_objects)
