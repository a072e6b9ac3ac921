"""LocallyConnected1D / LocallyConnected2D (tf.keras 2): a convolution whose filters are not
shared, each output position having its own (Keras' default ``implementation=1``).

Lowered as Keras' ``local_conv`` does: the patches of every output position, as one
``(positions, batch, patch)`` tensor, times one kernel per position (a batched matmul). The
patches are gathered with one slice per kernel offset (not per position), so the graph stays
small: for a stride above 1, the input is padded and each offset's slice is reshaped to keep
every stride-th row.
"""

from __future__ import annotations

import math
from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as s
from ipusim.graph.ops.linalg import batch_matmul
from ipusim.keras import activations, initializers
from ipusim.keras.engine.layer import Layer


def _tuple(layer: str, arg: str, value: Any, rank: int) -> tuple[int, ...]:
    values = (value,) * rank if isinstance(value, int) else tuple(value)
    if len(values) != rank or any(not isinstance(v, int) or v < 1 for v in values):
        raise ConfigurationError(
            f"{layer}: `{arg}` must be a positive int or {rank} positive ints, received {value!r}"
        )
    return values


def _offset_slice(x: Any, offset: tuple, strides: tuple, out: tuple) -> Any:
    """``x[:, o0 : o0 + s0*n0 : s0, ..., :]`` for every spatial axis (rank 1 or 2)."""
    spatial = len(out)
    needed = [o + st * n for o, st, n in zip(offset, strides, out, strict=True)]
    sizes = x.shape[1 : 1 + spatial]
    pads = [max(0, need - size) for need, size in zip(needed, sizes, strict=True)]
    if any(pads):
        x = s.pad(x, [(0, 0), *((0, p) for p in pads), (0, 0)])
    window = s.slice(x, [0, *offset, 0], [-1, *(st * n for st, n in zip(strides, out)), -1])
    if all(st == 1 for st in strides):
        return window
    split = [-1]
    for st, n in zip(strides, out, strict=True):
        split += [n, st]
    window = s.reshape(window, (*split, x.shape[-1]))
    begin = [0] * len(split) + [0]
    size = [-1] + [d for n in out for d in (n, 1)] + [-1]
    window = s.slice(window, begin, size)
    return s.reshape(window, (-1, *out, x.shape[-1]))


def local_patches(x: Any, kernel: tuple, strides: tuple, out: tuple) -> Any:
    """``(batch, positions, prod(kernel) * channels)`` patches in Keras' order (row-major
    positions; each patch row-major over the kernel offsets, then channels)."""
    offsets = [()]
    for k in kernel:
        offsets = [(*o, i) for o in offsets for i in range(k)]
    windows = [s.expand_dims(_offset_slice(x, o, strides, out), -2) for o in offsets]
    stacked = s.concat(windows, axis=-2) if len(windows) > 1 else windows[0]
    channels = x.shape[-1]
    return s.reshape(stacked, (-1, math.prod(out), len(offsets) * channels))


class _LocallyConnected(Layer):
    _rank = 1

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        implementation: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name = type(self).__name__
        if any(
            v is not None
            for v in (kernel_regularizer, bias_regularizer, kernel_constraint, bias_constraint)
        ):
            raise UnsupportedError(f"{name}: regularizers and constraints are not simulated")
        if implementation != 1 or data_format not in (None, "channels_last"):
            raise UnsupportedError(
                f"{name}: ipusim simulates implementation=1 with channels_last data "
                f"(received implementation={implementation}, data_format={data_format!r})"
            )
        if str(padding).lower() != "valid":
            raise ConfigurationError(
                f'{name}: Invalid border mode for LocallyConnected (only "valid" is supported '
                f"if implementation is 1): {padding}"
            )
        self.filters = _tuple(name, "filters", filters, 1)[0]
        self.kernel_size = _tuple(name, "kernel_size", kernel_size, self._rank)
        self.strides = _tuple(name, "strides", strides, self._rank)
        self.padding, self.data_format, self.implementation = "valid", "channels_last", 1
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _out(self, input_shape: Any) -> tuple[int, ...]:
        spatial = tuple(input_shape[1 : 1 + self._rank])
        if None in spatial or input_shape[-1] is None:
            raise ConfigurationError(
                f"{type(self).__name__} needs the spatial and channel sizes known, received "
                f"{tuple(input_shape)}"
            )
        out = tuple((n - k) // st + 1 for n, k, st in zip(spatial, self.kernel_size, self.strides))
        if any(o <= 0 for o in out):
            raise ConfigurationError(
                f"{type(self).__name__}: the output would be empty for input shape "
                f"{tuple(input_shape)}; increase the input size"
            )
        return out

    def build(self, input_shape: Any) -> None:
        if len(input_shape) != self._rank + 2:
            raise ConfigurationError(
                f"{type(self).__name__} expects inputs of rank {self._rank + 2}, received "
                f"{tuple(input_shape)}"
            )
        out = self._out(input_shape)
        patch = math.prod(self.kernel_size) * input_shape[-1]
        self.kernel = self.add_weight(
            "kernel", (math.prod(out), patch, self.filters), initializer=self.kernel_initializer
        )
        self.bias = (
            self.add_weight("bias", (*out, self.filters), initializer=self.bias_initializer)
            if self.use_bias
            else None
        )
        self.built = True

    def call(self, inputs: Any) -> Any:
        out = self._out(inputs.shape)
        patches = local_patches(inputs, self.kernel_size, self.strides, out)
        y = batch_matmul(s.transpose(patches, (1, 0, 2)), self.kernel)  # (P, B, F)
        y = s.reshape(s.transpose(y, (1, 0, 2)), (-1, *out, self.filters))
        if self.bias is not None:
            y = m.add(y, self.bias)
        return self.activation(y)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return (input_shape[0], *self._out(input_shape), self.filters)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "data_format": self.data_format,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "implementation": self.implementation,
        }


class LocallyConnected1D(_LocallyConnected):
    """Unshared 1-D convolution over ``(batch, steps, channels)``."""

    _rank = 1


class LocallyConnected2D(_LocallyConnected):
    """Unshared 2-D convolution over ``(batch, rows, cols, channels)``."""

    _rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), **kwargs: Any):
        super().__init__(filters, kernel_size, strides, **kwargs)
