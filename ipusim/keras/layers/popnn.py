"""The IPU's recurrent layers ``PopnnLSTM`` and ``PopnnGRU`` (``ipu_tensorflow_addons.keras.layers``,
where they are also named ``LSTM`` and ``GRU``).

They run PopLibs' ``popnn::lstm`` / ``popnn::gru`` in IPU TensorFlow
(graphcore/ipu_tensorflow_addons ``ipu_tensorflow_addons/keras/layers/rnn.py``). Their numbers
are those of the Keras layers with the same weights: IPU TensorFlow sets popnn's ``cellOrder``
to Keras' gate order ``i, f, c, o`` and ``z, r, h`` (graphcore/tensorflow
``compiler/plugin/poplar/driver/tools/rnn_util.cc``), and PopnnGRU's biases are ``(2, 3·units)``
with ``reset_after``, as Keras'. So they are the Keras layers with the Popnn arguments, checks,
names and program: the bias weight is ``biases``; ``dropout`` drops input features with one mask
for the whole sequence (``_apply_dropout``: noise shape 1 over time); ``use_bias=False``,
``recurrent_dropout``, ``go_backwards``, ``unroll``, regularizers and constraints raise
ValueError, as there; each step multiplies its own input (popnn's ``preCalcWeights`` is off).

``available_memory_proportion_fwd`` / ``_bwd`` plan the layer's matmuls (forward, and their
gradients) with that ``availableMemoryProportion``; ``partials_dtype`` is kept in the config but
the partials follow ``IPUConfig.matmuls.poplar_options`` (another value warns).
``stateful=True`` carries the states from batch to batch, as there.
"""

from __future__ import annotations

import warnings
import zlib
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.ops import nn, shape
from ipusim.graph.spec import canonical_dtype
from ipusim.keras import backend
from ipusim.keras.layers.recurrent import GRU, LSTM
from ipusim.keras.layers.recurrent_steps import gru_step, gru_step_weights, lstm_gates

#: Activations PopnnLSTM / PopnnGRU accept (ipu_tensorflow_addons ``ACCEPTED_ACTIVATIONS``).
ACCEPTED_ACTIVATIONS = ("tanh", "relu", "softmax", "sigmoid", "hard_sigmoid")
ACCEPTED_RECURRENT_ACTIVATIONS = ("tanh", "softmax", "sigmoid", "hard_sigmoid")

#: Arguments the Popnn layers reject, with the value they require.
_REJECTED = {
    "use_bias": True,
    "kernel_regularizer": None,
    "recurrent_regularizer": None,
    "bias_regularizer": None,
    "activity_regularizer": None,
    "kernel_constraint": None,
    "recurrent_constraint": None,
    "bias_constraint": None,
    "recurrent_dropout": 0.0,
    "go_backwards": False,
    "unroll": False,
}


def _popnn_checks(kind: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Validate and remove the Popnn-only arguments; return them."""
    for arg, required in _REJECTED.items():
        if arg in kwargs and kwargs[arg] != required:
            raise ConfigurationError(
                f"IPU custom {kind} layer does not support {arg}={kwargs[arg]!r}; it needs "
                f"{required!r}"
            )
        kwargs.pop(arg, None)
    if kwargs.pop("implementation", 2) not in (1, 2):
        raise ConfigurationError(f"IPU custom {kind} layer does not support implementation != 1")
    for arg, accepted in (
        ("activation", ACCEPTED_ACTIVATIONS),
        ("recurrent_activation", ACCEPTED_RECURRENT_ACTIVATIONS),
    ):
        value = kwargs.get(arg, "tanh" if arg == "activation" else "sigmoid")
        name = value if isinstance(value, str) else getattr(value, "__name__", repr(value))
        if name not in accepted:
            raise ConfigurationError(
                f"IPU custom RNN layer does not support {name!r} as {arg}; accepted: "
                f"{', '.join(accepted)}"
            )
    extras = {
        "partials_dtype": canonical_dtype(kwargs.pop("partials_dtype", "float32")),
        "seed": kwargs.pop("seed", None),
        "dropout_seed": kwargs.pop("dropout_seed", None),
        "available_memory_proportion_fwd": kwargs.pop("available_memory_proportion_fwd", None),
        "available_memory_proportion_bwd": kwargs.pop("available_memory_proportion_bwd", None),
    }
    if extras["partials_dtype"] not in ("float16", "float32"):
        raise ConfigurationError(
            f"{kind}: partials_dtype must be float16 or float32, received "
            f"{extras['partials_dtype']}"
        )
    for arg in ("available_memory_proportion_fwd", "available_memory_proportion_bwd"):
        value = extras[arg]
        if value is not None and value != -1 and not 0 < float(value) <= 1:
            raise ConfigurationError(f"{kind}: {arg} must be in (0, 1], received {value!r}")
    if extras["partials_dtype"] != "float32":
        warnings.warn(
            f"{kind}: a per-layer partials_dtype is not used by ipusim; set "
            "IPUConfig.matmuls.poplar_options['partialsType'] instead",
            stacklevel=3,
        )
    return extras


def _amp(extras: dict[str, Any]) -> dict[str, Any]:
    """The matmul attributes of the layer's availableMemoryProportion: forwards, and backwards
    (the forward value when not given, as ipu_tensorflow_addons does; -1 or None: PopLibs')."""
    fwd, bwd = (extras[f"available_memory_proportion_{d}"] for d in ("fwd", "bwd"))
    fwd = None if fwd in (None, -1) else float(fwd)
    bwd = fwd if bwd is None else (None if bwd == -1 else float(bwd))
    amp = {"available_memory_proportion": fwd, "available_memory_proportion_bwd": bwd}
    return {name: value for name, value in amp.items() if value is not None}


def _dropout_seed(seed: Any) -> int:
    if seed is None:
        return backend.next_seed()
    values = [int(v) for v in (seed if isinstance(seed, list | tuple) else [seed])]
    return zlib.crc32(",".join(map(str, values)).encode())


class _Popnn:
    """What PopnnLSTM and PopnnGRU add to the Keras layers."""

    _bias_name = "biases"
    _cell: str  # "LSTM" or "GRU", for messages
    _extras: dict[str, Any]
    dropout: float
    time_major: bool
    units: int

    def _check_dropout(self) -> None:  # input dropout is simulated; recurrent was rejected
        self._mask_seed = _dropout_seed(self._extras["dropout_seed"])

    def _project(self, inputs: Any, training: bool | None) -> Any:
        # IPU TensorFlow does not set popnn's preCalcWeights (graphcore/tensorflow
        # compiler/plugin/poplar/driver/tools/rnn_util.cc), so every step multiplies its own
        # input: the steps are the raw inputs.
        return inputs

    @property
    def num_units(self) -> int:
        return self.units

    def __init__(self, units: int, **kwargs: Any) -> None:
        self._extras = _popnn_checks(self._cell, kwargs)
        self._amp = _amp(self._extras)
        super().__init__(units, **kwargs)  # type: ignore[call-arg]  # the Keras layer's

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()  # type: ignore[misc]  # the Keras layer's
        for arg in ("use_bias", "recurrent_dropout", "go_backwards", "unroll"):
            config.pop(arg, None)
        return {**config, **self._extras}


class PopnnLSTM(_Popnn, LSTM):
    """PopLibs' LSTM (``ipu_tensorflow_addons.keras.layers.PopnnLSTM``, alias ``LSTM``).

    Each step is one product of ``[x_t, h_prev]`` with the kernels stacked (popnn
    ``basicLstmUnitsNlInput``: ``matMul(concat(prevAct, prevOutput), weights)``; the layer hands
    popnn ``concat([kernel, recurrent_kernel], 0)``), then the bias and the gates.
    """

    _cell = "LSTM"

    def _step_weights(self) -> dict[str, Any]:
        combined = shape.concat([self.kernel, self.recurrent_kernel], axis=0)
        return {"combined": combined, "bias": self.bias}

    def _step(self, x_t: Any, states: list[Any], w: dict[str, Any]) -> tuple[Any, list[Any]]:
        h_prev, c_prev = states
        z = nn.matmul(shape.concat([x_t, h_prev], axis=-1), w["combined"], **self._amp)
        h, c = lstm_gates(self, nn.bias_add(z, w["bias"]), c_prev)
        return h, [h, c]


class PopnnGRU(_Popnn, GRU):
    """PopLibs' GRU (``ipu_tensorflow_addons.keras.layers.PopnnGRU``, alias ``GRU``).

    Each step multiplies its input and its state by their kernels (popnn
    ``gruCellForwardPassCalcUnits*``: ``matMul(in, weightsInput)`` and ``matMul(prevOutput,
    weightsOutput)``), then the gates.
    """

    _cell = "GRU"

    def _step_weights(self) -> dict[str, Any]:
        return {**gru_step_weights(self), "kernel": self.kernel, "input_bias": self._input_bias()}

    def _step(self, x_t: Any, states: list[Any], w: dict[str, Any]) -> tuple[Any, list[Any]]:
        xg = nn.bias_add(nn.matmul(x_t, w["kernel"], **self._amp), w["input_bias"])
        h = gru_step(self, xg, states[0], w)
        return h, [h]
