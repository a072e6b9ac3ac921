"""Saving and loading: architecture as JSON, weights as arrays, in one ``.npz``-format file.

No pickle anywhere: the file is a zip of ``.npy`` arrays (``np.load(allow_pickle=False)`` reads
it) with the JSON description stored as a uint8 array under ``__ipusim_model__``. Files are written
to a temporary name in the same folder and moved into place, so a crash never leaves half a file.
"""

from __future__ import annotations

import json
import logging
import os
import zipfile
import zlib
from typing import Any

import numpy as np

from ipusim._files import atomic_output
from ipusim.errors import ModelFileError
from ipusim.keras.engine.keras_tensor import KerasTensor
from ipusim.keras.engine.nest import map_structure
from ipusim.keras.engine.saving_compile import compile_config, compile_from_config

FORMAT = "ipusim-model"
WEIGHTS_FORMAT = "ipusim-weights"
VERSION = 1
_CONFIG_KEY = "__ipusim_model__"

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
    classes.update(
        {
            "InputLayer": InputLayer,
            "Sequential": Sequential,
            "Functional": Functional,
            "Model": Model,
        }
    )
    classes.update(custom_objects or {})
    return classes


def _deserialize_layer(spec: dict[str, Any], custom_objects: dict | None) -> Any:
    classes = _layer_classes(custom_objects)
    name = spec["class_name"]
    cls = classes.get(name)
    if cls is None:
        raise ModelFileError(
            f"Unknown layer class {name!r}. Pass it in `custom_objects={{'{name}': {name}}}`."
        )
    if hasattr(cls, "from_config"):
        import inspect

        if "custom_objects" in inspect.signature(cls.from_config).parameters:
            return cls.from_config(spec["config"], custom_objects=custom_objects)
        return cls.from_config(spec["config"])
    return cls(**spec["config"])


def serialize_layer(layer: Any) -> dict[str, Any]:
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


# ---------------------------------------------------------------------- model configs
def sequential_config(model: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "name": model.name,
        "layers": [serialize_layer(layer) for layer in model.layers],
    }
    spec = model.input_spec_structure
    if spec is not None and hasattr(spec, "shape"):
        config["input_spec"] = {"shape": list(spec.shape), "dtype": spec.dtype}
    return config


def sequential_from_config(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    from ipusim.keras.engine.input_layer import Input
    from ipusim.keras.engine.sequential import Sequential

    model = Sequential(name=config.get("name"))
    if config.get("input_spec"):
        spec = config["input_spec"]
        model.add(Input(batch_shape=tuple(spec["shape"]), dtype=spec["dtype"]))
    for layer_spec in config["layers"]:
        model.add(_deserialize_layer(layer_spec, custom_objects))
    return model


def functional_config(model: Any) -> dict[str, Any]:
    call_index = {
        id(call): i for layer in model.layers for i, call in enumerate(layer._inbound_calls)
    }

    def ref(tensor: KerasTensor) -> list[Any]:
        call = tensor.history
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
        raise ValueError(f"model {model.name!r}: a layer call argument {value!r} cannot be saved")

    layers = []
    for layer in model.layers:
        calls = [call for call in model._calls if call.layer is layer]
        layers.append(
            {
                **serialize_layer(layer),
                "name": layer.name,
                "calls": [
                    {
                        "index": call_index[id(call)],
                        "args": encode(list(call.args)),
                        "kwargs": encode(call.kwargs),
                    }
                    for call in calls
                ],
            }
        )
    return {
        "name": model.name,
        "layers": layers,
        "inputs": encode(model._nested_inputs),
        "outputs": encode(model._nested_outputs),
    }


def functional_from_config(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    from ipusim.keras.engine.functional import Functional
    from ipusim.keras.engine.input_layer import InputLayer

    tensors: dict[tuple[str, int, int], KerasTensor] = {}
    pending = []
    for spec in config["layers"]:
        layer = _deserialize_layer(spec, custom_objects)
        if isinstance(layer, InputLayer):
            tensors[(spec["name"], 0, 0)] = layer.output
            continue
        for call in spec["calls"]:
            pending.append((call["index"], layer, spec["name"], call))
    # Replay calls in an order that respects their dependencies.
    remaining = list(pending)
    while remaining:
        progressed = False
        for item in list(remaining):
            _, layer, name, call = item
            try:
                args = _decode(call["args"], tensors)
                kwargs = _decode(call["kwargs"], tensors)
            except KeyError:
                continue
            out = layer(*args, **kwargs)
            from ipusim.keras.engine.nest import flatten

            for i, tensor in enumerate(flatten(out)):
                tensors[(name, call["index"], i)] = tensor
            remaining.remove(item)
            progressed = True
        if not progressed:
            raise ModelFileError("the saved functional model's layer calls cannot be connected")
    inputs = _decode(config["inputs"], tensors)
    outputs = _decode(config["outputs"], tensors)
    return Functional(inputs, outputs, name=config.get("name"))


def _decode(value: Any, tensors: dict) -> Any:
    if isinstance(value, dict) and "__tensor__" in value:
        return tensors[tuple(value["__tensor__"])]
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if isinstance(value, dict):
        return {k: _decode(v, tensors) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------- files
def _atomic_npz(filepath: str, arrays: dict[str, np.ndarray], overwrite: bool) -> None:
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise ModelFileError(
            f"{filepath!r} is a folder; give a file path such as '{filepath.rstrip('/')}.npz'"
        )
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath!r} exists and overwrite=False")
    with atomic_output(filepath) as handle:
        np.savez(handle, **arrays)


def _read_npz(filepath: str) -> dict[str, np.ndarray]:
    filepath = os.fspath(filepath)
    if not os.path.isfile(filepath):
        raise ModelFileError(f"no file at {filepath!r}")
    try:
        with np.load(filepath, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError) as exc:
        raise ModelFileError(
            f"{filepath!r} is not a readable ipusim model/weights file ({exc})"
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
    arrays[_CONFIG_KEY] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    return arrays


def _optimizer_state(model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """The optimizer's step count and slots (Keras' ``include_optimizer``): a header entry naming
    each slot by its variable and slot names, and the arrays; None when there is none to save."""
    from ipusim.keras.optimizers.optimizer import Optimizer

    optimizer = getattr(model, "optimizer", None)
    if not isinstance(optimizer, Optimizer):
        return None
    slots, arrays = [], {}
    for var_name, by_slot in optimizer._slots.items():
        for slot_name, slot in by_slot.items():
            arrays[f"o{len(slots):05d}"] = slot.numpy()
            slots.append([var_name, slot_name])
    return {"iterations": optimizer.iterations, "slots": slots}, arrays


def _restore_optimizer(
    model: Any, state: dict[str, Any], data: dict[str, np.ndarray], filepath: str
) -> None:
    """Give the freshly compiled optimizer the saved step count and slots (all checked first)."""
    optimizer = model.optimizer
    variables = {v.name: v for v in model.trainable_variables}
    restored = []
    try:
        for i, (var_name, slot_name) in enumerate(state["slots"]):
            value = data[f"o{i:05d}"]
            var = variables[var_name]
            if value.shape != tuple(var.shape):
                raise ValueError(f"slot {slot_name!r} of {var_name!r} has shape {value.shape}")
            restored.append((var, slot_name, value))
        iterations = int(state["iterations"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(
            f"{filepath!r}: the saved optimizer state does not fit the model ({exc}); load with "
            "compile=False, or save the model again."
        ) from None
    for var, slot_name, value in restored:
        optimizer._add_slot(var, slot_name, 0.0).assign(value)
    optimizer.iterations = iterations


def _header(data: dict[str, np.ndarray], filepath: str, kind: str) -> dict[str, Any]:
    raw = data.get(_CONFIG_KEY)
    if raw is None:
        raise ModelFileError(f"{filepath!r} has no ipusim header; it was not written by ipusim")
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{filepath!r}: the header is corrupt ({exc})") from None
    if header.get("format") != kind:
        raise ModelFileError(f"{filepath!r} holds {header.get('format')!r}, expected {kind!r}")
    if header.get("version", 0) > VERSION:
        raise ModelFileError(
            f"{filepath!r} was written by a newer ipusim (format version {header['version']})"
        )
    return header


def _weight_arrays(
    data: dict[str, np.ndarray], header: dict[str, Any], filepath: str
) -> list[np.ndarray]:
    names = header.get("weight_names", [])
    try:
        return [data[f"w{i:05d}"] for i in range(len(names))]
    except KeyError as exc:
        raise ModelFileError(f"{filepath!r} is missing weight array {exc}") from None


def save_weights(model: Any, filepath: str, overwrite: bool = True) -> None:
    if not model.built:
        raise ValueError(f"model {model.name!r} has no weights yet; build or call it first")
    _atomic_npz(filepath, _weights_payload(model, WEIGHTS_FORMAT, {}), overwrite)


def load_weights(model: Any, filepath: str) -> None:
    data = _read_npz(filepath)
    header = _header(data, filepath, WEIGHTS_FORMAT)
    arrays = _weight_arrays(data, header, filepath)
    if not model.built:
        raise ValueError(
            f"model {model.name!r} is not built, so it has no weights to load into;"
            " build or call it first"
        )
    try:
        model.set_weights(arrays)  # checks every shape before assigning any
    except ValueError as exc:
        raise ModelFileError(f"{filepath!r} does not match model {model.name!r}: {exc}") from None


def save_model(
    model: Any, filepath: str, overwrite: bool = True, include_optimizer: bool = True
) -> None:
    if not model.built:
        raise ValueError(f"model {model.name!r} is not built; call it on data or build() first")
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
    optimizer = _optimizer_state(model) if include_optimizer and "compile" in extra else None
    if optimizer is not None:
        extra["optimizer_state"], more = optimizer
    _atomic_npz(filepath, _weights_payload(model, FORMAT, extra, more), overwrite)


def load_model(
    filepath: str, custom_objects: dict[str, Any] | None = None, compile: bool = True
) -> Any:  # noqa: A002 - Keras' name
    """Rebuild a model saved with ``model.save``: architecture, weights and (optionally) compile."""
    data = _read_npz(filepath)
    header = _header(data, filepath, FORMAT)
    for key, kind in (("class_name", str), ("config", dict), ("weight_names", list)):
        if not isinstance(header.get(key), kind):
            raise ModelFileError(
                f"{filepath!r}: the model description has no valid {key!r} (expected a "
                f"{kind.__name__}, found {type(header.get(key)).__name__}); the file is damaged "
                "or was not written by model.save(). Save the model again."
            )
    arrays = _weight_arrays(data, header, filepath)
    classes = _layer_classes(custom_objects)
    cls = classes.get(header["class_name"])
    if cls is None:
        raise ModelFileError(
            f"Unknown model class {header['class_name']!r}. Pass it in `custom_objects`."
        )
    try:
        model = _rebuild(cls, header, custom_objects)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelFileError(
            f"{filepath!r}: the model description is incomplete or damaged "
            f"({type(exc).__name__}: {exc}); the file cannot be loaded. Save the model again."
        ) from None
    try:
        model.set_weights(arrays)
    except ValueError as exc:
        raise ModelFileError(
            f"{filepath!r}: the weights do not fit the architecture: {exc}"
        ) from None
    saved_compile = header.get("compile")
    if compile and saved_compile:
        compile_from_config(model, saved_compile, custom_objects)
        if header.get("optimizer_state") is not None:
            _restore_optimizer(model, header["optimizer_state"], data, os.fspath(filepath))
    if header.get("ipu") is not None:
        from ipusim.keras.extensions.saving import restore_ipu_state

        restore_ipu_state(model, header["ipu"], os.fspath(filepath))
    return model


def _rebuild(cls: type, header: dict[str, Any], custom_objects: dict | None) -> Any:
    """The model the header describes, built (weights not yet set)."""
    import inspect

    if "custom_objects" in inspect.signature(cls.from_config).parameters:
        model = cls.from_config(header["config"], custom_objects=custom_objects)
    else:
        model = cls.from_config(header["config"])
    if "build_input_spec" in header:
        from ipusim.graph.spec import TensorSpec

        spec = header["build_input_spec"]
        specs = (
            TensorSpec(tuple(spec["shape"]), spec["dtype"])
            if "shape" in spec
            else map_structure(lambda s: TensorSpec(tuple(s["shape"]), s["dtype"]), spec)
        )
        model.trace(specs, training=False)
    elif hasattr(model, "_ensure_built"):
        model._ensure_built()
    return model


def restore_training_state(model: Any, filepath: str) -> None:
    """Load a ``model.save`` file's weights and optimizer state (step count and slots) into
    ``model`` itself, which must have the saved architecture and be compiled (BackupAndRestore).
    """
    data = _read_npz(filepath)
    header = _header(data, filepath, FORMAT)
    arrays = _weight_arrays(data, header, filepath)
    try:
        model.set_weights(arrays)
    except ValueError as exc:
        raise ModelFileError(
            f"{filepath!r} does not match model {model.name!r}: {exc}; delete the backup folder "
            "if the model changed"
        ) from None
    state = header.get("optimizer_state")
    if state is not None and getattr(model, "optimizer", None):
        # Layer names differ between sessions (dense_1 vs dense_7): match the saved slots to
        # this model's variables by position, as Keras' object-based checkpoints do.
        renamed = dict(zip(header["weight_names"], (w.name for w in model.weights), strict=True))
        slots = [[renamed.get(var, var), slot] for var, slot in state["slots"]]
        _restore_optimizer(model, {**state, "slots": slots}, data, os.fspath(filepath))
