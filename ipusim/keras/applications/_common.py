"""What every application shares: argument checks, the input, the classifier top, weights.

Mirrors Keras' ``imagenet_utils`` rules (``obtain_input_shape``, ``correct_pad``,
``validate_activation``) so the applications accept and reject the same arguments.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.keras import layers
from ipusim.keras.engine.functional import Functional
from ipusim.keras.engine.input_layer import Input
from ipusim.keras.engine.keras_tensor import KerasTensor

#: The one pretrained set Keras knows by name.
IMAGENET = "imagenet"


class AppArgs(NamedTuple):
    """The arguments every ``keras.applications`` function takes (Keras' names)."""

    include_top: bool
    weights: Any
    input_tensor: Any
    input_shape: Any
    pooling: Any
    classes: int
    classifier_activation: Any


def check_weights(name: str, weights: Any, include_top: bool, classes: int) -> None:
    """Keras' rules for ``weights`` and ``classes``, checked before anything is built."""
    if not (weights in (IMAGENET, None) or (isinstance(weights, str) and os.path.exists(weights))):
        raise ConfigurationError(
            f"{name}: `weights` must be None (random initialisation), 'imagenet' or the path of "
            f"a weights file saved by ipusim (model.save_weights), received {weights!r}"
        )
    if weights == IMAGENET and include_top and classes != 1000:
        raise ConfigurationError(
            f"{name}: with weights='imagenet' and include_top=True, `classes` must be 1000 (the "
            f"ImageNet classes), received {classes}; pass weights=None to train {classes} classes"
        )


def input_shape_for(
    name: str,
    input_shape: Any,
    default_size: int,
    min_size: int,
    include_top: bool,
    weights: Any,
) -> tuple[int | None, int | None, int]:
    """The (height, width, channels) input shape, as Keras' ``obtain_input_shape`` decides it."""
    default = (default_size, default_size, 3)
    if input_shape is None:
        return default if include_top else (None, None, 3)
    shape = tuple(input_shape)
    if weights == IMAGENET and include_top and shape != default:
        raise ConfigurationError(
            f"{name}: with weights='imagenet' and include_top=True the input shape must be "
            f"{default}, received {shape}"
        )
    if len(shape) != 3 or (shape[2] != 3 and weights == IMAGENET):
        raise ConfigurationError(
            f"{name}: `input_shape` must be (height, width, 3) for weights='imagenet' or "
            f"(height, width, channels) otherwise, received {shape}"
        )
    if any(d is not None and d < min_size for d in shape[:2]):
        raise ConfigurationError(
            f"{name}: input height and width must be at least {min_size}, received {shape}"
        )
    return shape


def model_input(input_tensor: Any, shape: tuple[int | None, ...]) -> Any:
    """``keras.Input(shape)`` or the caller's ``input_tensor`` (a keras.Input tensor)."""
    if input_tensor is None:
        return Input(shape=shape)
    if not isinstance(input_tensor, KerasTensor):
        raise ConfigurationError(
            f"`input_tensor` must be a tensor from keras.Input(...), received {input_tensor!r}"
        )
    return input_tensor


def no_kwargs(name: str, kwargs: dict[str, Any]) -> None:
    """Keras' applications take no other keyword arguments."""
    if kwargs:
        raise InvalidTypeError(f"{name}: unexpected keyword argument(s) {sorted(kwargs)}")


def constructor(
    module: str,
    name: str,
    build: Callable[..., Functional],
    doc: str,
    error_name: str | None = None,
) -> Callable[..., Functional]:
    """A ``keras.applications`` function called ``name`` taking Keras' arguments.

    Args:
        module: the module it belongs to (``__name__`` of the caller).
        name: the function's name (``ResNet50``).
        build: called with the :class:`AppArgs` after ``**kwargs`` is checked empty; it must
            end with :func:`finish` (its warning names the user's line, three frames up).
        doc: the function's docstring.
        error_name: the name the unexpected-keyword error gives; default ``name``.
    """

    def application(
        include_top: bool = True,
        weights: Any = IMAGENET,
        input_tensor: Any = None,
        input_shape: Any = None,
        pooling: Any = None,
        classes: int = 1000,
        classifier_activation: Any = "softmax",
        **kwargs: Any,
    ) -> Functional:
        no_kwargs(error_name or name, kwargs)
        return build(AppArgs(include_top, weights, input_tensor, input_shape, pooling, classes,
                             classifier_activation))  # fmt: skip

    application.__name__ = application.__qualname__ = name
    application.__module__ = module
    application.__doc__ = doc
    return application


def checked_input(
    name: str, a: AppArgs, default_size: int = 224
) -> tuple[tuple[int | None, int | None, int], Any]:
    """The checks every application makes, then its input shape and input tensor."""
    check_weights(name, a.weights, a.include_top, a.classes)
    check_classifier(name, a.include_top, a.weights, a.classifier_activation)
    check_pooling(name, a.pooling)
    shape = input_shape_for(name, a.input_shape, default_size, 32, a.include_top, a.weights)
    return shape, model_input(a.input_tensor, shape)


def check_classifier(name: str, include_top: bool, weights: Any, activation: Any) -> None:
    """Keras allows only softmax or None as the top activation with ImageNet weights."""
    if include_top and weights == IMAGENET and activation not in ("softmax", None):
        raise ConfigurationError(
            f"{name}: with weights='imagenet' only classifier_activation='softmax' or None is "
            f"allowed, received {activation!r}"
        )


def check_pooling(name: str, pooling: Any) -> None:
    if pooling not in (None, "avg", "max"):
        raise ConfigurationError(
            f"{name}: `pooling` must be None, 'avg' or 'max', received {pooling!r}"
        )


def top(
    x: Any, a: AppArgs, pool_name: str | None = None, dropout: float = 0.0, **dense: Any
) -> Any:
    """The classifier top (global average pooling, optional ``top_dropout``, the
    ``predictions`` Dense layer with ``dense`` arguments), or without it the optional pooling
    of a headless model (``pooling='avg'`` / ``'max'``)."""
    if not a.include_top:
        if a.pooling == "avg":
            return layers.GlobalAveragePooling2D()(x)
        if a.pooling == "max":
            return layers.GlobalMaxPooling2D()(x)
        return x
    x = layers.GlobalAveragePooling2D(name=pool_name)(x)
    if dropout > 0:
        x = layers.Dropout(dropout, name="top_dropout")(x)
    activation = a.classifier_activation
    return layers.Dense(a.classes, activation=activation, name="predictions", **dense)(x)


def finish(inputs: Any, outputs: Any, name: str, weights: Any, stacklevel: int = 4) -> Functional:
    """The model with its weights (:func:`load_weights`; ``stacklevel`` counts from the caller of
    this function, as if it called :func:`load_weights` itself)."""
    model = Functional(inputs, outputs, name=name)
    load_weights(model, weights, stacklevel=stacklevel + 1)
    return model


def make_divisible(value: float, divisor: int = 8) -> int:
    """Channels ``value`` rounded to a multiple of ``divisor`` (at least ``divisor``), never more
    than 10% down (Keras' MobileNet ``_make_divisible`` and EfficientNet ``round_filters``)."""
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if new < 0.9 * value:
        new += divisor
    return int(new)


def correct_pad(x: Any, kernel_size: int | tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """The explicit padding Keras puts before a stride-2 'valid' convolution.

    Reproduces TensorFlow's 'same' output size with the extra pixel, when the input size is
    even, placed after rather than before (``imagenet_utils.correct_pad``).
    """
    kernel = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    h, w = x.shape[1:3]
    adjust = (1, 1) if h is None else (1 - h % 2, 1 - w % 2)
    half = (kernel[0] // 2, kernel[1] // 2)
    return ((half[0] - adjust[0], half[0]), (half[1] - adjust[1], half[1]))


def load_weights(model: Any, weights: Any, stacklevel: int = 3) -> None:
    """Random initialisation (None), a weights file, or the ImageNet request (warned at the
    caller ``stacklevel`` frames up, the application's caller)."""
    if weights == IMAGENET:
        warnings.warn(
            f"{model.name}: pretrained ImageNet weights are not available in ipusim (nothing is "
            "downloaded); the model keeps its random initialisation. Timing and memory "
            "simulations are unaffected; predictions are not those of the trained network.",
            UserWarning,
            stacklevel=stacklevel,
        )
    elif weights is not None:
        model.load_weights(weights)
