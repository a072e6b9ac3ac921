"""Saving and loading: architecture as JSON, weights as arrays, in one ``.npz``-format file.

No pickle anywhere: the file is a zip of ``.npy`` arrays (``np.load(allow_pickle=False)`` reads
it) with the JSON description stored as a uint8 array under ``__ipusim_model__``. Files are written
to a temporary name in the same folder and moved into place, so a crash never leaves half a file;
they are checked before use (:mod:`~ipusim.keras.engine.saving_files`), and the optimizer's state
is matched to the variables by position (:mod:`~ipusim.keras.engine.saving_state`).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ipusim.errors import ConfigurationError, ModelFileError
from ipusim.graph.spec import TensorSpec
from ipusim.keras.engine.keras_tensor import KerasTensor
from ipusim.keras.engine.nest import flatten, map_structure
from ipusim.keras.engine.saving_compile import compile_config, compile_from_config
from ipusim.keras.engine.saving_files import (
    CONFIG_KEY,
    FORMAT,
    VERSION,
    WEIGHTS_FORMAT,
    check_weights_fit,
    file_error,
    read_header,
    read_npz,
    weight_arrays,
    write_npz,
)
from ipusim.keras.engine.saving_state import optimizer_state, restore_optimizer

if TYPE_CHECKING:
    from ipusim.keras.engine.functional import Functional
    from ipusim.keras.engine.sequential import Sequential

__all__ = [
    "FORMAT",
    "WEIGHTS_FORMAT",
    "ModelFileError",
    "functional_config",
    "functional_from_config",
    "load_model",
    "load_weights",
    "restore_training_state",
    "save_model",
    "save_weights",
    "sequential_config",
    "sequential_from_config",
    "serialize_layer",
]

log = logging.getLogger("ipusim")


# ---------------------------------------------------------------------- registry
def _layer_classes(custom_objects: dict[str, Any] | None) -> dict[str, type]:
    from ipusim.keras import layers as layers_module
    from ipusim.keras.engine.functional import Functional
    from ipusim.keras.engine.input_layer import InputLayer
    from ipusim.keras.engine.model import Model
    from ipusim.keras.engine.sequential import Sequential

    classes: dict[str, type] = {
        name: obj for name, obj in vars(layers_module).items() if isinstance(obj, type)
    }
    classes.update({cls.__name__: cls for cls in (InputLayer, Sequential, Functional, Model)})
    classes.update(custom_objects or {})
    return classes


def _deserialize_layer(spec: dict[str, Any], custom_objects: dict[str, Any] | None) -> Any:
    classes = _layer_classes(custom_objects)
    name = spec["class_name"]
    cls = classes.get(name)
    if cls is None:
        raise ModelFileError(
            f"Unknown layer class {name!r}. Pass it in `custom_objects={{'{name}': {name}}}`."
        )
    if hasattr(cls, "from_config"):
        return _from_config(cls, spec["config"], custom_objects)
    return cls(**spec["config"])


def _from_config(cls: Any, config: dict[str, Any], custom_objects: dict[str, Any] | None) -> Any:
    """``cls.from_config(config)``, given ``custom_objects`` when it takes them."""
    if "custom_objects" in inspect.signature(cls.from_config).parameters:
        return cls.from_config(config, custom_objects=custom_objects)
    return cls.from_config(config)


def serialize_layer(layer: Any) -> dict[str, Any]:
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


# ---------------------------------------------------------------------- model configs
def sequential_config(model: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "name": model.name,
        "layers": [serialize_layer(layer) for layer in model.layers],
    }
    # A declared input (keras.Input, input_shape=) casts what the model is given to its dtype;
    # a model built from a shape (build(), or its first call) does not: each layer casts its own
    # inputs (an Embedding keeps integer ids). The reloaded model must do the same.
    declared = model._input_spec_declared
    built = model._build_input_spec
    if declared is not None:
        config["input_spec"] = {"shape": list(declared.shape), "dtype": declared.dtype}
    elif built is not None and hasattr(built, "shape"):
        config["build_input_spec"] = {"shape": list(built.shape), "dtype": built.dtype}
    return config


def _spec(saved: dict[str, Any]) -> TensorSpec:
    """The TensorSpec a saved ``{"shape", "dtype"}`` describes."""
    return TensorSpec(tuple(saved["shape"]), saved["dtype"])


def sequential_from_config(
    config: dict[str, Any], custom_objects: dict[str, Any] | None = None
) -> Sequential:
    from ipusim.keras.engine.input_layer import Input
    from ipusim.keras.engine.sequential import Sequential

    model = Sequential(name=config.get("name"))
    if config.get("input_spec"):
        spec = config["input_spec"]
        model.add(Input(batch_shape=tuple(spec["shape"]), dtype=spec["dtype"]))
    for layer_spec in config["layers"]:
        model.add(_deserialize_layer(layer_spec, custom_objects))
    if config.get("build_input_spec") and not model.built:
        specs = _spec(config["build_input_spec"])
        model.trace(specs, training=False)
        model._build_input_spec = specs
    return model


def functional_config(model: Any) -> dict[str, Any]:
    call_index = {
        id(call): i for layer in model.layers for i, call in enumerate(layer._inbound_calls)
    }

    def ref(tensor: KerasTensor) -> list[Any]:
        call = tensor.history
        assert call is not None  # every tensor of a functional model comes from a layer call
        return [call.layer.name, call_index[id(call)], tensor.index]

    def encode(value: Any) -> Any:
        if isinstance(value, KerasTensor):
            return {"__tensor__": ref(value)}
        if isinstance(value, list | tuple):
            return [encode(v) for v in value]
        if isinstance(value, dict):
            return {k: encode(v) for k, v in value.items()}
        if isinstance(value, np.generic):
            return value.item()
        if value is None or isinstance(value, str | int | float | bool):
            return value
        raise ConfigurationError(
            f"model {model.name!r}: a layer call argument {value!r} cannot be saved (only "
            "tensors, numbers, strings, None and lists / dicts of them can); pass it to the "
            "layer's constructor instead"
        )

    def encode_call(call: Any) -> dict[str, Any]:
        args = encode(list(call.args))
        return {"index": call_index[id(call)], "args": args, "kwargs": encode(call.kwargs)}

    layers = [
        {
            **serialize_layer(layer),
            "name": layer.name,
            "calls": [encode_call(call) for call in model._calls if call.layer is layer],
        }
        for layer in model.layers
    ]
    return {
        "name": model.name,
        "layers": layers,
        "inputs": encode(model._nested_inputs),
        "outputs": encode(model._nested_outputs),
    }


def functional_from_config(
    config: dict[str, Any], custom_objects: dict[str, Any] | None = None
) -> Functional:
    from ipusim.keras.engine.functional import Functional
    from ipusim.keras.engine.input_layer import InputLayer

    tensors: dict[tuple[str, int, int], KerasTensor] = {}
    remaining = []
    for spec in config["layers"]:
        layer = _deserialize_layer(spec, custom_objects)
        if isinstance(layer, InputLayer):
            tensors[(spec["name"], 0, 0)] = layer.output
            continue
        remaining += [(layer, spec["name"], call) for call in spec["calls"]]
    # Replay calls in an order that respects their dependencies.
    while remaining:
        progressed = False
        for item in list(remaining):
            layer, name, call = item
            try:
                args = _decode(call["args"], tensors)
                kwargs = _decode(call["kwargs"], tensors)
            except KeyError:
                continue
            for i, tensor in enumerate(flatten(layer(*args, **kwargs))):
                tensors[(name, call["index"], i)] = tensor
            remaining.remove(item)
            progressed = True
        if not progressed:
            raise ModelFileError("the saved functional model's layer calls cannot be connected")
    inputs = _decode(config["inputs"], tensors)
    outputs = _decode(config["outputs"], tensors)
    return Functional(inputs, outputs, name=config.get("name"))


def _decode(value: Any, tensors: dict[tuple[str, int, int], KerasTensor]) -> Any:
    if isinstance(value, dict) and "__tensor__" in value:
        return tensors[tuple(value["__tensor__"])]
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if isinstance(value, dict):
        return {k: _decode(v, tensors) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------- files
#: What rebuilding, compiling or restoring from a damaged description can raise.
_REBUILD_ERRORS = (
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    ValueError,
    NotImplementedError,
    OverflowError,
    RecursionError,
    MemoryError,  # a damaged size (units=10**12) asks for more than the machine has
)


def _from_file(path: str, field: str, step: Callable[[], Any]) -> Any:
    """Run one step of loading; a failure names the file and the header field it came from."""
    try:
        return step()
    except ModelFileError:
        raise
    except _REBUILD_ERRORS as exc:
        raise file_error(
            path,
            f"header field {field!r}",
            f"cannot be used ({type(exc).__name__}: {exc})",
            "The file is damaged or describes a model this ipusim cannot build; save the "
            "model again, or load it with compile=False if only the compile arguments fail.",
        ) from None


def _weights_payload(
    model: Any, kind: str, extra: dict[str, Any], more: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    weights = model.weights
    header = {
        "format": kind,
        "version": VERSION,
        "weight_names": [w.name for w in weights],
        **extra,
    }
    arrays = {f"w{i:05d}": w.numpy() for i, w in enumerate(weights)}
    arrays.update(more or {})
    arrays[CONFIG_KEY] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    return arrays


def _require_built(model: Any, what: str) -> None:
    if not model.built:
        raise ConfigurationError(
            f"model {model.name!r} is not built, so it has no weights to {what}; call it on data "
            "or build() it first"
        )


def save_weights(model: Any, filepath: str, overwrite: bool = True) -> None:
    _require_built(model, "save")
    write_npz(filepath, _weights_payload(model, WEIGHTS_FORMAT, {}), overwrite)


def load_weights(model: Any, filepath: str) -> None:
    path = os.fspath(filepath)
    data = read_npz(path)
    header = read_header(data, path, WEIGHTS_FORMAT)
    arrays = weight_arrays(data, header)
    _require_built(model, "load")
    check_weights_fit(model, arrays, path, exact=False)
    model.set_weights(arrays)


def save_model(
    model: Any, filepath: str, overwrite: bool = True, include_optimizer: bool = True
) -> None:
    _require_built(model, "save")
    from ipusim.keras.engine.functional import Functional
    from ipusim.keras.engine.sequential import Sequential

    extra: dict[str, Any] = {"class_name": type(model).__name__, "config": model.get_config()}
    if not isinstance(model, Functional | Sequential):
        spec = model.input_spec_structure
        extra["build_input_spec"] = map_structure(
            lambda s: {"shape": list(s.shape), "dtype": s.dtype}, spec
        )
    if model._is_compiled:
        try:
            extra["compile"] = compile_config(model)
        except (TypeError, ValueError) as exc:
            log.warning(
                "model.save: the compile() arguments of model %r cannot be saved (%s); the model "
                "will load uncompiled.",
                model.name,
                exc,
            )
    from ipusim.keras.extensions.saving import ipu_state

    state = ipu_state(model)
    if state is not None:
        extra["ipu"] = state
    more: dict[str, np.ndarray] = {}
    optimizer = optimizer_state(model) if include_optimizer and "compile" in extra else None
    if optimizer is not None:
        extra["optimizer_state"], more = optimizer
    write_npz(filepath, _weights_payload(model, FORMAT, extra, more), overwrite)


def _model_header(data: dict[str, np.ndarray], path: str) -> dict[str, Any]:
    header = read_header(data, path, FORMAT)
    for key, kind in (("class_name", str), ("config", dict)):
        if not isinstance(header.get(key), kind):
            raise file_error(
                path,
                f"header field {key!r}",
                f"expected a {kind.__name__}, found {type(header.get(key)).__name__}",
            )
    for key in ("compile", "optimizer_state", "ipu", "build_input_spec"):
        if key in header and header[key] is not None and not isinstance(header[key], dict):
            raise file_error(path, f"header field {key!r}", "expected a JSON object")
    return header


def load_model(
    filepath: str, custom_objects: dict[str, Any] | None = None, compile: bool = True
) -> Any:  # noqa: A002 - Keras' name
    """Rebuild a model saved with ``model.save``: architecture, weights and (optionally) compile
    with the optimizer's state. The file is checked before use (:mod:`saving_files`)."""
    path = os.fspath(filepath)
    data = read_npz(path)
    header = _model_header(data, path)
    arrays = weight_arrays(data, header)
    cls = _layer_classes(custom_objects).get(header["class_name"])
    if cls is None or not hasattr(cls, "from_config"):
        raise ModelFileError(
            f"Unknown model class {header['class_name']!r}. Pass it in `custom_objects`."
        )
    model = _from_file(path, "config", lambda: _rebuild(cls, header, custom_objects))
    check_weights_fit(model, arrays, path, exact=True)
    model.set_weights(arrays)
    saved_compile = header.get("compile")
    if compile and saved_compile:
        _from_file(
            path, "compile", lambda: compile_from_config(model, saved_compile, custom_objects)
        )
        if header.get("optimizer_state") is not None:
            restore_optimizer(model, header["optimizer_state"], data, header, path)
    if header.get("ipu") is not None:
        from ipusim.keras.extensions.saving import restore_ipu_state

        _from_file(path, "ipu", lambda: restore_ipu_state(model, header["ipu"], path))
    return model


def _rebuild(cls: type, header: dict[str, Any], custom_objects: dict[str, Any] | None) -> Any:
    """The model the header describes, built (weights not yet set)."""
    model = _from_config(cls, header["config"], custom_objects)
    if "build_input_spec" in header:
        spec = header["build_input_spec"]
        specs = _spec(spec) if "shape" in spec else map_structure(_spec, spec)
        model.trace(specs, training=False)
    elif hasattr(model, "_ensure_built"):
        model._ensure_built()
    return model


def restore_training_state(model: Any, filepath: str) -> None:
    """Load a ``model.save`` file's weights and optimizer state (step count, slots, loss scale)
    into ``model`` itself, which must have the saved architecture and be compiled
    (BackupAndRestore)."""
    path = os.fspath(filepath)
    data = read_npz(path)
    header = _model_header(data, path)
    arrays = weight_arrays(data, header)
    try:
        check_weights_fit(model, arrays, path, exact=True)
    except ModelFileError as exc:
        raise ModelFileError(f"{exc} Delete the backup folder if the model changed.") from None
    model.set_weights(arrays)
    state = header.get("optimizer_state")
    if state is not None and getattr(model, "optimizer", None):
        restore_optimizer(model, state, data, header, path)
