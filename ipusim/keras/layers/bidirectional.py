"""``Bidirectional``: a recurrent layer run forwards and backwards over time, outputs merged.

As tf-keras 2's wrapper (``tf_keras/src/layers/rnn/bidirectional.py``): the forward layer is
recreated from the given layer's config, the backward layer is a copy with ``go_backwards``
flipped (or the given ``backward_layer``); a backward sequence output is reversed in time before
merging; weights are the forward layer's, then the backward layer's. On the IPU the two
directions are two independent loops over time (two popnn layers).
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import rnn as rnn_ops
from ipusim.graph.ops import shape
from ipusim.keras.engine.layer import Layer

#: Keras' merge modes (None: the two outputs as a list).
MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Bidirectional(Layer):
    """Bidirectional wrapper of a recurrent layer.

    Args:
        layer: a recurrent layer (SimpleRNN, LSTM, GRU, PopnnLSTM, PopnnGRU, RNN).
        merge_mode: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"`` or None.
        weights: not supported (set them with ``set_weights`` after building).
        backward_layer: the layer to run backwards; default a copy of ``layer`` with
            ``go_backwards`` flipped.
    """

    def __init__(
        self,
        layer: Any,
        merge_mode: str | None = "concat",
        weights: Any = None,
        backward_layer: Any = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(layer, Layer) or not hasattr(layer, "return_sequences"):
            raise ConfigurationError(
                f"Bidirectional: `layer` must be a recurrent layer instance (e.g. LSTM(...)), "
                f"received {layer!r}"
            )
        if merge_mode not in MERGE_MODES:
            raise ConfigurationError(
                f"Bidirectional: invalid `merge_mode` {merge_mode!r}; expected one of {MERGE_MODES}"
            )
        if weights is not None:
            raise ConfigurationError(
                "Bidirectional: `weights` is not supported; call set_weights() after building"
            )
        super().__init__(**kwargs)
        rnn: Any = layer  # a recurrent layer (checked above)
        self.forward_layer: Any
        self.backward_layer: Any
        self._layer_config = _serialize(rnn)
        config = dict(rnn.get_config(), name=f"forward_{rnn.name}")
        self.forward_layer = type(rnn).from_config(config)
        if backward_layer is None:
            config = dict(rnn.get_config(), name=f"backward_{rnn.name}")
            config["go_backwards"] = not rnn.go_backwards
            self.backward_layer = type(rnn).from_config(config)
            self._backward_given = False
        else:
            _check_backward(rnn, backward_layer)
            self.backward_layer = backward_layer
            self._backward_given = True
        self.merge_mode = merge_mode
        self.return_sequences = rnn.return_sequences
        self.return_state = rnn.return_state

    def call(self, inputs: Any, training: bool | None = None, initial_state: Any = None) -> Any:
        fwd_state = bwd_state = None
        if initial_state is not None:
            given = list(initial_state)
            half = len(given) // 2
            fwd_state, bwd_state = given[:half], given[half:]
        y = self.forward_layer(inputs, training=training, initial_state=fwd_state)
        y_rev = self.backward_layer(inputs, training=training, initial_state=bwd_state)
        states: list[Any] = []
        if self.return_state:
            states = [*y[1:], *y_rev[1:]]
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            axis = 0 if getattr(self.forward_layer, "time_major", False) else 1
            y_rev = rnn_ops.stack_time(rnn_ops.unstack_time(y_rev, axis)[::-1], axis)
        output = _merge(self.merge_mode, y, y_rev)
        if self.return_state:
            return [*output, *states] if self.merge_mode is None else [output, *states]
        return output

    def get_config(self) -> dict[str, Any]:
        config = {**super().get_config(), "layer": self._layer_config}
        config["merge_mode"] = self.merge_mode
        if self._backward_given:
            config["backward_layer"] = _serialize(self.backward_layer)
        return config

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Layer:
        from ipusim.keras.engine.saving import _deserialize_layer

        config = dict(config)
        config["layer"] = _deserialize_layer(config["layer"], custom_objects)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = _deserialize_layer(config["backward_layer"], custom_objects)
        return super().from_config(config)


def _serialize(layer: Layer) -> dict[str, Any]:
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def _check_backward(layer: Any, backward: Any) -> None:
    """Keras' rules for a given backward layer."""
    if not isinstance(backward, Layer) or not hasattr(backward, "return_sequences"):
        raise ConfigurationError(
            f"Bidirectional: `backward_layer` must be a recurrent layer, received {backward!r}"
        )
    if getattr(backward, "go_backwards", None) == layer.go_backwards:
        raise ConfigurationError(
            "Bidirectional: `backward_layer.go_backwards` must be the opposite of "
            f"`layer.go_backwards` ({layer.go_backwards})"
        )
    for arg in ("return_sequences", "return_state"):
        if getattr(backward, arg) != getattr(layer, arg):
            raise ConfigurationError(
                f"Bidirectional: `{arg}` of the forward ({getattr(layer, arg)}) and backward "
                f"({getattr(backward, arg)}) layers must match"
            )


def _merge(mode: str | None, y: Any, y_rev: Any) -> Any:
    if mode == "concat":
        return shape.concat([y, y_rev], axis=-1)
    if mode == "sum":
        return m.add(y, y_rev)
    if mode == "mul":
        return m.multiply(y, y_rev)
    if mode == "ave":
        return m.multiply(m.add(y, y_rev), 0.5)
    return [y, y_rev]
