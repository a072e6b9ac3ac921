"""``keras.Input`` and the ``InputLayer`` that produces a functional model's inputs."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError
from ipusim.graph.spec import TensorSpec, canonical_dtype
from ipusim.keras import backend
from ipusim.keras.engine.keras_tensor import KerasTensor, LayerCall
from ipusim.keras.engine.layer import Layer


class InputLayer(Layer):
    """The layer behind ``keras.Input``: holds the input spec, computes nothing."""

    def __init__(
        self,
        input_shape: Any = None,
        batch_size: int | None = None,
        dtype: object | None = None,
        name: str | None = None,
        batch_input_shape: Any = None,
        sparse: bool = False,
        ragged: bool = False,
        **kwargs: Any,
    ) -> None:
        if sparse or ragged:
            raise UnsupportedError("sparse and ragged inputs are not supported on the IPU")
        if batch_input_shape is None:
            if input_shape is None:
                raise ConfigurationError("InputLayer needs `input_shape` or `batch_input_shape`")
            shape = (input_shape,) if isinstance(input_shape, int) else tuple(input_shape)
            batch_input_shape = (batch_size, *shape)
        batch_input_shape = tuple(None if d is None else int(d) for d in batch_input_shape)
        if any(d is not None and d <= 0 for d in batch_input_shape):
            raise ConfigurationError(
                f"Input shape {batch_input_shape} has a non-positive dimension"
            )
        dtype = canonical_dtype(dtype) if dtype is not None else backend.floatx()
        super().__init__(
            name=name or backend.unique_name("input"),
            dtype=dtype,
            batch_input_shape=batch_input_shape,
            **kwargs,
        )
        self.built = True
        call = LayerCall(self, (), {})
        self.output = KerasTensor(TensorSpec(batch_input_shape, dtype, self.name), call, 0)
        call.outputs = [self.output]
        call.structure = self.output
        self._inbound_calls.append(call)

    def get_config(self) -> dict[str, Any]:
        shape = self._batch_input_shape
        assert shape is not None  # __init__ always passes a batch_input_shape
        return {
            "batch_input_shape": list(shape),
            "dtype": self._dtype,
            "name": self.name,
        }


def Input(
    shape: Any = None,
    batch_size: int | None = None,
    name: str | None = None,  # noqa: N802
    dtype: object | None = None,
    sparse: bool = False,
    tensor: Any = None,
    ragged: bool = False,
    batch_shape: Any = None,
    **kwargs: Any,
) -> KerasTensor:
    """A symbolic input of a functional model.

    Args:
        shape: shape of one sample (without the batch dimension), e.g. ``(28, 28)``.
        batch_size: fixed batch size, or None.
        name: layer name.
        dtype: dtype of the input (default ``keras.backend.floatx()``).
        batch_shape: full shape including the batch dimension (instead of shape/batch_size).
    """
    if tensor is not None:
        raise UnsupportedError("Input(tensor=...) is not supported")
    if shape is None and batch_shape is None:
        raise ConfigurationError(
            "Input() needs `shape` (one sample's shape, e.g. shape=(28, 28)) or `batch_shape`"
        )
    if kwargs:
        raise InvalidTypeError(f"Input(): unexpected keyword argument(s) {sorted(kwargs)}")
    layer = InputLayer(
        input_shape=shape,
        batch_size=batch_size,
        dtype=dtype,
        name=name,
        batch_input_shape=batch_shape,
        sparse=sparse,
        ragged=ragged,
    )
    return layer.output
