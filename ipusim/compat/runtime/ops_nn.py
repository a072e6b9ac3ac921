"""``tf.nn``: the neural-network ops of the runtime (traced or eager, see :mod:`.dispatch`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ipusim.compat.runtime.dispatch import run_op as _op
from ipusim.errors import ConfigurationError
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import nn as gnn

__all__ = [
    "bias_add",
    "log_softmax",
    "nn",
    "relu",
    "sigmoid",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
]


def relu(features: Any, name: str | None = None) -> Any:
    return _op(gm.relu, features)


def sigmoid(x: Any, name: str | None = None) -> Any:
    return _op(gm.sigmoid, x)


def tanh(x: Any, name: str | None = None) -> Any:
    return _op(gm.tanh, x)


def softmax(logits: Any, axis: int = -1, name: str | None = None) -> Any:
    return _op(gnn.softmax, logits, axis=int(axis))


def log_softmax(logits: Any, axis: int = -1, name: str | None = None) -> Any:
    return _op(gnn.log_softmax, logits, axis=int(axis))


def bias_add(value: Any, bias: Any, data_format: Any = None, name: str | None = None) -> Any:
    return _op(gnn.bias_add, value, bias)


def _keyword_only(op: str, labels: Any, logits: Any) -> None:
    if labels is None or logits is None:
        raise ConfigurationError(f"{op}: pass both `labels=` and `logits=` (as keyword arguments)")


def sparse_softmax_cross_entropy_with_logits(
    _sentinel: Any = None, labels: Any = None, logits: Any = None, name: str | None = None
) -> Any:
    """Per-example cross-entropy of ``softmax(logits)`` against integer class ``labels``."""
    if _sentinel is not None:
        raise ConfigurationError(
            "sparse_softmax_cross_entropy_with_logits: only call it with named arguments "
            "(labels=..., logits=...)"
        )
    _keyword_only("sparse_softmax_cross_entropy_with_logits", labels, logits)
    return _op(gnn.sparse_softmax_cross_entropy_with_logits, labels, logits)


def softmax_cross_entropy_with_logits(
    labels: Any = None, logits: Any = None, axis: int = -1, name: str | None = None
) -> Any:
    _keyword_only("softmax_cross_entropy_with_logits", labels, logits)
    return _op(gnn.softmax_cross_entropy_with_logits, labels, logits)


def sigmoid_cross_entropy_with_logits(
    labels: Any = None, logits: Any = None, name: str | None = None
) -> Any:
    _keyword_only("sigmoid_cross_entropy_with_logits", labels, logits)
    return _op(gnn.sigmoid_cross_entropy_with_logits, labels, logits)


#: ``tf.nn``.
nn = SimpleNamespace(**{name: globals()[name] for name in __all__ if name != "nn"})
