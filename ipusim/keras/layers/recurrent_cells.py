"""Recurrent cells (SimpleRNNCell, LSTMCell, GRUCell) and the ``RNN`` layer that loops a cell over
time, as tf-keras 2's ``RNN(cell)``: each step is ``cell(x_t, states)``, so the input product is
done per step (the LSTM / GRU / SimpleRNN layers do it once for the sequence). Any layer with a
``state_size`` and ``call(inputs, states)`` returning ``(output, new_states)`` works as a cell.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.graph.ops import random as random_ops
from ipusim.graph.ops import rnn as rnn_ops
from ipusim.keras.engine.layer import Layer
from ipusim.keras.engine.nest import flatten
from ipusim.keras.keyword_init import fields
from ipusim.keras.layers.recurrent import _GatedLayer, _ResetAfter, _UnitForgetBias
from ipusim.keras.layers.recurrent import _states_list as _states
from ipusim.keras.layers.recurrent_steps import (
    fused_names,
    gru_step,
    gru_step_weights,
    lstm_gates,
    recurrent_product,
)


class _Cell(_GatedLayer):
    """What the three cells share: arguments (as :class:`recurrent._GatedLayer`) and weights."""

    def _masked(self, x: Any, h_prev: Any, training: bool | None) -> tuple[Any, Any]:
        """The step's input and state as the gates' products read them: under dropout one mask
        each, the same at every step (same seed, same shape); per gate under recurrent dropout
        (Keras ``implementation=1``). None where nothing is dropped."""
        if not training:
            return None, None
        count = self._gates if self.recurrent_dropout else 1
        x_in = h_in = None
        if self.dropout:
            x_in = [random_ops.dropout(x, self.dropout, self._mask_seed + g) for g in range(count)]
        if self.recurrent_dropout:
            rate, seed = self.recurrent_dropout, self._mask_seed + 16
            h_in = [random_ops.dropout(h_prev, rate, seed + g) for g in range(count)]
        return x_in, h_in

    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def build(self, input_shape: Any) -> None:
        self._build_weights(input_shape[-1])
        self.built = True


class SimpleRNNCell(_Cell):
    """One step of SimpleRNN: ``h = activation(x·W + b + h_prev·U)``."""

    def call(self, inputs: Any, states: Any, training: bool | None = None) -> Any:
        (h_prev,) = _states(states)
        x_in, h_in = self._masked(inputs, h_prev, training)
        h = recurrent_product(inputs, self.kernel, x_in, self.units)
        if self.bias is not None:
            h = nn.bias_add(h, self.bias)
        h = self.activation(
            m.add(h, recurrent_product(h_prev, self.recurrent_kernel, h_in, self.units))
        )
        return h, [h]


class LSTMCell(_UnitForgetBias, _Cell):
    """One step of LSTM (gates ``i, f, c, o``); states ``[h, c]``."""

    def __init__(self, units: int, *args: Any, unit_forget_bias: bool = True, **kwargs: Any):
        super().__init__(units, *args, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)
        self._act_name, self._rec_name = fused_names(self)

    @property
    def state_size(self) -> Any:
        return [self.units, self.units]

    def call(self, inputs: Any, states: Any, training: bool | None = None) -> Any:
        h_prev, c_prev = _states(states)
        x_in, h_in = self._masked(inputs, h_prev, training)
        z = m.add(
            recurrent_product(inputs, self.kernel, x_in, self.units),
            recurrent_product(h_prev, self.recurrent_kernel, h_in, self.units),
        )
        if self.bias is not None:
            z = nn.bias_add(z, self.bias)
        h, c = lstm_gates(self, z, c_prev)
        return h, [h, c]


class GRUCell(_ResetAfter, _Cell):
    """One step of GRU (gates ``z, r, h``); ``reset_after`` as the GRU layer."""

    def call(self, inputs: Any, states: Any, training: bool | None = None) -> Any:
        (h_prev,) = _states(states)
        x_in, h_in = self._masked(inputs, h_prev, training)
        bias = self._input_bias()
        xg = recurrent_product(inputs, self.kernel, x_in, self.units)
        if bias is not None:
            xg = nn.bias_add(xg, bias)
        h = gru_step(self, xg, h_prev, dict(gru_step_weights(self), h_in=h_in))
        return h, [h]


class AbstractRNNCell(Layer):
    """Base class of a user's cell for ``RNN`` (Keras ``AbstractRNNCell``): a subclass defines
    ``state_size``, ``output_size`` and ``call(inputs, states)`` returning ``(output,
    new_states)``."""

    @property
    def state_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define `state_size`")

    @property
    def output_size(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define `output_size`")


class StackedRNNCells(Layer):
    """Cells run one after the other within each time step (Keras ``StackedRNNCells``; what
    ``RNN([cell, cell, ...])`` builds): the output of one is the input of the next; the states
    are every cell's, in order."""

    def __init__(self, cells: list[Any], **kwargs: Any) -> None:
        for cell in cells:
            if not hasattr(cell, "state_size") or not callable(getattr(cell, "call", None)):
                raise ConfigurationError(
                    f"StackedRNNCells: every cell needs `state_size` and `call(inputs, states)`, "
                    f"received {cell!r}"
                )
        super().__init__(**kwargs)
        self.cells = list(cells)

    @property
    def state_size(self) -> list[int]:
        return [size for cell in self.cells for size in _sizes(cell)]

    @property
    def output_size(self) -> int:
        return int(getattr(self.cells[-1], "output_size", _sizes(self.cells[-1])[0]))

    def build(self, input_shape: Any) -> None:
        for cell in self.cells:
            if not cell.built:
                cell.build(input_shape)
                cell.built = True
            input_shape = (input_shape[0], int(getattr(cell, "output_size", _sizes(cell)[0])))
        self.built = True

    def call(self, inputs: Any, states: Any, training: bool | None = None) -> Any:
        states, new_states = _states(states), []
        for cell in self.cells:
            count = len(_sizes(cell))
            own, states = states[:count], states[count:]
            extra = {"training": training} if getattr(cell, "_call_accepts_training", 0) else {}
            inputs, own = cell.call(inputs, own if count > 1 else own[0], **extra)
            new_states += _states(own)
        return inputs, new_states

    def get_config(self) -> dict[str, Any]:
        cells = [{"class_name": type(c).__name__, "config": c.get_config()} for c in self.cells]
        return {**super().get_config(), "cells": cells}

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Layer:
        from ipusim.keras.engine.saving import _deserialize_layer

        config = dict(config)
        config["cells"] = [_deserialize_layer(c, custom_objects) for c in config["cells"]]
        return super().from_config(config)


def _sizes(cell: Any) -> list[int]:
    size = cell.state_size
    return [int(s) for s in size] if isinstance(size, list | tuple) else [int(size)]


class RNN(Layer):
    """Loops ``cell`` over the time axis (Keras ``RNN``).

    Args:
        cell: a cell (SimpleRNNCell, LSTMCell, GRUCell, or a layer with ``state_size`` and
            ``call(inputs, states)``), or a list of them (run as StackedRNNCells).
        return_sequences, return_state, go_backwards, time_major: as the recurrent layers.
        stateful: not simulated yet. unroll: accepted (the loop is unrolled in the step graph).
    """

    def __init__(
        self,
        cell: Any,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        time_major: bool = False,
        **kwargs: Any,
    ) -> None:
        if isinstance(cell, list | tuple):
            cell = StackedRNNCells(list(cell))
        if not hasattr(cell, "state_size") or not callable(getattr(cell, "call", None)):
            raise ConfigurationError(
                f"RNN: `cell` must have a `state_size` attribute and a `call(inputs, states)` "
                f"method, received {cell!r}"
            )
        if stateful:
            raise UnsupportedError("RNN: `stateful=True` is not simulated yet")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = False
        self.unroll = bool(unroll)
        self.time_major = bool(time_major)

    def build(self, input_shape: Any) -> None:
        if not isinstance(input_shape, tuple) or len(input_shape) != 3:
            raise ConfigurationError(
                f"RNN {self.name!r} needs inputs of shape (batch, timesteps, features), "
                f"received {input_shape}"
            )
        if not self.cell.built:  # one step's input: (batch, features)
            self.cell.build((input_shape[1 if self.time_major else 0], input_shape[2]))
            self.cell.built = True
        self.built = True

    def call(
        self, inputs: Any, mask: Any = None, training: bool | None = None, initial_state: Any = None
    ) -> Any:
        if mask is not None:
            raise UnsupportedError(f"{self.name}: masking is not simulated by ipusim yet")
        axis = 0 if self.time_major else 1
        steps = rnn_ops.unstack_time(inputs, axis)
        if self.go_backwards:
            steps = steps[::-1]
        if initial_state is None:
            states = [rnn_ops.zero_state(steps[0], size) for size in _sizes(self.cell)]
        else:
            states = flatten(initial_state)
        # As tf-keras: the cell gets `training` only when its call() takes it.
        extra = {"training": training} if getattr(self.cell, "_call_accepts_training", 0) else {}
        outputs = []
        for x_t in steps:
            output, states = self.cell.call(x_t, states, **extra)
            states = _states(states)
            outputs.append(output)
        result = rnn_ops.stack_time(outputs, axis) if self.return_sequences else outputs[-1]
        if not self.return_state:
            return result
        if isinstance(self.cell, StackedRNNCells):  # as Keras: the states nested per cell
            nested: list[Any] = []
            for cell in self.cell.cells:
                count = len(_sizes(cell))
                nested.append(states[:count] if count > 1 else states[0])
                states = states[count:]
            return [result, *nested]
        return [result, *states]

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "cell": {"class_name": type(self.cell).__name__, "config": self.cell.get_config()},
            **fields(self, "return_sequences return_state go_backwards stateful unroll time_major"),
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Layer:
        from ipusim.keras.engine.saving import _deserialize_layer

        config = dict(config)
        config["cell"] = _deserialize_layer(config["cell"], custom_objects)
        return super().from_config(config)
