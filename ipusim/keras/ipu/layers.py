"""``keras.ipu.layers`` (Graphcore's Keras, SDK 3.x): layers that capture gradients.

``CaptureUpstreamGradients(layer)`` captures the gradient of the loss with respect to the
wrapped layer's output; ``CaptureActivationGradients(layer)`` the gradient with respect to the
input of the layer's activation function (its pre-activation). During ``fit`` the gradients are
passed to the optimizer's ``apply_gradients(..., captured_grads={tag: gradient})`` when the
optimizer's ``supports_captured_grads`` is true (``keras.ipu.optimizers.ALSOptimizer`` uses them
for its statistics). The wrappers add no computation to the forward pass; the captured
gradients are tensors the backward pass computes anyway.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras import activations
from ipusim.keras.engine.captures import capture
from ipusim.keras.engine.layer import Layer

__all__ = ["CaptureActivationGradients", "CaptureUpstreamGradients"]


class _GradientCaptureLayerBase(Layer):
    def __init__(self, layer: Layer, tag: str) -> None:
        if not isinstance(layer, Layer):
            raise ConfigurationError("Expected an instance of a keras.engine.base_layer.Layer")
        super().__init__(name=tag)
        self.layer = layer
        self._tag = tag

    @property
    def tag(self) -> str:
        return self._tag

    def build(self, input_shape: Any) -> None:
        if not self.layer.built:
            self.layer.build(input_shape)
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> Any:
        return self.layer.compute_output_shape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "wrapped_layer_type": type(self.layer).__name__,
            "wrapped_layer_config": self.layer.get_config(),
            "tag": self._tag,
        }


class CaptureUpstreamGradients(_GradientCaptureLayerBase):
    """Wraps ``layer`` and captures the gradient with respect to its output.

    Args:
        layer: the Keras layer to wrap (the layer itself, not its output).
        tag: key of the gradient in ``captured_grads``; default ``<layer name>_cug``.
    """

    def __init__(self, layer: Layer, tag: str | None = None) -> None:
        super().__init__(layer, tag if tag is not None else f"{layer.name}_cug")

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        return capture(self._tag, self.layer(inputs, *args, **kwargs))


class CaptureActivationGradients(_GradientCaptureLayerBase):
    """Wraps ``layer`` and captures the gradient with respect to its activation's input.

    Args:
        layer: a Keras layer with an ``activation`` (Dense, Conv2D, ...).
        tag: key prefix; the gradient's key is ``<tag>_activation``, default tag
            ``<layer name>_cag``.

    Raises:
        ConfigurationError: (a ValueError) the layer has no activation function.
    """

    def __init__(self, layer: Layer, tag: str | None = None) -> None:
        super().__init__(layer, tag if tag is not None else f"{layer.name}_cag")
        if not self.layer_is_supported(layer):
            raise ConfigurationError(
                f"Layer {layer.name} does not use an activation function so is not supported "
                "by keras.ipu.layers.CaptureActivationGradients"
            )

    @staticmethod
    def layer_is_supported(layer: Layer) -> bool:
        """Whether ``layer`` has an activation function to capture around."""
        if not isinstance(layer, Layer):
            raise ConfigurationError("Expected an instance of a keras.engine.base_layer.Layer")
        return callable(getattr(layer, "activation", None))

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        # The wrapped layer without its activation gives the pre-activation; the activation is
        # then applied to the captured tensor, so the output is the layer's own.
        # Layers with an activation (layer_is_supported) define it; Layer itself does not.
        activation = self.layer.activation  # type: ignore[attr-defined]
        self.layer.activation = activations.get("linear")
        try:
            pre_activation = self.layer(inputs, *args, **kwargs)
        finally:
            self.layer.activation = activation
        return activation(capture(f"{self._tag}_activation", pre_activation))
