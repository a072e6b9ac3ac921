"""Recurrent layers: SimpleRNN, LSTM and GRU (Keras 2 arguments, gate order and equations).

Each layer is written as PopLibs runs it (``lib/popnn/Lstm.cpp``, ``Gru.cpp``, ``Rnn.cpp``): the
input projection of every time step is one matrix product before the loop, then a loop of T
dependent steps, each the recurrent product and the gates; the output sequence is written step
by step. So the step graph has one node per op per time step, the backward pass runs the steps
in reverse, and the trace shows the serialisation over time. The gates of LSTM and GRU
(``reset_after=True``) are the fused ops of :mod:`ipusim.graph.ops.rnn` when the kernels compute
both activations; SimpleRNN, GRU with ``reset_after=False`` and gates with other activations are
built from element-wise ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn, shape
from ipusim.graph.ops import random as random_ops
from ipusim.graph.ops import rnn as rnn_ops
from ipusim.graph.variable import Variable
from ipusim.keras import activations, backend, initializers
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import channels_last_input
from ipusim.keras.layers.core import _positive_int, check_rank, check_rate, no_regularizers
from ipusim.keras.layers.recurrent_steps import (
    forget_bias_initializer,
    fused_names,
    gru_step,
    gru_step_weights,
    lstm_gates,
    recurrent_product,
)


class _GatedLayer(Layer):
    """What the recurrent layers (SimpleRNN, LSTM, GRU) and the cells (``recurrent_cells``)
    share: the cell's arguments, its weights and their config."""

    #: Gates per unit (columns of the kernels are ``gates × units``).
    _gates = 1
    #: Name of the bias weight (PopnnLSTM / PopnnGRU call it ``biases``).
    _bias_name = "bias"

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        **kwargs: Any,
    ) -> None:
        """``recurrent_activation`` defaults to sigmoid when there are gates (LSTM, GRU), else to
        none. The cells' ``*_regularizer`` / ``*_constraint`` arguments must be None."""
        kwargs.pop("implementation", None)  # Keras' implementation choice changes no numbers
        kind = type(self).__name__
        for arg in [a for a in kwargs if a.endswith(("_regularizer", "_constraint"))]:
            if kwargs.pop(arg) is not None:
                raise UnsupportedError(f"{kind}: `{arg}` is not simulated by ipusim; remove it")
        super().__init__(**kwargs)
        self.units = _positive_int(kind, "units", units)
        self.activation = activations.get(activation)
        rec = (recurrent_activation or "sigmoid") if self._gates > 1 else recurrent_activation
        self.recurrent_activation = activations.get(rec) if rec else None
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.dropout = check_rate(kind, "dropout", dropout)
        self.recurrent_dropout = check_rate(kind, "recurrent_dropout", recurrent_dropout)
        self._check_dropout()

    def _check_dropout(self) -> None:
        if self.dropout or self.recurrent_dropout:
            self._mask_seed = backend.next_seed()

    def _bias_shape(self) -> tuple[int, ...]:
        return (self._gates * self.units,)

    def _bias_init(self) -> Any:
        return self.bias_initializer

    def _build_weights(self, features: int) -> None:
        """The input kernel, the recurrent kernel and (``use_bias``) the bias."""
        width = self._gates * self.units
        self.kernel = self.add_weight(
            "kernel", (features, width), initializer=self.kernel_initializer
        )
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, width), initializer=self.recurrent_initializer
        )
        self.bias = (
            self.add_weight(self._bias_name, self._bias_shape(), initializer=self._bias_init())
            if self.use_bias
            else None
        )

    _config_names = (
        "units activation use_bias kernel_initializer recurrent_initializer bias_initializer "
        "dropout recurrent_dropout"
    )

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        if self.recurrent_activation is not None:
            config["recurrent_activation"] = activations.serialize(self.recurrent_activation)
        return config


class _UnitForgetBias:
    """LSTM and LSTMCell: four gates; ``unit_forget_bias`` starts the forget gate's bias at 1."""

    _gates = 4
    unit_forget_bias: bool
    bias_initializer: Any
    units: int

    def _bias_init(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        return forget_bias_initializer(self.bias_initializer, self.units)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias}  # type: ignore[misc]


class _ResetAfter:
    """GRU and GRUCell: three gates; ``reset_after=True`` (the TF2 default) applies the reset
    gate after the recurrent product and keeps two bias vectors (input, recurrent)."""

    _gates = 3
    bias: Any
    units: int

    def __init__(self, units: int, *args: Any, reset_after: bool = True, **kwargs: Any):
        super().__init__(units, *args, **kwargs)  # type: ignore[call-arg]
        self.reset_after = bool(reset_after)
        self._act_name, self._rec_name = fused_names(self)

    def _bias_shape(self) -> tuple[int, ...]:
        width = self._gates * self.units
        return (2, width) if self.reset_after else (width,)

    def _input_bias(self) -> Any:
        if self.bias is None or not self.reset_after:
            return self.bias
        return shape.reshape(shape.slice_axis(self.bias, 0, 1, 0), (-1,))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "reset_after": self.reset_after}  # type: ignore[misc]


class _Recurrent(_GatedLayer):
    """What SimpleRNN, LSTM and GRU share: arguments, weights, the loop over time."""

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        time_major: bool = False,
        **kwargs: Any,
    ) -> None:
        kind = type(self).__name__
        no_regularizers(kind, locals())
        super().__init__(
            units,
            activation,
            recurrent_activation,
            use_bias,
            kernel_initializer,
            recurrent_initializer,
            bias_initializer,
            dropout,
            recurrent_dropout,
            activity_regularizer=activity_regularizer,
            **kwargs,
        )
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self._state_variables: list[Variable] = []
        self.unroll = bool(unroll)  # the loop is unrolled in the step graph either way
        self.time_major = bool(time_major)

    @property
    def _per_gate(self) -> bool:
        """Keras switches LSTM and GRU to ``implementation=1`` under recurrent dropout: one mask
        per gate for the inputs and for the state (tf_keras ``lstm.py`` / ``gru.py``)."""
        return bool(self.recurrent_dropout) and self._gates > 1

    def _sequence_noise(self, inputs: Any) -> tuple[int | None, ...]:
        """One mask per sample for the whole sequence (Keras makes the masks once per call)."""
        features = inputs.shape[-1]
        return (1, None, features) if self.time_major else (None, 1, features)

    # ------------------------------------------------------------------ weights
    #: The matmuls' own availableMemoryProportion, forwards and backwards (PopnnLSTM / PopnnGRU).
    _amp: dict[str, Any] = {}

    def build(self, input_shape: Any) -> None:
        self._build_weights(channels_last_input(self, input_shape, "(batch, timesteps, features)"))
        if self.stateful:
            self._make_states(input_shape[1] if self.time_major else input_shape[0])
        self.built = True

    # ------------------------------------------------------------------ stateful
    def _make_states(self, batch: int | None) -> None:
        """The states a stateful layer carries from batch to batch: variables, not weights
        (Keras keeps them out of ``weights`` too), zero at first and after ``reset_states``."""
        if batch is None:
            raise ConfigurationError(
                f"{self.name}: a stateful RNN needs to know its batch size; give the first "
                "layer `batch_input_shape=(batch, timesteps, features)` (or `keras.Input(..., "
                "batch_size=...)`) and pass batches of that size"
            )
        self._state_variables = [
            Variable(np.zeros((batch, self.units), self.dtype), f"{self.name}/state_{i}:0", False)
            for i in range(self._num_states)
        ]

    @property
    def states(self) -> list[Any]:
        """The carried states (stateful layers), else ``[None] * number of states``."""
        return list(self._state_variables) or [None] * self._num_states

    def reset_states(self, states: Any = None) -> None:
        """Zero the carried states, or set them to ``states`` (arrays of shape (batch, units))."""
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        values = [None] * self._num_states if states is None else _states_list(states)
        for variable, value in zip(self._state_variables, values, strict=True):
            variable.assign(np.zeros(variable.shape) if value is None else np.asarray(value))

    # ------------------------------------------------------------------ the loop
    @property
    def _time_axis(self) -> int:
        return 0 if self.time_major else 1

    def _input_bias(self) -> Any:
        return self.bias

    def _project(self, inputs: Any, training: bool | None) -> Any:
        """``inputs · kernel + bias`` for every time step at once (popnn ``preCalcWeights``);
        with per-gate input masks, one product per gate."""
        features = inputs.shape[-1]
        if training and self.dropout and self._per_gate:
            units, noise = self.units, self._sequence_noise(inputs)
            flat = shape.concat(
                [
                    nn.matmul(
                        shape.reshape(
                            random_ops.dropout(inputs, self.dropout, self._mask_seed + g, noise),
                            (-1, features),
                        ),
                        shape.slice_axis(self.kernel, g * units, units, 1),
                    )
                    for g in range(self._gates)
                ],
                axis=-1,
            )
        else:
            flat = nn.matmul(shape.reshape(inputs, (-1, features)), self.kernel, **self._amp)
        bias = self._input_bias()
        if bias is not None:
            flat = nn.bias_add(flat, bias)
        width = self._gates * self.units
        lead = (inputs.shape[0], -1) if self.time_major else (-1, inputs.shape[1])
        return shape.reshape(flat, (*lead, width))

    _num_states = 1

    def call(
        self, inputs: Any, mask: Any = None, training: bool | None = None, initial_state: Any = None
    ) -> Any:
        if mask is not None:
            raise UnsupportedError(f"{self.name}: masking is not simulated by ipusim yet")
        check_rank(self, inputs, 3, "(batch, timesteps, features)")
        inputs = self._input_dropout(inputs, training)
        steps = rnn_ops.unstack_time(self._project(inputs, training), self._time_axis)
        if self.go_backwards:
            steps = steps[::-1]
        carried = self.stateful and initial_state is None
        states = list(self._state_variables) if carried else None
        states = states or self._initial_states(initial_state, steps[0])
        weights = self._step_weights()
        outputs = []
        for x_t in steps:
            # Each step reads the weights through a carry, so that the backward loop adds each
            # step's weight gradient as it goes (see rnn_ops.RnnCarry).
            weights = {k: None if w is None else rnn_ops.carry(w) for k, w in weights.items()}
            step_weights = dict(weights, h_in=self._recurrent_inputs(states[0], training))
            output, states = self._step(x_t, states, step_weights)
            outputs.append(output)
        if carried:
            for variable, state in zip(self._state_variables, states, strict=True):
                inputs.graph.add_update(variable, state)
        result = (
            rnn_ops.stack_time(outputs, self._time_axis) if self.return_sequences else outputs[-1]
        )
        return [result, *states] if self.return_state else result

    def _input_dropout(self, inputs: Any, training: bool | None) -> Any:
        if not training or not self.dropout or self._per_gate:
            return inputs
        return random_ops.dropout(
            inputs, self.dropout, self._mask_seed, self._sequence_noise(inputs)
        )

    def _recurrent_inputs(self, h_prev: Any, training: bool | None) -> list[Any] | None:
        """The state as each gate's product reads it: masked under recurrent dropout (the same
        masks at every step: same seed, same shape), else None (the state itself)."""
        if not training or not self.recurrent_dropout:
            return None
        count = self._gates if self._per_gate else 1
        return [
            random_ops.dropout(h_prev, self.recurrent_dropout, self._mask_seed + 16 + g)
            for g in range(count)
        ]

    def _initial_states(self, initial_state: Any, like: Any) -> list[Any]:
        if initial_state is None:
            return [rnn_ops.zero_state(like, self.units) for _ in range(self._num_states)]
        states = _states_list(initial_state)
        if len(states) != self._num_states:
            raise ConfigurationError(
                f"{self.name}: `initial_state` must hold {self._num_states} tensor(s) of shape "
                f"(batch, {self.units}), received {len(states)}"
            )
        return states

    def _step_weights(self) -> dict[str, Any]:
        """The weights every step reads, sliced once before the loop."""
        return {"recurrent_kernel": self.recurrent_kernel}

    def _step(self, x_t: Any, states: list[Any], w: dict[str, Any]) -> tuple[Any, list[Any]]:
        raise NotImplementedError

    def compute_output_shape(self, input_shape: Any) -> Any:
        batch, steps = (input_shape[1], input_shape[0]) if self.time_major else input_shape[:2]
        seq = (steps, batch) if self.time_major else (batch, steps)
        out = (*seq, self.units) if self.return_sequences else (batch, self.units)
        if self.return_state:
            return [out] + [(batch, self.units)] * self._num_states
        return out

    _config_names = "return_sequences return_state go_backwards stateful unroll time_major"


class SimpleRNN(_Recurrent):
    """Fully connected recurrence ``h = activation(x·W + b + h_prev·U)``."""

    def __init__(  # Keras' positional order: no recurrent activation
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            **kwargs,
        )

    def _step(self, x_t: Any, states: list[Any], w: dict[str, Any]) -> tuple[Any, list[Any]]:
        (h_prev,) = states
        product = recurrent_product(h_prev, w["recurrent_kernel"], w["h_in"], self.units, self._amp)
        h = self.activation(m.add(x_t, product))
        return h, [h]


class LSTM(_UnitForgetBias, _Recurrent):
    """Long short-term memory (Keras 2 ``LSTM``: gates ``i, f, c, o``; ``unit_forget_bias``
    starts the forget gate's bias at 1). Returns ``[output, h, c]`` with ``return_state``."""

    _num_states = 2

    def __init__(  # Keras' positional order: unit_forget_bias after the initializers
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            units,
            activation=activation,
            recurrent_activation=recurrent_activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            **kwargs,
        )
        self.unit_forget_bias = bool(unit_forget_bias)
        self._act_name, self._rec_name = fused_names(self)

    def _input_bias(self) -> Any:
        return None  # added per step after the products, as Keras and popnn (AddBias) do

    def _step_weights(self) -> dict[str, Any]:
        return {"recurrent_kernel": self.recurrent_kernel, "bias": self.bias}

    def _step(self, x_t: Any, states: list[Any], w: dict[str, Any]) -> tuple[Any, list[Any]]:
        h_prev, c_prev = states
        product = recurrent_product(h_prev, w["recurrent_kernel"], w["h_in"], self.units, self._amp)
        z = m.add(x_t, product)
        if w["bias"] is not None:
            z = nn.bias_add(z, w["bias"])
        h, c = lstm_gates(self, z, c_prev)
        return h, [h, c]


class GRU(_ResetAfter, _Recurrent):
    """Gated recurrent unit (Keras 2 ``GRU``: gates ``z, r, h``); ``reset_after`` as
    :class:`_ResetAfter`."""

    def _step_weights(self) -> dict[str, Any]:
        return gru_step_weights(self)

    def _step(self, x_t: Any, states: list[Any], w: dict[str, Any]) -> tuple[Any, list[Any]]:
        h = gru_step(self, x_t, states[0], w)
        return h, [h]


def _states_list(states: Any) -> list[Any]:
    return list(states) if isinstance(states, list | tuple) else [states]
