"""The Keras ``Layer`` base class: lifecycle, weights, and the three ways a layer is called.

A layer is called on:
- KerasTensors (building a functional model): output specs come from tracing ``call`` in a scratch
  graph, and the call is recorded as a :class:`LayerCall`;
- graph Symbols (tracing a model): ``call`` adds op nodes, tagged with this invocation;
- numpy arrays (eager use): the layer is traced once per input signature and executed.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError, UnsupportedError
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Graph, Symbol, default_graph
from ipusim.graph.spec import FLOAT_DTYPES, Shape, TensorSpec, canonical_dtype
from ipusim.graph.variable import Variable
from ipusim.keras import activations, backend, initializers
from ipusim.keras.engine.keras_tensor import KerasTensor, LayerCall
from ipusim.keras.engine.nest import flatten, map_structure, pack_sequence_as
from ipusim.keras.keyword_init import fields
from ipusim.keras.mixed_precision import policy as dtype_policies

_context = threading.local()
_T = TypeVar("_T")

_ALLOWED_KWARGS = {
    "input_shape",
    "batch_input_shape",
    "batch_size",
    "input_dim",
    "activity_regularizer",
}


def timing_only() -> bool:
    """True when the run only simulates timing (``IPUConfig.ipusim.numerics = False`` or the
    ``IPUSIM_TIMING_ONLY=1`` environment variable): weights are then never allocated."""
    import os

    if os.environ.get("IPUSIM_TIMING_ONLY", "").strip().lower() in ("1", "true", "yes"):
        return True
    from ipusim.config import active_config

    config = active_config()
    return config is not None and not config.ipusim.numerics


def current_training() -> bool | None:
    """The ``training`` value of the enclosing model call (None outside any)."""
    return getattr(_context, "training", None)


@contextmanager
def training_scope(training: bool | None) -> Iterator[None]:
    previous = getattr(_context, "training", None)
    _context.training = training
    try:
        yield
    finally:
        _context.training = previous


def current_pipeline_stage() -> int | None:
    """The stage of the enclosing ``PipelineStage`` scope (None outside any)."""
    return getattr(_context, "pipeline_stage", None)


def set_current_pipeline_stage(stage: int | None) -> None:
    """Enter (an int) or leave (None) a pipeline-stage scope; used by ``PipelineStage``."""
    _context.pipeline_stage = stage


def input_dtype_for(array: np.ndarray, float_dtype: str) -> str:
    """The dtype a model input of ``array`` gets: floats -> the layer's float type, int64 -> int32."""
    kind = array.dtype.kind
    if kind == "f":
        return float_dtype
    if kind in "iu":
        return "uint8" if array.dtype == np.uint8 else "int32"
    if kind == "b":
        return "bool"
    raise InvalidTypeError(f"input arrays must be numeric, received dtype {array.dtype}")


def conform_dtype(value: Any, dtype: str) -> Any:
    """``value`` cast to ``dtype`` when it is a graph value of another dtype (as tf.keras casts
    the data fed to a model to the dtype of its ``keras.Input``)."""
    from ipusim.graph.ops.math import cast

    if isinstance(value, Symbol) and value.dtype != dtype:
        return cast(value, dtype)
    return value


def config_of(layer: Any, names: str) -> dict[str, Any]:
    """``layer``'s attributes ``names`` (separated by spaces, in order) as Keras writes them in
    ``get_config``: activations and initializers serialised, tuples (kernel sizes, strides ...)
    as lists, the rest as they are."""
    config: dict[str, Any] = {}
    for name in names.split():
        value = getattr(layer, name)
        if name.endswith("activation"):
            value = activations.serialize(value)
        elif name.endswith("_initializer"):
            value = initializers.serialize(value)
        config[name] = list(value) if isinstance(value, tuple) else value
    return config


class Layer:
    """Base class of all layers (and of models).

    As in tf.keras, a layer casts floating-point tensors of its first argument to its compute
    dtype, and reads float variables of another dtype through a cast (mixed precision).

    Args:
        trainable: whether the layer's weights are updated by training.
        name: unique name; default: snake_case of the class name, numbered.
        dtype: the dtype policy: a dtype name (weights and computation in that dtype), a policy
            name such as ``"mixed_float16"`` (float16 computation, float32 weights) or a
            ``keras.mixed_precision.Policy``; default the global policy (``floatx()``).
        input_shape / batch_input_shape / batch_size / input_dim: declare the input shape of the
            first layer of a Sequential model.
    """

    def __init__(
        self,
        trainable: bool = True,
        name: str | None = None,
        dtype: object | None = None,
        dynamic: bool = False,
        **kwargs: Any,
    ) -> None:
        unknown = set(kwargs) - _ALLOWED_KWARGS
        if unknown:
            raise InvalidTypeError(
                f"{type(self).__name__}: unexpected keyword argument(s) {sorted(unknown)}; "
                f"valid extra arguments are {sorted(_ALLOWED_KWARGS)}"
            )
        if kwargs.get("activity_regularizer") is not None:
            raise UnsupportedError("activity_regularizer is not supported by ipusim yet")
        object.__setattr__(self, "_tracked_layers", [])
        self._own_weights: list[Variable] = []
        self._init_at_build: set[int] = set()  # ids of weights a user function initialises
        self.built = False
        self.trainable = trainable
        if name is not None and (not isinstance(name, str) or not name):
            raise ConfigurationError(f"layer `name` must be a non-empty string, received {name!r}")
        self.name = name or backend.unique_name(backend.to_snake_case(type(self).__name__))
        self._dtype_policy = dtype_policies.get(dtype)
        self._dtype = self._dtype_policy.variable_dtype
        self._compute_dtype = self._dtype_policy.compute_dtype
        self.dynamic = dynamic
        self._batch_input_shape = _batch_input_shape(kwargs)
        self._inbound_calls: list[LayerCall] = []
        # A layer constructed in a PipelineStage scope runs all its calls in that stage.
        self._pipeline_stage = current_pipeline_stage()
        self._eager_cache: dict[Any, tuple[Executor, Any, list[Variable]]] = {}
        self._eager_steps = 0
        params = inspect.signature(self.call).parameters
        self._call_accepts_training = "training" in params or any(
            p.kind is p.VAR_KEYWORD for p in params.values()
        )

    # ------------------------------------------------------------------ tracking
    def __setattr__(self, key: str, value: Any) -> None:
        tracked = self.__dict__.get("_tracked_layers")
        if tracked is not None and not key.startswith("_"):
            for item in flatten(value) if isinstance(value, list | tuple | dict) else [value]:
                if (
                    isinstance(item, Layer)
                    and item is not self
                    and all(item is not t for t in tracked)
                ):
                    tracked.append(item)
        object.__setattr__(self, key, value)

    #: The sublayers assigned to public attributes, in order (set in ``__init__`` with
    #: ``object.__setattr__``).
    _tracked_layers: list[Layer]

    #: Cast floating-point inputs to the compute dtype (off for Functional/Sequential models,
    #: whose layers cast for themselves, as in tf.keras).
    _autocast: bool = True
    #: Read float variables of another dtype through a cast to the compute dtype (off for
    #: normalisation layers, which keep float32 parameters and compute in float32).
    _autocast_variables: bool = True

    @property
    def dtype(self) -> str:
        """The dtype of the layer's variables (``dtype_policy.variable_dtype``)."""
        return self._dtype

    @property
    def compute_dtype(self) -> str:
        """The dtype the layer computes in (``dtype_policy.compute_dtype``)."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """Alias of :attr:`dtype`."""
        return self._dtype

    @property
    def dtype_policy(self) -> dtype_policies.Policy:
        """The layer's ``keras.mixed_precision.Policy``."""
        return self._dtype_policy

    # ------------------------------------------------------------------ lifecycle
    def build(self, input_shape: Any) -> None:
        """Create the weights, given the input shape (batch dimension may be None)."""
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Output shape(s) for ``input_shape`` (found by tracing ``call``)."""
        specs = shape_specs(input_shape, self._dtype)
        graph = Graph(f"{self.name}_shape")
        inputs = map_structure(lambda s: graph.placeholder(s), specs)
        out = self._symbolic_call(graph, (inputs,), {})
        return map_structure(lambda s: s.shape, out)

    #: The attributes a class adds to :meth:`get_config` (separated by spaces), written by
    #: :func:`config_of`: each class of the MRO adds its own, base classes first.
    _config_names = ""

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            **fields(self, "name trainable"),
            "dtype": dtype_policies.serialize(self._dtype_policy),
        }
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = list(self._batch_input_shape)
        for cls in reversed(type(self).__mro__):
            config.update(config_of(self, vars(cls).get("_config_names", "")))
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Layer:
        config = dict(config)
        if "batch_input_shape" in config and config["batch_input_shape"] is not None:
            config["batch_input_shape"] = tuple(config["batch_input_shape"])
        return cls(**config)

    # ------------------------------------------------------------------ weights
    def add_weight(
        self,
        name: str,
        shape: tuple[int, ...] = (),
        dtype: object | None = None,
        initializer: Any = None,
        regularizer: Any = None,
        trainable: bool = True,
        constraint: Any = None,
        **kwargs: Any,
    ) -> Variable:
        """Create a weight of this layer, initialised now."""
        if regularizer is not None or constraint is not None:
            raise UnsupportedError(
                f"{self.name}: weight regularizers and constraints are not supported by ipusim yet"
            )
        dtype = canonical_dtype(dtype) if dtype is not None else self._dtype
        init = initializers.get(
            initializer
            if initializer is not None
            else ("glorot_uniform" if dtype in ("float16", "float32", "float64") else "zeros")
        )
        shape = tuple(int(d) for d in shape)
        # Initialised on first use: a timing-only run of a large model never allocates weights,
        # and a numerics run allocates them after the out-of-memory check.
        draw, order_free = initializers.deferred(init, shape, dtype)
        variable = Variable.lazy(shape, dtype, draw, f"{self.name}/{name}:0", trainable=trainable)
        if not order_free:
            self._init_at_build.add(id(variable))
        self._own_weights.append(variable)
        return variable

    def _flat_layers(self) -> list[Layer]:
        """This layer's sublayers, depth first, without duplicates (not including itself)."""
        return _unique(
            [item for sub in self._tracked_layers for item in [sub, *sub._flat_layers()]]
        )

    @property
    def weights(self) -> list[Variable]:
        """Trainable then non-trainable weights, as Keras orders them."""
        return self.trainable_weights + self.non_trainable_weights

    def _all_weights(self) -> list[Variable]:
        return _unique(
            self._own_weights + [w for s in self._tracked_layers for w in s._all_weights()]
        )

    @property
    def trainable_weights(self) -> list[Variable]:
        if not self.trainable:
            return []
        own = [w for w in self._own_weights if w.trainable]
        subs = [w for sub in self._tracked_layers for w in sub.trainable_weights]
        return _unique(own + subs)

    @property
    def non_trainable_weights(self) -> list[Variable]:
        trainable_ids = {id(w) for w in self.trainable_weights}
        return [w for w in self._all_weights() if id(w) not in trainable_ids]

    @property
    def variables(self) -> list[Variable]:
        return self.weights

    @property
    def trainable_variables(self) -> list[Variable]:
        return self.trainable_weights

    def get_weights(self) -> list[np.ndarray]:
        """Copies of the weights, in ``weights`` order."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights: list[np.ndarray]) -> None:
        """Set all weights from a list of arrays (validated completely before anything changes)."""
        params = self.weights
        if len(weights) != len(params):
            raise ConfigurationError(
                f"{self.name}: set_weights expected a list of {len(params)} arrays, received "
                f"{len(weights)}"
            )
        arrays = [np.asarray(w) for w in weights]
        for variable, array in zip(params, arrays):
            if array.shape != variable.shape:
                raise ConfigurationError(
                    f"{self.name}: weight {variable.name!r} has shape {variable.shape}, the array "
                    f"provided has shape {array.shape}"
                )
        for variable, array in zip(params, arrays):
            variable.assign(array)

    def count_params(self) -> int:
        if not self.built:
            raise ConfigurationError(
                f"You tried to call count_params on layer {self.name}, but the "
                "layer isn't built. Build it first (call it on data or `build()`)."
            )
        return int(sum(w.spec.size for w in self.weights))

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat = flatten([list(args), kwargs.get("inputs")])
        if any(isinstance(t, KerasTensor) for t in flat):
            return self._deferred_call(args, kwargs)
        symbols = [t for t in flat if isinstance(t, Symbol)]
        if symbols:
            return self._symbolic_call(symbols[0].graph, args, kwargs)
        return self._eager_call(args, kwargs)

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        shapes = map_structure(lambda t: tuple(t.shape) if hasattr(t, "shape") else None, inputs)
        before = len(self._own_weights)
        try:
            self.build(shapes)
            if not timing_only():
                # A user function initialises its weights now, in creation order, so values
                # never depend on which weight happens to be used first (it may keep state);
                # ipusim's initializers reserved their draws, so those wait for first use.
                for variable in self._own_weights[before:]:
                    if id(variable) in self._init_at_build:
                        variable.value  # noqa: B018 - materialises the lazy variable
        except Exception:
            del self._own_weights[before:]  # a failed build leaves the layer as it was
            self.built = False
            raise
        self.built = True

    def _symbolic_call(self, graph: Graph, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kwargs = dict(kwargs)
        training = kwargs.pop("training", None)
        if training is None:
            training = current_training()
        if self._call_accepts_training:
            kwargs["training"] = training
        inputs = args[0] if args else kwargs.pop("inputs")
        rest = args[1:]
        declared = self.__dict__.get("input_spec")
        if declared is not None:  # a layer that declares its inputs
            from ipusim.keras.engine.input_spec import assert_input_compatibility

            assert_input_compatibility(declared, flatten(inputs), self.name)
        self._maybe_build(inputs)
        flat_in = [s for s in flatten([inputs, list(rest)]) if isinstance(s, Symbol)]
        mixed = self._autocast_variables and self._dtype_policy.is_mixed
        with (
            graph.invoke(self, flat_in) as invocation,
            default_graph(graph),
            training_scope(training),
            graph.autocast_variables(self._compute_dtype if mixed else None),
        ):
            invocation.pipeline_stage = current_pipeline_stage()
            inputs = self._maybe_cast_inputs(inputs)
            outputs = self.call(inputs, *rest, **kwargs)
        outputs = map_structure(
            lambda o: o if isinstance(o, Symbol) else graph.constant(o), outputs
        )
        invocation.outputs = flatten(outputs)
        return outputs

    def _maybe_cast_inputs(self, inputs: Any) -> Any:
        """Floating-point Symbols of ``inputs`` cast to the compute dtype (tf.keras autocast)."""
        target = self._compute_dtype
        if not self._autocast or target not in FLOAT_DTYPES:
            return inputs
        from ipusim.graph.ops import math as m

        def cast(t: Any) -> Any:
            if isinstance(t, Symbol) and t.dtype in FLOAT_DTYPES and t.dtype != target:
                return m.cast(t, target)
            return t

        return map_structure(cast, inputs)

    def _deferred_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        scratch = Graph(f"{self.name}_spec")

        def to_placeholder(t: Any) -> Any:
            return scratch.placeholder(t.spec) if isinstance(t, KerasTensor) else t

        sym_args = map_structure(to_placeholder, args)
        sym_kwargs = {k: map_structure(to_placeholder, v) for k, v in kwargs.items()}
        out = self._symbolic_call(scratch, sym_args, sym_kwargs)
        call = LayerCall(self, args, kwargs, pipeline_stage=current_pipeline_stage())
        kts = [KerasTensor(s.spec, call, i) for i, s in enumerate(flatten(out))]
        call.outputs = kts
        call.structure = out
        self._inbound_calls.append(call)
        return pack_sequence_as(out, kts)

    def _eager_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kwargs = dict(kwargs)
        training = bool(kwargs.pop("training", False) or False)
        inputs = args[0] if args else kwargs.pop("inputs")
        rest = args[1:]
        if any(isinstance(t, Symbol | KerasTensor) for t in flatten(list(rest))):
            raise InvalidTypeError(f"{self.name}: mix of symbolic and concrete arguments")
        arrays = map_structure(np.asarray, inputs)
        specs = map_structure(
            lambda a: TensorSpec(a.shape, input_dtype_for(a, self._dtype)), arrays
        )
        key = (repr(specs), training, repr(rest), repr(sorted(kwargs.items())))
        entry = self._eager_cache.get(key)
        if entry is None:
            graph = Graph(f"{self.name}_eager")
            placeholders = map_structure(graph.placeholder, specs)
            out = self._symbolic_call(graph, (placeholders, *rest), dict(kwargs, training=training))
            # A training call also runs the state updates its layers asked for (a batch norm's
            # moving statistics), as a tf.keras layer called eagerly with training=True does.
            # (An inference call's only updates are the states a stateful RNN carries.)
            updates = list(graph.updates)
            fetches = flatten(out) + [value for _, value in updates]
            executor = Executor(graph, fetches, flatten(placeholders))
            entry = (executor, out, [variable for variable, _ in updates])
            self._eager_cache[key] = entry
        executor, structure, updated = entry
        values = executor.run(flatten(arrays), ExecContext(training, self._eager_steps))
        self._eager_steps += 1
        outputs = len(values) - len(updated)
        for variable, value in zip(updated, values[outputs:]):
            variable.assign(value)
        return pack_sequence_as(structure, values[:outputs])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}, built={self.built}>"


def _unique(items: list[_T]) -> list[_T]:
    """``items`` without repeats (by identity), in the order they first appear."""
    return list({id(item): item for item in items}.values())


def shape_specs(shape: Any, dtype: str) -> Any:
    """TensorSpecs (of ``dtype``) of a shape (a list or tuple of ints / None) or a nested
    structure of shapes; a ``keras.Input`` tensor among them gives its own spec."""
    if isinstance(shape, KerasTensor):
        return shape.spec
    if isinstance(shape, list | tuple) and all(d is None or isinstance(d, int) for d in shape):
        return TensorSpec(tuple(shape), dtype)
    if isinstance(shape, dict):
        return {k: shape_specs(v, dtype) for k, v in shape.items()}
    return [shape_specs(s, dtype) for s in shape]


def _batch_input_shape(kwargs: dict[str, Any]) -> Shape | None:
    if kwargs.get("batch_input_shape") is not None:
        return tuple(kwargs["batch_input_shape"])
    if kwargs.get("input_shape") is not None:
        shape = kwargs["input_shape"]
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return (kwargs.get("batch_size"), *shape)
    if kwargs.get("input_dim") is not None:
        return (kwargs.get("batch_size"), int(kwargs["input_dim"]))
    return None
