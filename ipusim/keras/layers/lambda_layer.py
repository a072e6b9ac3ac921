"""``keras.layers.Lambda``: an arbitrary function of tensors as a layer.

The function runs on graph Symbols each time the layer is called (the operators and the ``tf.*``
ops of :mod:`ipusim.compat` work on them), so whatever it computes has spec inference, a gradient
and a cost like any other op; the output shape is found by tracing it, as Keras does when
``output_shape`` is not given.

Saving: Keras stores a Python lambda as marshalled bytecode, which ipusim does not write (it reads
no code from model files). A named module-level function is saved by module and name and found
again on loading (``custom_objects`` first, as in Keras); saving a Lambda holding an anonymous
``lambda`` raises :class:`~ipusim.errors.UnsupportedError` naming the fix.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from ipusim.errors import InvalidTypeError, ModelFileError, UnsupportedError
from ipusim.keras.engine.layer import Layer

__all__ = ["Lambda"]


def _accepts(function: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer (``keras.layers.Lambda``).

    Args:
        function: the function of the inputs (a tensor or a list of tensors). It is also passed
            ``mask`` and ``training`` when its signature takes them, as in Keras.
        output_shape: accepted for Keras compatibility and saved; ipusim always infers the
            shape by tracing ``function``, so it is not needed.
        mask: accepted as in Keras; ipusim has no masking, so only None is allowed.
        arguments: extra keyword arguments passed to ``function``.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        output_shape: Any = None,
        mask: Any = None,
        arguments: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not callable(function):
            raise InvalidTypeError(f"Lambda: `function` must be callable, received {function!r}")
        if mask is not None:
            raise UnsupportedError(
                "Lambda: `mask` is not simulated (ipusim's layers do not propagate masks); "
                "leave mask=None"
            )
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape

    def call(self, inputs: Any, mask: Any = None, training: Any = None) -> Any:
        kwargs = dict(self.arguments)
        if _accepts(self.function, "mask"):
            kwargs["mask"] = mask
        if _accepts(self.function, "training"):
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def get_config(self) -> dict[str, Any]:
        function = self.function
        name = getattr(function, "__qualname__", "")
        if not name or "<lambda>" in name or "<locals>" in name:
            raise UnsupportedError(
                f"Lambda {self.name!r}: a lambda or nested function cannot be saved by ipusim "
                "(Keras stores its bytecode, which ipusim never writes or loads). Define the "
                "function at module level (def f(x): ...) and pass it as Lambda(f), or pass it "
                "to load_model in custom_objects."
            )
        return {
            **super().get_config(),
            "function": name,
            "function_type": "function",
            "module": getattr(function, "__module__", None),
            "output_shape": self._output_shape,
            "arguments": self.arguments,
        }

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None
    ) -> Lambda:
        config = dict(config)
        name = config.pop("function")
        module = config.pop("module", None)
        config.pop("function_type", None)
        function = (custom_objects or {}).get(name)
        if function is None and module:
            try:
                holder: Any = importlib.import_module(module)
                for part in name.split("."):
                    holder = getattr(holder, part)
                function = holder
            except (ImportError, AttributeError):
                function = None
        if function is None:
            raise ModelFileError(
                f"Lambda: the function {name!r} (module {module!r}) saved with the model cannot "
                f"be found; pass it to load_model(..., custom_objects={{{name!r}: {name}}})"
            )
        layer = super().from_config({**config, "function": function})
        assert isinstance(layer, Lambda)  # Layer.from_config builds ``cls``
        return layer
