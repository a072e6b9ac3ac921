"""ConvLSTM1D / ConvLSTM2D / ConvLSTM3D (tf.keras 2): an LSTM whose gates are convolutions.

Unrolled over the (known) time steps in the graph, as the IPU compiles a recurrent loop: the input
convolution of every step is one conv over ``(batch * time, ...)`` (it does not depend on the
state), the recurrent convolution one conv per step (stride 1, "same" padding, as Keras), the
gates elementwise ops (Keras 2's ``hard_sigmoid`` recurrent activation by default). ConvLSTM1D
runs as ConvLSTM2D on images of height 1; ConvLSTM3D uses the 3-D convolution op. Gate order
i, f, c, o along the kernels' last axis, as Keras stores them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import conv as conv_ops
from ipusim.graph.ops import conv3d as conv3d_ops
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as s
from ipusim.keras import activations, initializers
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import normalize_tuple
from ipusim.keras.layers.core import no_regularizers


class _ConvLSTM(Layer):
    _rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        activation: Any = "tanh",
        recurrent_activation: Any = "hard_sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name = type(self).__name__
        no_regularizers(name, locals())
        if stateful or dropout or recurrent_dropout:
            raise UnsupportedError(
                f"{name}: stateful=True, dropout and recurrent_dropout are not simulated by "
                "ipusim; use stateful=False and dropout=recurrent_dropout=0"
            )
        if data_format not in (None, "channels_last"):
            raise UnsupportedError(f"{name}: ipusim simulates channels_last data only")
        if str(padding).lower() not in ("valid", "same"):
            raise ConfigurationError(f"{name}: padding must be 'valid' or 'same', got {padding}")
        self.filters = normalize_tuple(filters, "filters", name, 1)[0]
        self.kernel_size = normalize_tuple(kernel_size, "kernel_size", name, self._rank)
        self.strides = normalize_tuple(strides, "strides", name, self._rank)
        self.dilation_rate = normalize_tuple(dilation_rate, "dilation_rate", name, self._rank)
        self.padding, self.data_format = str(padding).lower(), "channels_last"
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias, self.unit_forget_bias = bool(use_bias), bool(unit_forget_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful, self.dropout, self.recurrent_dropout = False, 0.0, 0.0

    def build(self, input_shape: Any) -> None:
        if len(input_shape) != self._rank + 3 or input_shape[-1] is None:
            raise ConfigurationError(
                f"{type(self).__name__} expects inputs (batch, time, {self._rank} spatial axes, "
                f"channels) with known channels, received {tuple(input_shape)}"
            )
        four = 4 * self.filters
        self.kernel = self.add_weight(
            "kernel",
            (*self.kernel_size, input_shape[-1], four),
            initializer=self.kernel_initializer,
        )
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel",
            (*self.kernel_size, self.filters, four),
            initializer=self.recurrent_initializer,
        )
        self.bias = None
        if self.use_bias:
            init: Callable[..., np.ndarray] = self.bias_initializer
            if self.unit_forget_bias:  # the forget gate's bias starts at 1

                def forget_one(
                    shape: tuple[int, ...], dtype: Any = None, base: Any = self.bias_initializer
                ) -> np.ndarray:
                    f = shape[0] // 4
                    values = np.asarray(base((f,), dtype=dtype))
                    ones = np.ones((f,), dtype=values.dtype)
                    rest = np.asarray(base((2 * f,), dtype=dtype))
                    return np.concatenate([values, ones, rest])

                init = forget_one

            self.bias = self.add_weight("bias", (four,), initializer=init)
        self.built = True

    def _conv(self, x: Any, kernel: Any, **geometry: Any) -> Any:
        """The convolution of the layer's rank (ConvLSTM1D's as a 2-D one of height 1)."""
        if self._rank == 3:
            return conv3d_ops.conv3d(x, kernel, **geometry)
        return conv_ops.conv2d(
            x, s.expand_dims(kernel, 0) if self._rank == 1 else kernel, **geometry
        )

    def call(self, inputs: Any, training: bool | None = None, initial_state: Any = None) -> Any:
        if initial_state is not None:
            raise UnsupportedError(f"{type(self).__name__}: initial_state is not simulated")
        steps = inputs.shape[1]
        if steps is None or any(d is None for d in inputs.shape[2:]):
            raise ConfigurationError(
                f"{type(self).__name__} needs the time and spatial sizes known, received "
                f"{inputs.shape}"
            )
        frames = s.expand_dims(inputs, 2) if self._rank == 1 else inputs  # 1-D: (B, T, 1, L, C)
        spatial = frames.shape[2:]
        unit = (1,) if self._rank == 1 else ()  # ConvLSTM1D's unit height
        x = self._conv(
            s.reshape(frames, (-1, *spatial)),
            self.kernel,
            strides=(*unit, *self.strides),
            padding=self.padding.upper(),
            dilation_rate=(*unit, *self.dilation_rate),
        )
        if self.bias is not None:
            x = m.add(x, self.bias)
        x = s.reshape(x, (-1, steps, *x.shape[1:]))  # (B, T, h, w, 4F)
        h, c, outputs = self._unroll(x, steps)
        out = s.concat([s.expand_dims(o, 1) for o in outputs], 1) if self.return_sequences else h
        if self._rank == 1:
            squeeze = 2 if self.return_sequences else 1
            out, h, c = s.squeeze(out, squeeze), s.squeeze(h, 1), s.squeeze(c, 1)
        return [out, h, c] if self.return_state else out

    def _unroll(self, x: Any, steps: int) -> tuple[Any, Any, list[Any]]:
        f = self.filters
        first = s.slice_axis(x, 0, 1, 1)
        h = c = s.broadcast_like(0.0, s.squeeze(s.slice_axis(first, 0, f, -1), 1))
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        outputs = []
        for t in order:
            z = m.add(
                s.squeeze(s.slice_axis(x, t, 1, 1), 1),
                self._conv(h, self.recurrent_kernel, padding="SAME"),
            )
            gate = [s.slice_axis(z, g * f, f, -1) for g in range(4)]
            i, fg = self.recurrent_activation(gate[0]), self.recurrent_activation(gate[1])
            c = m.add(m.multiply(fg, c), m.multiply(i, self.activation(gate[2])))
            h = m.multiply(self.recurrent_activation(gate[3]), self.activation(c))
            outputs.append(h)
        return h, c, outputs

    _config_names = (
        "filters kernel_size strides padding data_format dilation_rate activation "
        "recurrent_activation use_bias kernel_initializer recurrent_initializer "
        "bias_initializer unit_forget_bias return_sequences return_state go_backwards"
    )


class ConvLSTM1D(_ConvLSTM):
    """ConvLSTM over sequences of 1-D signals ``(batch, time, length, channels)``."""

    _rank = 1


class ConvLSTM2D(_ConvLSTM):
    """ConvLSTM over sequences of images ``(batch, time, rows, cols, channels)``."""

    _rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )


class ConvLSTM3D(_ConvLSTM):
    """ConvLSTM over sequences of volumes ``(batch, time, depth, rows, cols, channels)``."""

    _rank = 3

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1, 1),
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs
        )
