"""``keras.Model``: a layer with training. Subclass it and write ``call``, or build a functional
model with ``keras.Model(inputs, outputs)`` (dispatched to :class:`Functional`).

Every execution path goes through :meth:`Model.trace`, which calls the model on graph Symbols of
concrete specs and returns the op graph that both the numerics and the timing paths use.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from ipusim.errors import ConfigurationError, InputDataError
from ipusim.graph.graph import Graph, Symbol, default_graph
from ipusim.graph.spec import TensorSpec
from ipusim.keras.engine.keras_tensor import KerasTensor
from ipusim.keras.engine.layer import Layer, shape_specs, training_scope
from ipusim.keras.engine.nest import flatten, map_structure
from ipusim.keras.engine.training import TrainingMixin


@dataclass
class Trace:
    """A model traced for concrete input specs.

    Attributes:
        graph: the op graph.
        inputs: the input placeholders, in the model's input structure.
        outputs: the output symbols, in the model's output structure.
        training: whether it was traced in training mode.
    """

    graph: Graph
    inputs: Any
    outputs: Any
    training: bool


class Model(TrainingMixin, Layer):
    """A trainable model. See the module docstring for the ways to build one."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Model:
        if cls is Model and (_looks_functional(args, kwargs)):
            from ipusim.keras.engine.functional import Functional

            return Functional.__new__(Functional)
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # keras.Model(inputs, outputs) never gets here: __new__ returns a Functional, whose
        # __init__ Python runs instead. Other positional arguments are ignored, as tf.keras 2.x
        # ignores them: the IPU Keras guide's subclassed models call super().__init__(self).
        super().__init__(**kwargs)
        self._init_training_state()
        self._build_input_spec: Any = None
        from ipusim.keras.extensions import attach_if_in_strategy

        attach_if_in_strategy(self)

    def __getattr__(self, name: str) -> Any:
        """The IPU extension's methods and properties (``set_pipelining_options`` ...), bound
        to this model, for a model created in an IPUStrategy scope; the class never changes.

        Raises:
            AttributeError: no such attribute (the model has no extension, or it has none).
        """
        extension = self.__dict__.get("_ipu_extension")
        if extension is not None and not name.startswith("__"):
            try:
                return extension.attribute(self, name)
            except AttributeError:
                pass
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------------------ structure
    @property
    def layers(self) -> list[Layer]:
        """The model's layers (direct children, in the order they were set)."""
        return list(self._tracked_layers)

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A layer by name or index."""
        if index is not None:
            if not -len(self.layers) <= index < len(self.layers):
                raise ConfigurationError(
                    f"get_layer: index {index} is out of range for {len(self.layers)} layers"
                )
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ConfigurationError(
            f"No such layer: {name}. Existing layers are: {[layer.name for layer in self.layers]}."
        )

    def reset_states(self) -> None:
        """Zero the carried states of the model's stateful layers (stateful RNNs), as Keras."""
        for layer in self._flat_layers():
            if getattr(layer, "stateful", False):
                layer.reset_states()  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ building & tracing
    def build(self, input_shape: Any) -> None:
        """Create the weights by tracing ``call`` on inputs of ``input_shape``.

        Args:
            input_shape: a shape tuple including the batch dimension (None allowed), a list of
                them for several inputs, or ``keras.Input`` tensors (to give dtypes).
        """
        if input_shape is None:
            raise ConfigurationError(
                f"{self.name}: build() needs an input shape, e.g. (None, 28, 28)"
            )
        specs = shape_specs(input_shape, self._dtype)
        trace = self.trace(specs, training=False)
        if self._ipu_extension is not None:
            self._ipu_extension.traced(self, trace, building=True)
        self._build_input_spec = specs

    def _ensure_built(self) -> None:
        """Build now if the input shape is already known (Sequential with an Input)."""

    def trace(self, input_specs: Any, training: bool) -> Trace:
        """Call the model on placeholders of ``input_specs`` and return the op graph.

        A failure leaves the model as it was: layers that this call built are unbuilt again.
        """
        graph = Graph(self.name)
        placeholders = map_structure(lambda s: graph.placeholder(s), input_specs)
        layers = [self, *self._flat_layers()]
        snapshot = [(layer, layer.built, len(layer._own_weights)) for layer in layers]
        extension = self._ipu_extension
        scope = extension.trace_scope(self) if extension is not None else nullcontext()
        try:
            with scope, training_scope(training), default_graph(graph):
                outputs = self._call_graph(graph, placeholders, training)
        except Exception:
            for layer, built, count in snapshot:
                layer.built = built
                del layer._own_weights[count:]
            for layer in self._flat_layers():
                if layer not in [s[0] for s in snapshot]:
                    layer.built = False
                    layer._own_weights.clear()
            raise
        self.built = True
        if self._build_input_spec is None:
            self._build_input_spec = map_structure(
                lambda s: TensorSpec((None, *s.shape[1:]), s.dtype, s.name), input_specs
            )
        result = Trace(graph, placeholders, outputs, training)
        if extension is not None:
            extension.traced(self, result, building=False)
        return result

    def _call_graph(self, graph: Graph, inputs: Any, training: bool) -> Any:
        """Run the model body on graph Symbols (not recorded as an invocation of the model)."""
        kwargs = {"training": training} if self._call_accepts_training else {}
        outputs = self.call(inputs, **kwargs)
        return map_structure(lambda o: o if isinstance(o, Symbol) else graph.constant(o), outputs)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        raise NotImplementedError(
            f"The function `call` for the model {self.name} has not been implemented. When "
            "subclassing the `Model` class you must implement the `call` function."
        )

    @property
    def input_spec_structure(self) -> Any:
        """Specs of the inputs the model was built for (batch dimension None), or None."""
        return self._build_input_spec

    # ------------------------------------------------------------------ reporting & saving
    def summary(
        self,
        line_length: int | None = None,
        positions: list[float] | None = None,
        print_fn: Any = None,
    ) -> None:
        """Print a Keras-style table of layers, output shapes and parameter counts."""
        from ipusim.keras.engine.summary import print_summary

        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn)

    def save(
        self, filepath: str, overwrite: bool = True, include_optimizer: bool = True, **kwargs: Any
    ) -> None:
        """Save architecture, weights, compile arguments and (``include_optimizer``) the
        optimizer's step count and slots to one file (npz with a JSON config; no pickle)."""
        from ipusim.keras.engine.saving import save_model

        save_model(self, filepath, overwrite=overwrite, include_optimizer=include_optimizer)

    def save_weights(self, filepath: str, overwrite: bool = True, **kwargs: Any) -> None:
        """Save the weights to an ``.npz`` file, written atomically."""
        from ipusim.keras.engine.saving import save_weights

        save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath: str, **kwargs: Any) -> None:
        """Load weights saved by :meth:`save_weights` (all checked before any is set)."""
        from ipusim.keras.engine.saving import load_weights

        load_weights(self, filepath)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "trainable": self.trainable, "dtype": self._dtype}


def _looks_functional(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    if "inputs" in kwargs and "outputs" in kwargs:
        return True
    if len(args) >= 2:
        return any(isinstance(t, KerasTensor) for t in flatten(list(args[:2])))
    return len(args) == 1 and "outputs" in kwargs


def check_input_spec(model: str, index: int, expected: TensorSpec, received: TensorSpec) -> None:
    """Raise a clear error when data of ``received`` spec cannot feed input ``index``."""
    if expected.rank != received.rank or any(
        e is not None and e != r for e, r in zip(expected.shape, received.shape)
    ):
        raise InputDataError(
            f"Input {index} of model {model!r} is incompatible: expected shape {expected.shape}, "
            f"received {received.shape}. Reshape the data or change the model's input shape."
        )
