"""Tensors whose gradients a training step captures (``keras.ipu.layers.CaptureUpstreamGradients``
and ``CaptureActivationGradients``).

A capturing layer registers ``(tag, tensor)`` on the graph being traced; the training step
differentiates the loss with respect to those tensors too and hands the gradients, by tag, to
an optimizer whose ``supports_captured_grads`` is true (``apply_gradients(...,
captured_grads={tag: gradient})``), as Graphcore's Keras does.
"""

from __future__ import annotations

import weakref
from typing import Any

_CAPTURES: weakref.WeakKeyDictionary[Any, list[tuple[str, Any]]] = weakref.WeakKeyDictionary()


def capture(tag: str, tensor: Any) -> Any:
    """Register ``tensor`` (a graph Symbol) under ``tag``; returns it unchanged."""
    graph = getattr(tensor, "graph", None)
    if graph is not None:
        entries = _CAPTURES.setdefault(graph, [])
        if all(t is not tensor for _, t in entries):
            entries.append((tag, tensor))
    return tensor


def captured(graph: Any) -> list[tuple[str, Any]]:
    """The ``(tag, tensor)`` pairs registered on ``graph``, in registration order."""
    return list(_CAPTURES.get(graph, []))
