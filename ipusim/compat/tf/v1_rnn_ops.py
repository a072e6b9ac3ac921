"""The TF1 Popnn recurrent layers (``ipu_tensorflow_addons.v1.layers``; ``tensorflow.python.ipu
.rnn_ops`` in older SDKs): time-major ``PopnnLSTM`` and ``PopnnGRU`` for TF1 graph code.

As there, each layer holds two variables made with ``get_variable`` in its variable scope:
``kernel`` ``[input_size + num_units, gates * num_units]`` (rows: the input weights, then the
recurrent ones; columns: one block per gate, S: graphcore/tensorflow
``compiler/plugin/poplar/driver/ops/custom_ops/popnn/lstm.cc`` ``UnpackLstmKernel``; Glorot
uniform by default) and ``biases`` ``[gates, num_units]`` (GRU with ``reset_after``:
``[gates, 2, num_units]``, input then recurrent bias; zeros by default). The gates are in
Keras' order, ``i, f, c, o`` and ``z, r, h`` (IPU TensorFlow sets popnn's ``cellOrder`` so:
``compiler/plugin/poplar/driver/tools/rnn_util.cc``). ``layer(inputs [time, batch, input],
initial_state=None, training=True)`` returns ``(outputs [time, batch, units], state)``, the
state an :class:`LSTMStateTuple` ``(c, h)`` for the LSTM and ``h`` for the GRU (``outputs``
alone with ``return_state=False``). The steps are ipusim's LSTM / GRU cell ops, one per time
step, so they train with their gradients and are costed as such.
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections import namedtuple
from typing import Any

from ipusim.compat.runtime import context
from ipusim.compat.tf import v1_variables
from ipusim.errors import ConfigurationError, IncompatibleStateError
from ipusim.graph.graph import Graph, Symbol, to_symbol
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn, shape
from ipusim.graph.ops import rnn as rnn_ops
from ipusim.keras import activations, initializers

__all__ = ["LSTMStateTuple", "PopnnGRU", "PopnnLSTM"]

#: ``tf.compat.v1.nn.rnn_cell.LSTMStateTuple``: an LSTM state, ``(c, h)``.
LSTMStateTuple = namedtuple("LSTMStateTuple", ["c", "h"])

_ids = itertools.count()


class _PopnnRNN:
    """Shared by :class:`PopnnLSTM` and :class:`PopnnGRU` (see the module docstring)."""

    _gates = 0
    _kind = ""

    def __init__(
        self,
        num_units: int,
        dtype: Any = "float32",
        partials_dtype: Any = "float32",
        seed: int | None = None,
        weights_initializer: Any = None,
        bias_initializer: Any = None,
        activation: str = "tanh",
        recurrent_activation: str = "sigmoid",
        return_state: bool = True,
        name: str | None = None,
        options: Any = None,
        options_bwd: Any = None,
    ) -> None:
        if isinstance(num_units, bool) or not isinstance(num_units, int) or num_units < 1:
            raise ConfigurationError(
                f"{type(self).__name__}: num_units must be a positive int, received {num_units!r}"
            )
        del partials_dtype, options, options_bwd  # the partials follow IPUConfig's matmuls
        self._num_units, self._dtype, self._seed = num_units, dtype, seed
        self._weights_initializer, self._bias_initializer = weights_initializer, bias_initializer
        self._activation, self._recurrent_activation = activation, recurrent_activation
        self._return_state = bool(return_state)
        self._scope = name or f"{self._kind}_{next(_ids)}"
        self.kernel: Any = None
        self.biases: Any = None
        self.built = False

    @property
    def num_units(self) -> int:
        return self._num_units

    def _bias_shape(self) -> list[int]:
        return [self._gates, self._num_units]

    def build(self, input_shape: Any) -> None:
        """Create ``kernel`` and ``biases`` for inputs ``[time, batch, input_size]``."""
        dims = list(input_shape)
        if len(dims) != 3 or dims[-1] is None:
            raise ConfigurationError(
                f"{type(self).__name__}: expected inputs [time, batch, input_size] with a known "
                f"input_size, received shape {dims}"
            )
        if self.built:
            return
        init = self._weights_initializer or initializers.GlorotUniform(seed=self._seed)
        rows, cols = int(dims[-1]) + self._num_units, self._gates * self._num_units
        with v1_variables.variable_scope(self._scope):
            self.kernel = v1_variables.get_variable(
                "kernel", [rows, cols], dtype=self._dtype, initializer=init
            )
            self.biases = v1_variables.get_variable(
                "biases", self._bias_shape(), dtype=self._dtype,
                initializer=self._bias_initializer or "zeros",
            )  # fmt: skip
        self.built = True

    @abstractmethod
    def _run(
        self, graph: Graph, x: Symbol, steps: tuple[Symbol, ...], initial_state: Any
    ) -> tuple[list[Symbol], Any]:
        """The outputs of every time step of ``x`` and the final state (the subclass' cell)."""

    def _weights(self, graph: Graph, x: Symbol) -> tuple[Symbol, Symbol, Symbol]:
        """The input weights, the recurrent weights and the biases, read in ``graph``."""
        input_size = x.shape[-1]
        assert input_size is not None  # build() refused inputs of unknown size
        kernel, biases = graph.read_variable(self.kernel), graph.read_variable(self.biases)
        w_in = shape.slice_axis(kernel, 0, input_size, 0)
        w_rec = shape.slice_axis(kernel, input_size, self._num_units, 0)
        return w_in, w_rec, biases

    def __call__(self, inputs: Any, initial_state: Any = None, training: bool = True) -> Any:
        ctx = context.current_or_graph_mode()
        if ctx is None:
            raise IncompatibleStateError(
                f"{type(self).__name__} is a TF1 graph layer: call it in a tf.Graph (or a "
                "tf.function); eager TF2 code uses ipu_tensorflow_addons.keras.layers.LSTM / GRU"
            )
        x = to_symbol(inputs, ctx.graph)
        self.build(x.shape)
        steps = rnn_ops.unstack_time(x, 0)
        outputs, state = self._run(ctx.graph, x, steps, initial_state)
        stacked = rnn_ops.stack_time(outputs, 0)
        return (stacked, state) if self._return_state else stacked


class PopnnLSTM(_PopnnRNN):
    """``PopnnLSTM(num_units, ...)``: the time-major TF1 Popnn LSTM (see the module docstring)."""

    _gates, _kind = 4, "popnn_lstm"

    def _run(
        self, graph: Graph, x: Symbol, steps: tuple[Symbol, ...], initial_state: Any
    ) -> tuple[list[Symbol], Any]:
        w_in, w_rec, biases = self._weights(graph, x)
        bias = shape.reshape(biases, (-1,))
        if initial_state is not None and not isinstance(initial_state, LSTMStateTuple):
            raise ConfigurationError(
                f"Invalid initial_state type: `{type(initial_state).__name__}`, expecting "
                "`LSTMStateTuple`."
            )
        if initial_state is None:
            c = h = rnn_ops.zero_state(steps[0], self._num_units)
        else:
            c, h = (to_symbol(s, graph) for s in initial_state)
        outputs = []
        for x_t in steps:
            z = nn.bias_add(m.add(nn.matmul(x_t, w_in), nn.matmul(h, w_rec)), bias)
            h, c = rnn_ops.lstm_cell(
                z, c, activation=self._activation, recurrent_activation=self._recurrent_activation
            )
            outputs.append(h)
        return outputs, LSTMStateTuple(c, h)


class PopnnGRU(_PopnnRNN):
    """``PopnnGRU(num_units, ..., reset_after=False)``: the time-major TF1 Popnn GRU."""

    _gates, _kind = 3, "popnn_gru"

    def __init__(self, num_units: int, *args: Any, reset_after: bool = False, **kwargs: Any):
        super().__init__(num_units, *args, **kwargs)
        self._reset_after = bool(reset_after)

    def _bias_shape(self) -> list[int]:
        units = self._num_units
        return [self._gates, 2, units] if self._reset_after else [self._gates, units]

    def _run(
        self, graph: Graph, x: Symbol, steps: tuple[Symbol, ...], initial_state: Any
    ) -> tuple[list[Symbol], Any]:
        units = self._num_units
        w_in, w_rec, biases = self._weights(graph, x)
        if self._reset_after:  # [gate, (input, recurrent), units] -> two [3 * units] biases
            b_in = shape.reshape(shape.slice_axis(biases, 0, 1, 1), (-1,))
            b_rec = shape.reshape(shape.slice_axis(biases, 1, 1, 1), (-1,))
        else:
            b_in, b_rec = shape.reshape(biases, (-1,)), None
        h = (
            rnn_ops.zero_state(steps[0], units)
            if initial_state is None
            else to_symbol(initial_state, graph)
        )
        act, rec = self._activation, self._recurrent_activation
        outputs = []
        for x_t in steps:
            xz = nn.bias_add(nn.matmul(x_t, w_in), b_in)
            if self._reset_after:
                hg = nn.bias_add(nn.matmul(h, w_rec), b_rec)
                h = rnn_ops.gru_cell(xz, hg, h, activation=act, recurrent_activation=rec)
            else:
                h = self._step_reset_before(xz, h, w_rec)
            outputs.append(h)
        return outputs, h

    def _step_reset_before(self, xz: Any, h: Any, w_rec: Any) -> Any:
        """One GRU step with the reset gate applied before the recurrent matmul."""
        units = self._num_units
        x_z, x_r, x_h = (shape.slice_axis(xz, k * units, units, 1) for k in range(3))
        u_zr = shape.slice_axis(w_rec, 0, 2 * units, 1)
        u_h = shape.slice_axis(w_rec, 2 * units, units, 1)
        hzr, rec = nn.matmul(h, u_zr), self._recurrent_activation
        z = _activation(rec, m.add(x_z, shape.slice_axis(hzr, 0, units, 1)))
        r = _activation(rec, m.add(x_r, shape.slice_axis(hzr, units, units, 1)))
        cand = _activation(self._activation, m.add(x_h, nn.matmul(m.multiply(r, h), u_h)))
        return m.add(m.multiply(z, h), m.multiply(m.subtract(1.0, z), cand))


def _activation(name: str, x: Any) -> Any:
    return activations.get(name)(x)
