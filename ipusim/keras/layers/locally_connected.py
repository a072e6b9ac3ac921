"""Locally connected layers (``LocallyConnected1D`` / ``2D``): convolutions with unshared weights.

Built exactly as Keras' ``implementation=1`` builds them (``backend.local_conv``), which is the
graph IPU TensorFlow compiles: one slice per output position, each flattened to ``(1, N, F)``
with ``F = prod(kernel_size)·C`` in (taps, channel) order, concatenated to ``(P, N, F)`` and
multiplied by the kernel ``(P, F, filters)`` as a batched matrix product (P = output positions),
then laid out as ``(N, *output, filters)``. Only ``padding="valid"`` exists for this
implementation (as in Keras); implementations 2 and 3 (a masked dense kernel, a sparse one) are
not simulated.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import linalg
from ipusim.graph.ops import math as m
from ipusim.graph.ops import shape as shape_ops
from ipusim.graph.variable import Variable
from ipusim.keras import activations, initializers
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.conv import check_data_format, normalize_tuple
from ipusim.keras.layers.conv1d import normalize_single
from ipusim.keras.layers.core import _positive_int, add_kernel, no_regularizers


class _LocallyConnected(Layer):
    _rank = 1
    bias: Variable | None  # added with the kernel (core.add_bias)

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
        no_regularizers(name, locals())
        if implementation != 1:
            raise UnsupportedError(
                f"{name}: implementation={implementation!r} is not simulated by ipusim; use "
                "implementation=1 (Keras' default: one slice and product per output position)"
            )
        if not isinstance(padding, str) or padding.lower() != "valid":
            raise ConfigurationError(
                f'Invalid border mode for {name} (only "valid" is supported if '
                f"implementation is 1): {padding!r}"
            )
        filters = _positive_int(name, "filters", filters)
        check_data_format(data_format, name)
        self.filters = filters
        self.kernel_size = self._tuple(kernel_size, "kernel_size")
        self.strides = self._tuple(strides, "strides")
        self.padding = "valid"
        self.implementation = 1
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def _tuple(self, value: Any, arg: str) -> tuple[int, ...]:
        name = type(self).__name__
        if self._rank == 1:
            return (normalize_single(value, arg, name),)
        return normalize_tuple(value, arg, name)

    def build(self, input_shape: Any) -> None:
        name = type(self).__name__
        if (
            not isinstance(input_shape, tuple)
            or len(input_shape) != self._rank + 2
            or any(d is None for d in input_shape[1:])
        ):
            raise ConfigurationError(
                f"{name} {self.name!r} needs inputs of rank {self._rank + 2} with every size but "
                f"the batch known, received input shape {input_shape}"
            )
        self.output_shape_ = tuple(
            (size - k) // s + 1
            for size, k, s in zip(input_shape[1:-1], self.kernel_size, self.strides, strict=True)
        )
        if min(self.output_shape_) <= 0:
            raise ConfigurationError(
                f"{name} {self.name!r}: input shape {input_shape} is smaller than the kernel "
                f"{self.kernel_size}; use a smaller kernel or a larger input"
            )
        features = math.prod(self.kernel_size) * input_shape[-1]
        kernel_shape = (math.prod(self.output_shape_), features, self.filters)
        self.kernel = add_kernel(self, kernel_shape, (*self.output_shape_, self.filters))

    def call(self, inputs: Any) -> Any:
        features = self.kernel.shape[1]
        patches = []
        for position in itertools.product(*(range(n) for n in self.output_shape_)):
            begin = (0, *(p * s for p, s in zip(position, self.strides, strict=True)), 0)
            patch = shape_ops.slice(inputs, begin, (-1, *self.kernel_size, -1))
            patches.append(shape_ops.reshape(patch, (1, -1, features)))
        stacked = shape_ops.concat(patches, axis=0) if len(patches) > 1 else patches[0]
        y = linalg.batch_matmul(stacked, self.kernel)  # (P, N, filters)
        y = shape_ops.reshape(y, (*self.output_shape_, -1, self.filters))
        rank = self._rank
        y = shape_ops.transpose(y, (rank, *range(rank), rank + 1))
        if self.use_bias:
            y = m.add(y, self.bias)
        return self.activation(y)

    _config_names = (
        "filters kernel_size strides padding activation use_bias kernel_initializer "
        "bias_initializer implementation"
    )


class LocallyConnected1D(_LocallyConnected):
    """1-D convolution with a separate kernel per output step (kernel ``(Lo, K·C, filters)``,
    bias ``(Lo, filters)``)."""

    _rank = 1


class LocallyConnected2D(_LocallyConnected):
    """2-D convolution with a separate kernel per output pixel (kernel
    ``(Ho·Wo, Kh·Kw·C, filters)``, bias ``(Ho, Wo, filters)``)."""

    _rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1), **kwargs: Any):
        super().__init__(filters, kernel_size, strides, **kwargs)
