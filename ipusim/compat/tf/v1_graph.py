"""TF1 graph-mode names that IPU TensorFlow 2 programs use: ``tf.compat.v1.get_default_graph``
and ``tf.compat.v1.ConfigProto``.

``get_default_graph()`` is TensorFlow 2's answer: inside a function being traced (a
``tf.function``, a Keras model's training step) the graph of that function (a ``FuncGraph``
named after it); inside ``Graph.as_default()`` that TF1 graph
(:mod:`ipusim.compat.tf.v1_session`); in eager code the global default graph, which has no
``name``. ipusim traces
each device function into one graph of its own, so no name ends with ``_scratch_graph`` (IPU
Keras' shape-propagation graph, which ipusim does not build).

``ConfigProto`` holds a session configuration (the protocol-buffer message's scalar fields, with
its defaults and its errors for an unknown field or a wrongly typed value). ipusim runs no TF1
session, so nothing reads it: the IPU system is configured by ``IPUConfig``.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, IPUSimError
from ipusim.graph.graph import Graph as _IRGraph
from ipusim.graph.graph import current_graph

__all__ = ["ConfigProto", "FailedPreconditionError", "FuncGraph", "Graph", "get_default_graph"]


class FailedPreconditionError(IPUSimError, RuntimeError):
    """``tf.errors.FailedPreconditionError``: a session fetch reads a variable that is not
    initialised (:mod:`ipusim.compat.tf.v1_session`)."""


class Graph:
    """TensorFlow's global default graph as eager code sees it (empty; ipusim builds none)."""

    finalized = False

    def get_operations(self) -> list[Any]:
        """No operations: eager code builds no graph."""
        return []

    def __repr__(self) -> str:
        return "<tf.Graph (eager default)>"


class FuncGraph(Graph):
    """The graph of the function being traced.

    Attributes:
        name: the function's name (as TensorFlow's ``FuncGraph.name``).
    """

    def __init__(self, graph: _IRGraph) -> None:
        self._graph = graph
        self.name = graph.name

    def get_operations(self) -> list[Any]:
        """The nodes traced so far (ipusim's graph nodes)."""
        return list(self._graph.nodes)

    def __repr__(self) -> str:
        return f"<FuncGraph {self.name!r}>"


_EAGER_DEFAULT = Graph()


def get_default_graph() -> Graph:
    """``tf.compat.v1.get_default_graph()``: the graph being traced, or the eager default."""
    graph = current_graph()
    if graph is None:
        return _EAGER_DEFAULT
    from ipusim.compat.tf.v1_session import tf1_graph_of

    tf1 = tf1_graph_of(graph)
    return tf1 if tf1 is not None else FuncGraph(graph)


#: ConfigProto's fields in field-number order, with the type of the scalar ones (None: a
#: message, map or repeated field, kept as given since nothing in ipusim reads it).
#: S: tensorflow/core/protobuf/config.proto (``ConfigProto.DESCRIPTOR.fields`` of TF 2.21).
_FIELDS: dict[str, type | None] = {
    "device_count": None,
    "intra_op_parallelism_threads": int,
    "inter_op_parallelism_threads": int,
    "use_per_session_threads": bool,
    "session_inter_op_thread_pool": None,
    "placement_period": int,
    "device_filters": None,
    "gpu_options": None,
    "pluggable_device_options": None,
    "allow_soft_placement": bool,
    "log_device_placement": bool,
    "graph_options": None,
    "operation_timeout_in_ms": int,
    "rpc_options": None,
    "cluster_def": None,
    "isolate_session_state": bool,
    "share_cluster_devices_in_session": bool,
    "experimental": None,
}


def _default(kind: type | None) -> Any:
    return None if kind is None else kind()


class ConfigProto:
    """``tf.compat.v1.ConfigProto(**fields)``: a TF1 session configuration (see the module
    docstring).

    Raises:
        ConfigurationError: (a ValueError) an unknown field, as protobuf's message says.
        TypeError: a scalar field of the wrong type.
    """

    def __init__(self, **fields: Any) -> None:
        for name, kind in _FIELDS.items():
            object.__setattr__(self, name, _default(kind))
        self._set: list[str] = []
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_set":
            object.__setattr__(self, name, value)
            return
        if name not in _FIELDS:
            raise ConfigurationError(f'Protocol message ConfigProto has no "{name}" field.')
        kind = _FIELDS[name]
        if kind is not None:
            if not isinstance(value, int) or (kind is int and isinstance(value, bool)):
                raise TypeError(
                    f"ConfigProto.{name}: expected a {kind.__name__}, received "
                    f"{type(value).__name__} {value!r}"
                )
            value = kind(value)
        object.__setattr__(self, name, value)
        if name not in self._set:
            self._set.append(name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigProto):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as protobuf messages

    def __str__(self) -> str:
        """The text format of the fields set to a non-default value, in field order."""
        lines = []
        for name, kind in _FIELDS.items():
            value = getattr(self, name)
            if value == _default(kind):
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            lines.append(f"{name}: {text}\n")
        return "".join(lines)

    def __repr__(self) -> str:
        return f"ConfigProto({', '.join(f'{n}={getattr(self, n)!r}' for n in self._set)})"
