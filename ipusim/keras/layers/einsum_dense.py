"""EinsumDense: a dense layer given by an einsum equation (tf.keras 2).

The equation is lowered to one matrix product: the input's axes are transposed into
(free axes, contracted axes), the kernel's into (contracted axes, new axes), one ``matmul``
multiplies them, and a reshape and transpose give the output's axis order. So every equation
Keras models use ("ab,bc->ac", "abc,cd->abd", "abc,cde->abde", "abcd,cde->abe", "...b,bc->...c")
costs one matmul plus the copies. Supported: equations whose kernel axes each appear in the input
or the output but not both, with "..." only on the left.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn
from ipusim.graph.ops import shape as s
from ipusim.keras import activations, initializers
from ipusim.keras.engine.layer import Layer, config_of
from ipusim.keras.layers.core import as_compute_dtype, no_regularizers

_EQUATION = re.compile(r"^([a-zA-Z.]+),([a-zA-Z]+)->([a-zA-Z.]+)$")
_SPARE = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse(equation: str, rank: int) -> tuple[str, str, str]:
    """(input, kernel, output) labels with a leading "..." replaced by spare capitals."""
    match = _EQUATION.match(equation.replace(" ", ""))
    if match is None:
        raise ConfigurationError(
            f"EinsumDense: equation {equation!r} is not of the form 'ab,bc->ac' "
            "(or '...b,bc->...c')"
        )
    inp, ker, out = match.groups()
    if "." in inp or "." in out:
        if not (inp.startswith("...") and out.startswith("...")) or "." in inp[3:] + out[3:]:
            raise UnsupportedError(
                f"EinsumDense: ipusim supports '...' only at the start of both the input and the "
                f"output, received {equation!r}"
            )
        elided = rank - len(inp[3:])
        spare = "".join(c for c in _SPARE if c not in inp + ker + out)[:elided]
        inp, out = spare + inp[3:], spare + out[3:]
    if len(inp) != rank:
        raise ConfigurationError(
            f"EinsumDense: equation {equation!r} names {len(inp)} input axes, the input has "
            f"rank {rank}"
        )
    return inp, ker, out


def _plan(inp: str, ker: str, out: str, equation: str) -> tuple[str, str, str]:
    """(free input labels, contracted labels, new kernel labels)."""
    both = [c for c in ker if c in inp and c in out]
    summed = [c for c in inp if c not in ker and c not in out]
    if both or summed:
        raise UnsupportedError(
            f"EinsumDense: equation {equation!r} has axes shared by input, kernel and output "
            f"({both}) or summed from the input alone ({summed}); ipusim lowers only "
            "equations with one matrix product"
        )
    free = "".join(c for c in inp if c not in ker)
    contracted = "".join(c for c in inp if c in ker)
    new = "".join(c for c in ker if c not in inp)
    missing = [c for c in out if c not in free + new]
    if missing:
        raise ConfigurationError(
            f"EinsumDense: output axes {missing} of {equation!r} come from nowhere"
        )
    return free, contracted, new


def einsum_matmul(x: Any, kernel: Any, inp: str, ker: str, out: str, equation: str) -> Any:
    """``einsum(equation, x, kernel)`` as transposes around one matmul."""
    free, contracted, new = _plan(inp, ker, out, equation)
    sizes = {c: d for c, d in zip(inp, x.shape, strict=True)}
    sizes.update({c: d for c, d in zip(ker, kernel.shape, strict=True)})
    x_order = [inp.index(c) for c in free + contracted]
    if x_order != list(range(len(inp))):
        x = s.transpose(x, x_order)
    k = math.prod(sizes[c] for c in contracted)
    y = nn.matmul(s.reshape(x, (-1, k)), _kernel_matrix(kernel, ker, contracted, new))
    free_dims = [-1 if sizes[c] is None else sizes[c] for c in free]
    if free_dims.count(-1) > 1:
        raise UnsupportedError(
            f"EinsumDense: only one input axis may have an unknown size, received {x.shape}"
        )
    y = s.reshape(y, (*free_dims, *(sizes[c] for c in new)))
    order = [(free + new).index(c) for c in out]
    return y if order == list(range(len(out))) else s.transpose(y, order)


def _kernel_matrix(kernel: Any, ker: str, contracted: str, new: str) -> Any:
    order = [ker.index(c) for c in contracted + new]
    if order != list(range(len(ker))):
        kernel = s.transpose(kernel, order)
    rows = math.prod(kernel.shape[: len(contracted)])
    return s.reshape(kernel, (rows, -1))


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``.

    Args:
        equation: e.g. ``"abc,cde->abde"`` (input, kernel -> output labels).
        output_shape: the output's shape without the batch axis (an int for rank 2); None
            entries take the input's size.
        activation: name or function. bias_axes: output labels the bias spans (None: no bias).
        kernel_initializer / bias_initializer: as Dense.
    """

    def __init__(
        self,
        equation: str,
        output_shape: Any,
        activation: Any = None,
        bias_axes: str | None = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        no_regularizers("EinsumDense", locals())
        self.equation = str(equation)
        shape = [output_shape] if isinstance(output_shape, int) else list(output_shape)
        self.partial_output_shape = [None if d is None else int(d) for d in shape]
        self.activation = activations.get(activation)
        self.bias_axes = bias_axes
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape: Any) -> None:
        inp, ker, out = _parse(self.equation, len(input_shape))
        _plan(inp, ker, out, self.equation)
        lead = len(out) - len(self.partial_output_shape)
        if lead < 1 or any(c not in inp for c in out[:lead]):
            raise ConfigurationError(
                f"EinsumDense: output_shape {self.partial_output_shape} must give the "
                f"non-batch output axes of {self.equation!r} (those after '...' if it has one)"
            )
        in_sizes = dict(zip(inp, input_shape, strict=True))
        out_sizes = {c: in_sizes[c] for c in out[:lead]}
        for c, d in zip(out[lead:], self.partial_output_shape, strict=True):
            out_sizes[c] = in_sizes.get(c) if d is None else d
            if c in in_sizes and d is not None and in_sizes[c] not in (None, d):
                raise ConfigurationError(
                    f"EinsumDense: output axis {c!r} has size {d} but the input's is {in_sizes[c]}"
                )
        self._labels = (inp, ker, out)
        kernel_shape = tuple(in_sizes[c] if c in in_sizes else out_sizes[c] for c in ker)
        self.kernel = self.add_weight("kernel", kernel_shape, initializer=self.kernel_initializer)
        self.bias = None
        if self.bias_axes:
            unknown = [c for c in self.bias_axes if c not in out]
            if unknown:
                raise ConfigurationError(
                    f"EinsumDense: bias axes {unknown} are not output axes of {self.equation!r}"
                )
            first = min(out.index(c) for c in self.bias_axes)
            bias_shape = tuple(out_sizes[c] if c in self.bias_axes else 1 for c in out[first:])
            self.bias = self.add_weight("bias", bias_shape, initializer=self.bias_initializer)
        self.built = True

    def call(self, inputs: Any) -> Any:
        inp, ker, out = self._labels
        y = einsum_matmul(as_compute_dtype(self, inputs), self.kernel, inp, ker, out, self.equation)
        if self.bias is not None:
            y = m.add(y, self.bias)
        return self.activation(y)

    def get_config(self) -> dict[str, Any]:
        shape = {"equation": self.equation, "output_shape": self.partial_output_shape}
        names = "activation bias_axes kernel_initializer bias_initializer"
        return super().get_config() | shape | config_of(self, names)
