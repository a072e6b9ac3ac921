"""Functional models: a DAG of layer calls from ``keras.Input`` tensors to outputs.

Calling the model replays the layer calls on new tensors, in the order they were made (which is
topological), so a functional model traces to the same kind of op graph as any other model.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras.engine.input_layer import InputLayer
from ipusim.keras.engine.keras_tensor import KerasTensor, LayerCall
from ipusim.keras.engine.layer import Layer, _unique, conform_dtype
from ipusim.keras.engine.model import Model, check_input_spec
from ipusim.keras.engine.nest import flatten, map_structure, pack_sequence_as


def _collect_calls(inputs: list[KerasTensor], outputs: list[KerasTensor]) -> list[LayerCall]:
    """The layer calls between ``inputs`` and ``outputs``, in creation (topological) order."""
    input_ids = {id(t) for t in inputs}
    seen: dict[int, LayerCall] = {}
    stack = list(outputs)
    while stack:
        tensor = stack.pop()
        call = tensor.history
        if call is None:
            raise ConfigurationError(f"{tensor!r} was not produced by a layer call")
        if id(call) in seen:
            continue
        seen[id(call)] = call
        if id(tensor) in input_ids:
            continue
        if isinstance(call.layer, InputLayer):
            raise ConfigurationError(
                f"Graph disconnected: output depends on input {call.layer.name!r}, which is not "
                "in the model's `inputs`. Pass every keras.Input the outputs depend on."
            )
        stack.extend(call.inbound)
    return sorted(seen.values(), key=lambda c: c.order)


class Functional(Model):
    """A model defined by input and output KerasTensors.

    Args:
        inputs: a KerasTensor from ``keras.Input``, or a list/dict of them.
        outputs: the KerasTensor(s) computed from the inputs.
        name: model name.
    """

    #: Each layer casts its own inputs; the model does not (as tf.keras Functional).
    _autocast = False

    def __init__(
        self,
        inputs: Any,
        outputs: Any,
        name: str | None = None,
        trainable: bool = True,
        **kwargs: Any,
    ) -> None:
        for what, value in (("inputs", inputs), ("outputs", outputs)):
            bad = [t for t in flatten(value) if not isinstance(t, KerasTensor)]
            if bad or not flatten(value):
                raise ConfigurationError(
                    f"Functional model `{what}` must be keras.Input tensors and "
                    f"tensors computed from them; received {bad or value!r}"
                )
        flat_inputs = flatten(inputs)
        for t in flat_inputs:
            if not isinstance(t.history.layer, InputLayer):
                raise ConfigurationError(
                    f"model inputs must come from keras.Input(); {t!r} is the "
                    f"output of layer {t.history.layer.name!r}"
                )
        Model.__init__(self, name=name, trainable=trainable, **kwargs)
        self._nested_inputs = inputs
        self._nested_outputs = outputs
        self.inputs = flat_inputs
        self.outputs = flatten(outputs)
        self._calls = _collect_calls(flat_inputs, self.outputs)
        layers = _unique([call.layer for call in self._calls])
        self._functional_layers = layers
        for layer in layers:
            if all(layer is not t for t in self._tracked_layers):
                self._tracked_layers.append(layer)
        self._num_outputs = len(self.outputs)
        self.built = True
        self._build_input_spec = map_structure(lambda t: t.spec, inputs)

    @property
    def layers(self) -> list[Layer]:
        return list(self._functional_layers)

    @property
    def input_names(self) -> list[str]:
        return [t.history.layer.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.history.layer.name for t in self.outputs]

    @property
    def input_shape(self) -> Any:
        shapes = [t.shape for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self) -> Any:
        shapes = [t.shape for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def _order_inputs(self, inputs: Any) -> list[Any]:
        if isinstance(inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise ConfigurationError(
                    f"model {self.name!r}: missing inputs {missing}; the inputs are "
                    f"{self.input_names}"
                )
            return [inputs[n] for n in self.input_names]
        flat = flatten(inputs)
        if len(flat) != len(self.inputs):
            raise ConfigurationError(
                f"model {self.name!r} expects {len(self.inputs)} input(s), received {len(flat)}"
            )
        return flat

    def trace(self, input_specs: Any, training: bool) -> Any:
        specs = self._order_inputs(input_specs)
        for i, (spec, tensor) in enumerate(zip(specs, self.inputs)):
            check_input_spec(self.name, i, tensor.spec, spec)
        return super().trace(input_specs, training)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        values: dict[int, Any] = {}
        for tensor, value in zip(self.inputs, self._order_inputs(inputs)):
            # As tf.keras: data of another dtype is cast to the dtype of its keras.Input.
            values[id(tensor)] = conform_dtype(value, tensor.dtype)
        for call in self._calls:
            if isinstance(call.layer, InputLayer):
                continue

            def value_of(t: Any) -> Any:
                return values[id(t)] if isinstance(t, KerasTensor) else t

            args = map_structure(value_of, call.args)
            # Tensors passed by keyword (an RNN's initial_state) are model values too.
            kwargs = {k: map_structure(value_of, v) for k, v in call.kwargs.items()}
            if training is not None and "training" not in kwargs:
                kwargs["training"] = training
            out = call.layer(*args, **kwargs)
            for tensor, value in zip(call.outputs, flatten(out)):
                values[id(tensor)] = value
        return pack_sequence_as(self._nested_outputs, [values[id(t)] for t in self.outputs])

    def get_config(self) -> dict[str, Any]:
        from ipusim.keras.engine.saving import functional_config

        return functional_config(self)

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Functional:
        from ipusim.keras.engine.saving import functional_from_config

        return functional_from_config(config, custom_objects)
