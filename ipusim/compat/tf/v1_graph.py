"""``tf.compat.v1.get_default_graph`` and ``tf.errors.FailedPreconditionError``.

``get_default_graph()`` is TensorFlow 2's answer: inside a function being traced (a
``tf.function``, a Keras model's training step) the graph of that function (a ``FuncGraph``
named after it); inside ``Graph.as_default()`` that TF1 graph
(:mod:`ipusim.compat.tf.v1_session`); in eager code the global default graph, which has no
``name``. ipusim traces each device function into one graph of its own, so no name ends with
``_scratch_graph`` (IPU Keras' shape-propagation graph, which ipusim does not build).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ipusim.errors import IPUSimError
from ipusim.graph.graph import Graph as _IRGraph
from ipusim.graph.graph import current_graph

if TYPE_CHECKING:  # v1_session imports this module
    from ipusim.compat.tf.v1_session import Graph as TF1Graph

__all__ = ["FailedPreconditionError", "FuncGraph", "Graph", "get_default_graph"]


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


def get_default_graph() -> Graph | TF1Graph:
    """``tf.compat.v1.get_default_graph()``: the graph being traced, or the eager default."""
    graph = current_graph()
    if graph is None:
        return _EAGER_DEFAULT
    from ipusim.compat.tf.v1_session import tf1_graph_of

    tf1 = tf1_graph_of(graph)
    return tf1 if tf1 is not None else FuncGraph(graph)
