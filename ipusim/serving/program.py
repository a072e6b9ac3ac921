"""The inference program of an export: an op graph written as JSON plus arrays, without pickle.

Only the nodes the outputs need are written, in execution order. Each node is its op name, its
inputs (``[node, output]`` pairs), its attributes and the layer that made it. Variables are frozen
into constants (as IPU TensorFlow's export freezes them): the program needs nothing but itself.
Attribute values are JSON values, with tagged objects for what JSON lacks: ``{"tuple": [...]}``,
``{"array": "a12", "shape": [...], "dtype": "float32"}`` (a member of the arrays file, whose shape
and dtype loading checks), ``{"scalar": v, "dtype": "float32"}`` and
``{"spec": [shape, dtype]}``. An attribute of any other type cannot be exported and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ipusim.errors import IPUSimError, ModelFileError
from ipusim.graph.graph import Graph, Node, Symbol
from ipusim.graph.op import get_op, registered_ops
from ipusim.graph.spec import TensorSpec

__all__ = ["ExportError", "LoadedProgram", "decode_program", "encode_program"]


class ExportError(IPUSimError, ValueError):
    """The model or function cannot be written in ipusim's serving format."""


def _encode(value: Any, arrays: dict[str, np.ndarray], where: str) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, arrays, where) for v in value]}
    if isinstance(value, list):
        return [_encode(v, arrays, where) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: _encode(v, arrays, where) for k, v in value.items()}}
    if isinstance(value, np.ndarray):
        key = f"a{len(arrays)}"
        stored = arrays[key] = np.ascontiguousarray(value)  # (0-d arrays are stored as 1-d)
        # Shape and dtype too, so that loading can check the array file against the program.
        return {"array": key, "shape": list(stored.shape), "dtype": stored.dtype.name}
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": value.dtype.name}
    if isinstance(value, TensorSpec):
        return {"spec": [list(value.shape), value.dtype]}
    raise ExportError(
        f"{where} holds a {type(value).__name__} ({value!r}), which ipusim's serving format "
        "cannot store (it keeps numbers, strings, tuples, lists, dicts and arrays only)"
    )


def _decode(value: Any, arrays: Any) -> Any:
    """The attribute value a tagged JSON value stands for.

    Raises:
        ValueError / KeyError / TypeError: a damaged value (the caller names the node).
    """
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if "tuple" in value:
        return tuple(_decode(v, arrays) for v in value["tuple"])
    if "dict" in value:
        return {k: _decode(v, arrays) for k, v in value["dict"].items()}
    if "array" in value:
        if not isinstance(value["array"], str) or value["array"] not in arrays:
            raise ModelFileError(f"array {value['array']!r} is not in the arrays file")
        array = np.asarray(arrays[value["array"]])
        described = (value.get("shape"), value.get("dtype"))
        if "shape" in value and described != (list(array.shape), array.dtype.name):
            raise ModelFileError(
                f"array {value['array']!r} is {array.dtype.name} {list(array.shape)} in the "
                f"arrays file, the program describes {described[1]} {described[0]}"
            )
        return array
    if "scalar" in value:
        dtype = np.dtype(value["dtype"])
        if dtype.hasobject:
            raise ModelFileError(f"a scalar of dtype {dtype} cannot be part of a program")
        return dtype.type(value["scalar"])
    if "spec" in value:
        shape, dtype = value["spec"]
        return TensorSpec(tuple(shape), dtype)
    raise ModelFileError(f"unknown tagged value {value!r} in the serving program")


def encode_program(
    graph: Graph, inputs: Sequence[Symbol], outputs: Sequence[Symbol]
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON description and the arrays of the part of ``graph`` computing ``outputs``.

    Raises:
        ExportError: the outputs need an input that is not in ``inputs``, or a node has an
            attribute the format cannot store.
    """
    arrays: dict[str, np.ndarray] = {}
    needed = graph.nodes_between(list(outputs))
    feed_ids = [s.node.id for s in inputs]
    renumber: dict[int, int] = {}
    nodes: list[dict[str, Any]] = []
    for node in needed:
        name = node.op.name
        attrs = dict(node.attrs)
        if name == "placeholder" and node.id not in feed_ids:
            raise ExportError(
                f"the outputs depend on input {attrs.get('name')!r}, which is not one of the "
                "exported program's inputs"
            )
        if name == "variable":
            # Frozen: the variable's current value becomes a constant of the program.
            name, attrs = "constant", {"value": np.asarray(attrs["variable"].numpy())}
        where = f"op {node.name!r} attribute"
        renumber[node.id] = len(nodes)
        nodes.append(
            {
                "op": name,
                "inputs": [[renumber[s.node.id], s.index] for s in node.inputs],
                "attrs": {k: _encode(v, arrays, f"{where} {k!r}") for k, v in attrs.items()},
                "layer": node.layer,
            }
        )
    description = {
        "nodes": nodes,
        "inputs": [renumber[i] for i in feed_ids],
        "outputs": [[renumber[s.node.id], s.index] for s in outputs],
    }
    return description, arrays


@dataclass(frozen=True)
class LoadedProgram:
    """A program read back: its graph, input placeholders and output symbols."""

    graph: Graph
    inputs: tuple[Symbol, ...]
    outputs: tuple[Symbol, ...]


#: What decoding or re-inferring a damaged node can raise (the node is named in the error).
NODE_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    NotImplementedError,
    RuntimeError,
    OverflowError,
    MemoryError,
)


def _ref(value: Any, built: list[Node], what: str) -> Symbol:
    """The symbol a ``[node, output]`` reference names among the nodes built so far."""
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 0 <= value[0] < len(built)
        or not 0 <= value[1] < len(built[value[0]].outputs)
    ):
        raise ModelFileError(f"{what} {value!r} does not name an output of an earlier node")
    return built[value[0]].outputs[value[1]]


def _known_ops(nodes: list[Any]) -> set[str]:
    names = {n.get("op") if isinstance(n, dict) else None for n in nodes}
    if not names <= set(registered_ops()):
        import ipusim.compat.runtime  # noqa: F401 - registers the runtime's ops
    missing = names - set(registered_ops())
    if missing:
        shown = sorted(str(m) for m in missing)
        raise ModelFileError(
            f"the exported program uses ops {shown} that this version of ipusim does not have; "
            "load it with the ipusim that exported it, or export the model again"
        )
    return {name for name in names if isinstance(name, str)}  # all of them: none is missing


def _add(graph: Graph, built: list[Node], entry: Any, arrays: Any) -> None:
    if not isinstance(entry, dict) or not isinstance(entry.get("attrs"), dict):
        raise ModelFileError("expected {op, inputs, attrs, layer}")
    layer = entry.get("layer")
    if not isinstance(entry.get("inputs"), list) or not (layer is None or isinstance(layer, str)):
        raise ModelFileError("'inputs' must be a list and 'layer' a name or null")
    op = get_op(entry["op"])
    attrs = {k: _decode(v, arrays) for k, v in entry["attrs"].items()}
    inputs = [_ref(ref, built, "input") for ref in entry["inputs"]]
    with graph.tag(layer=layer, invocation=None, phase="fwd"):
        node = graph.add_node(op, inputs, attrs)
    if entry["op"] == "placeholder":
        graph.placeholders.append(node.outputs[0])
    built.append(node)


def decode_program(description: dict[str, Any], arrays: Any, name: str) -> LoadedProgram:
    """Rebuild the graph written by :func:`encode_program`, checking every node on the way
    (references to earlier nodes only, known ops, attributes whose arrays exist, output specs
    that the ops' own spec inference accepts).

    Raises:
        ModelFileError: naming the node or field that is damaged.
    """
    nodes = description.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise ModelFileError("field 'program.nodes': expected a non-empty list of nodes")
    _known_ops(nodes)
    graph = Graph(name)
    built: list[Node] = []
    for index, entry in enumerate(nodes):
        try:
            _add(graph, built, entry, arrays)
        except NODE_ERRORS as exc:
            op = entry.get("op") if isinstance(entry, dict) else None
            raise ModelFileError(
                f"field 'program.nodes[{index}]' (op {op!r}) is damaged: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    feeds, outputs = description.get("inputs"), description.get("outputs")
    try:
        if not isinstance(feeds, list) or not isinstance(outputs, list) or not outputs:
            raise ModelFileError("expected lists of inputs and outputs")
        inputs = tuple(_ref([i, 0], built, "input node") for i in feeds)
        if any(s.node.op.name != "placeholder" for s in inputs):
            raise ModelFileError(f"inputs {feeds!r} must name placeholder nodes")
        results = tuple(_ref(ref, built, "output") for ref in outputs)
    except ValueError as exc:
        raise ModelFileError(f"field 'program.inputs' / 'program.outputs': {exc}") from None
    return LoadedProgram(graph, inputs, results)
