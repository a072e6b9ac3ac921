"""Core layers: Dense, Activation, Flatten, Reshape, Dropout, ReLU, Softmax, Embedding,
RecomputationCheckpoint, OpLambda."""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.graph import apply
from ipusim.graph.ops import math as m
from ipusim.graph.ops import nn, shape
from ipusim.graph.variable import Variable
from ipusim.keras import activations, backend, initializers
from ipusim.keras.engine.layer import Layer


def _positive_int(layer: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{layer}: `{arg}` must be a positive integer, received {value!r}")
    return int(value)


def check_rate(layer: str, arg: str, value: Any) -> float:
    """A dropout rate: a number in [0, 1), as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise ConfigurationError(f"{layer}: `{arg}` must be a float in [0, 1), received {value!r}")
    return float(value)


def check_rank(layer: Layer, inputs: Any, rank: int, layout: str) -> None:
    """Raise unless ``inputs`` have ``rank`` axes, laid out as ``layout``."""
    if inputs.ndim != rank:
        raise ConfigurationError(
            f"{type(layer).__name__} {layer.name!r} expects {rank}-D inputs {layout}, "
            f"received shape {inputs.shape}"
        )


def no_regularizers(layer: str, arguments: dict[str, Any]) -> None:
    """Refuse, naming them, the ``*_regularizer`` / ``*_constraint`` arguments among a layer's
    ``arguments`` (its ``locals()``) that are set: ipusim does not simulate them
    (``activity_regularizer`` is the base Layer's and is simulated)."""
    kinds = ("_regularizer", "_constraint")
    given = sorted(
        k
        for k, v in arguments.items()
        if k.endswith(kinds) and k != "activity_regularizer" and v is not None
    )
    if given:
        raise UnsupportedError(
            f"{layer}: ipusim does not simulate {', '.join(given)}; leave "
            f"{'it' if len(given) == 1 else 'them'} None"
        )


class SameShapeLayer(Layer):
    """A layer whose output has its input's shape: ``compute_output_shape`` without tracing."""

    def compute_output_shape(self, input_shape: Any) -> tuple[Any, ...]:
        return tuple(input_shape)


def add_bias(layer: Any, shape: tuple[int, ...]) -> None:
    """Add ``layer``'s ``bias`` weight of ``shape`` (None when ``use_bias`` is off); mark it built.

    Args:
        layer: a layer with ``use_bias`` and ``bias_initializer``, its kernel already added
            (weights are created, and seeded, in that order).
        shape: the bias shape.
    """
    layer.bias = (
        layer.add_weight("bias", shape, initializer=layer.bias_initializer)
        if layer.use_bias
        else None
    )
    layer.built = True


def add_kernel(layer: Any, kernel_shape: tuple[int, ...], bias_shape: tuple[int, ...]) -> Variable:
    """Add and return ``layer``'s kernel (by its ``kernel_initializer``), then add its bias
    (:func:`add_bias`)."""
    kernel: Variable = layer.add_weight(
        "kernel", kernel_shape, initializer=layer.kernel_initializer
    )
    add_bias(layer, bias_shape)
    return kernel


def as_compute_dtype(layer: Layer, inputs: Any) -> Any:
    """``inputs`` cast to ``layer``'s compute dtype (when they have another)."""
    return m.cast(inputs, layer.compute_dtype) if inputs.dtype != layer.compute_dtype else inputs


def bias_and_activation(layer: Any, y: Any) -> Any:
    """``layer``'s activation of ``y`` plus its bias (on the last axis, when it has one)."""
    if layer.use_bias:
        y = nn.bias_add(y, layer.bias)
    return layer.activation(y)


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` on the last axis.

    Args:
        units: output size.
        activation: name or function; None = linear.
        use_bias: add a bias vector.
        kernel_initializer / bias_initializer: initializer names, objects or functions.
    """

    def __init__(
        self,
        units: int,
        activation: Any = None,
        use_bias: bool = True,
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
        no_regularizers("Dense", locals())
        self.units = _positive_int("Dense", "units", units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape: Any) -> None:
        if not isinstance(input_shape, tuple) or len(input_shape) < 2 or input_shape[-1] is None:
            raise ConfigurationError(
                f"Dense {self.name!r} needs inputs of rank >= 2 with a known last "
                f"dimension, received input shape {input_shape}"
            )
        self.kernel = add_kernel(self, (input_shape[-1], self.units), (self.units,))

    def call(self, inputs: Any) -> Any:
        inputs = as_compute_dtype(self, inputs)  # as tf.keras: uint8 / bool / int inputs are cast
        if inputs.ndim == 2:
            y = nn.matmul(inputs, self.kernel)
        else:  # apply to the last axis of a higher-rank input
            lead = inputs.shape[:-1]
            flat = shape.reshape(inputs, (-1, inputs.shape[-1]))
            y = shape.reshape(nn.matmul(flat, self.kernel), (-1, *lead[1:], self.units))
        return bias_and_activation(self, y)

    _config_names = "units activation use_bias kernel_initializer bias_initializer"


class Activation(Layer):
    """Applies an activation function by name or function."""

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)

    _config_names = "activation"


class ReLU(Layer):
    """Rectified linear unit (``max_value``, ``negative_slope`` and ``threshold`` at defaults)."""

    def __init__(
        self,
        max_value: float | None = None,
        negative_slope: float = 0.0,
        threshold: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ConfigurationError(f"ReLU: `max_value` must be >= 0, received {max_value}")
        if negative_slope < 0:
            raise ConfigurationError(
                f"ReLU: `negative_slope` must be >= 0, received {negative_slope}"
            )
        if threshold != 0:
            raise UnsupportedError("ReLU: a non-zero `threshold` is not supported yet")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs: Any) -> Any:
        y = m.relu(inputs)
        if self.negative_slope:
            y = m.subtract(y, m.multiply(m.relu(m.negative(inputs)), self.negative_slope))
        if self.max_value is not None:
            y = m.minimum(y, self.max_value)
        return y

    _config_names = "max_value negative_slope threshold"


class Softmax(Layer):
    """Softmax along ``axis``."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs: Any) -> Any:
        return nn.softmax(inputs, axis=self.axis)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "axis": self.axis}


class Flatten(Layer):
    """Flattens every dimension but the batch."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ConfigurationError(
                f"Flatten: only data_format='channels_last' is supported, received {data_format!r}"
            )

    def call(self, inputs: Any) -> Any:
        if inputs.ndim < 2:
            return shape.reshape(inputs, (-1, 1))
        return shape.flatten(inputs)


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (one entry may be -1)."""

    def __init__(self, target_shape: tuple[int, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in target_shape) > 1 or any(d == 0 or d < -1 for d in target_shape):
            raise ConfigurationError(
                f"Reshape: `target_shape` {target_shape} may contain at most one -1 "
                "and otherwise positive sizes"
            )
        self.target_shape = target_shape

    def call(self, inputs: Any) -> Any:
        batch = inputs.shape[0]
        return shape.reshape(inputs, (-1 if batch is None else batch, *self.target_shape))

    _config_names = "target_shape"


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of inputs during training and scales the rest by 1/(1-rate)."""

    def __init__(
        self, rate: float, noise_shape: Any = None, seed: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        if noise_shape is not None:
            noise_shape = tuple(None if d is None else int(d) for d in noise_shape)
        self.rate = check_rate("Dropout", "rate", rate)
        self.noise_shape = noise_shape
        self.seed = seed
        self._op_seed = backend.next_seed() if seed is None else int(seed)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or self.rate == 0:
            return m.identity(inputs)
        return nn.dropout(inputs, rate=self.rate, seed=self._op_seed, noise_shape=self.noise_shape)

    _config_names = "rate noise_shape seed"


class Embedding(Layer):
    """Maps integer ids to dense vectors.

    Args:
        input_dim: vocabulary size.
        output_dim: vector size.
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        embeddings_regularizer: Any = None,
        activity_regularizer: Any = None,
        embeddings_constraint: Any = None,
        mask_zero: bool = False,
        input_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        no_regularizers("Embedding", locals())
        if mask_zero:
            raise UnsupportedError("Embedding: mask_zero is not supported yet")
        self.input_dim = _positive_int("Embedding", "input_dim", input_dim)
        self.output_dim = _positive_int("Embedding", "output_dim", output_dim)
        if embeddings_initializer == "uniform":
            embeddings_initializer = initializers.RandomUniform(-0.05, 0.05)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.input_length = input_length

    def build(self, input_shape: Any) -> None:
        self.embeddings = self.add_weight(
            "embeddings", (self.input_dim, self.output_dim), initializer=self.embeddings_initializer
        )
        self.built = True

    def call(self, inputs: Any) -> Any:
        ids = inputs if inputs.dtype in ("int32", "int64") else m.cast(inputs, "int32")
        return nn.embedding_lookup(self.embeddings, ids)

    _config_names = "input_dim output_dim input_length embeddings_initializer"


class RecomputationCheckpoint(Layer):
    """Checkpoints its inputs in a pipeline stage (IPU Keras' ``RecomputationCheckpoint``).

    With ``IPUConfig.allow_recompute`` and ``RecomputationMode.RecomputeAndBackpropagateInterleaved``
    the values are stashed instead of recomputed (see :mod:`ipusim.lowering.recompute`); the
    other modes ignore it. Inputs pass through unchanged (a tensor or a structure of tensors).
    """

    def call(self, inputs: Any) -> Any:
        # Keras' nesting (a list is a structure), not tf.data's (where a list is one value).
        from ipusim.keras.engine.nest import map_structure

        return map_structure(lambda t: apply("recomputation_checkpoint", t), inputs)


class OpLambda(Layer):
    """A raw op applied to functional-model tensors outside any layer (Keras' TFOpLambda)."""

    def __init__(self, op_name: str, attrs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("name", backend.unique_name(f"tf.{op_name}"))
        super().__init__(**kwargs)
        self.op_name = op_name
        self.attrs = dict(attrs or {})

    def call(self, inputs: list[Any]) -> Any:
        return apply(self.op_name, *inputs, **self.attrs)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "op_name": self.op_name, "attrs": _jsonable(self.attrs)}


def _jsonable(attrs: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in attrs.items():
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, str | int | float | bool | list | type(None)):
            raise ConfigurationError(
                f"op attribute {key}={value!r} cannot be saved in a model config"
            )
        out[key] = value
    return out
