"""Host embeddings: ``create_host_embedding``, ``HostEmbedding`` and their optimizer specs.

Mirrors ``tensorflow/python/ipu/ops/embedding_ops.py`` (IPU TensorFlow 2): the table lives in
host memory; in an IPU program ``embedding.lookup(ids)`` sends the ids to the host and gets the
rows back over the host link, and when the optimizer spec has a non-zero learning rate the
gradient of the rows goes back to the host, which applies SGD to the table
(``table[ids] -= learning_rate * grad``, duplicates adding up). The optimizer asks for that
gradient through the embedding's trainable scalar ``<name>/__dummy`` (as IPU TensorFlow: take
gradients w.r.t. every trainable variable, e.g. ``tape.watched_variables()``).
``HostEmbeddingSGDGAOptimizerSpec`` keeps the updates on the host and adds them every
``accumulation_factor`` steps, at the weight update. The host-link time of each lookup and
update is in the simulated timing (:mod:`ipusim.cost.host_embedding`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.dispatch import run_op
from ipusim.compat.runtime.ops import TFVariable, Variable
from ipusim.compat.runtime.ops_host_embedding import HostTable, register_table
from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.graph.graph import apply
from ipusim.graph.ops import math as gm
from ipusim.graph.ops import shape as gs
from ipusim.graph.spec import canonical_dtype

__all__ = [
    "HostEmbedding",
    "HostEmbeddingOptimizerSpec",
    "HostEmbeddingSGDGAOptimizerSpec",
    "create_host_embedding",
]

PARTITION_STRATEGIES = ("TOKEN", "ENCODING")


class HostEmbeddingOptimizerSpec:
    """How the host updates the embedding: SGD with a constant learning rate.

    Args:
        learning_rate: the SGD learning rate; 0 makes the embedding not trainable.
        optimizer_name: "SGD" (the only optimizer IPU TensorFlow's host embeddings have).
    """

    def __init__(self, learning_rate: float, optimizer_name: str | None = None) -> None:
        self._learning_rate = learning_rate
        self._optimizer_name = optimizer_name or "SGD"
        if self._optimizer_name not in ("SGD", "SGD+GA"):
            raise UnsupportedError(
                f"HostEmbeddingOptimizerSpec: optimizer_name {optimizer_name!r} is not one IPU "
                "TensorFlow's host embeddings have; they support 'SGD' (and 'SGD+GA' through "
                "HostEmbeddingSGDGAOptimizerSpec)"
            )

    def get_learning_rate(self) -> float:
        """The learning rate."""
        return self._learning_rate

    def accumulation_factor(self) -> int:
        """Updates the host keeps before adding them to the table."""
        return 1


class HostEmbeddingSGDGAOptimizerSpec(HostEmbeddingOptimizerSpec):
    """SGD with gradient accumulation: the host adds the updates of ``accumulation_factor``
    mini-batches together, at the weight update.

    Args:
        learning_rate: the SGD learning rate.
        accumulation_factor: mini-batches whose updates are accumulated.
    """

    def __init__(self, learning_rate: float, accumulation_factor: int) -> None:
        if isinstance(accumulation_factor, bool) or not isinstance(accumulation_factor, int):
            raise ConfigurationError(
                "HostEmbeddingSGDGAOptimizerSpec: accumulation_factor must be an integer, "
                f"received {accumulation_factor!r}"
            )
        super().__init__(learning_rate, "SGD+GA" if accumulation_factor > 1 else None)
        self._accumulation_factor = accumulation_factor

    def get_accumulation_factor(self) -> int:
        """The gradient accumulation factor."""
        return self._accumulation_factor

    def accumulation_factor(self) -> int:
        return max(1, self._accumulation_factor)


class _Registration:
    """What ``HostEmbedding.register`` returns: connects the table to the IPU while open."""

    def __init__(self, parent: HostEmbedding, session: Any) -> None:
        self._parent = parent
        self._session = session

    def __enter__(self) -> HostEmbedding:
        self._parent._host.registered = True
        return self._parent

    def __exit__(self, *exc: Any) -> None:
        self._parent._host.registered = False


class HostEmbedding:
    """An embedding table in host memory that IPU programs look up (and train).

    Args:
        name: the name identifying the embedding.
        embedding_tensor: the table variable (``[tokens, encoding]``), in host memory.
        partition_strategy: "TOKEN" or "ENCODING" (how remote-buffer embeddings split over
            replicas; host embeddings keep one table).
        optimizer_spec: a :class:`HostEmbeddingOptimizerSpec`; None: not trainable.

    Raises:
        ConfigurationError: a table that is not a rank-2 variable, an unknown strategy or an
            optimizer spec of the wrong type (IPU TensorFlow raises ValueError for these).
    """

    def __init__(
        self,
        name: str,
        embedding_tensor: Any,
        partition_strategy: str = "TOKEN",
        optimizer_spec: HostEmbeddingOptimizerSpec | None = None,
    ) -> None:
        if not isinstance(embedding_tensor, TFVariable) or len(embedding_tensor.shape) != 2:
            raise ConfigurationError(
                "HostEmbedding: embedding_tensor must be a rank-2 tf.Variable [tokens, encoding], "
                f"received {type(embedding_tensor).__name__}"
            )
        if not isinstance(optimizer_spec, type(None) | HostEmbeddingOptimizerSpec):
            raise ConfigurationError(
                "HostEmbedding optimizer_spec is not a HostEmbeddingOptimizerSpec or None, "
                f"received {type(optimizer_spec).__name__}"
            )
        if partition_strategy not in PARTITION_STRATEGIES:
            raise ConfigurationError(
                f"Unknown partition strategy {partition_strategy!r}; expected one of "
                f"{PARTITION_STRATEGIES}"
            )
        self._name = name
        self._embedding_tensor = embedding_tensor
        self._partition_strategy = partition_strategy
        self._optimizer_spec = optimizer_spec or HostEmbeddingOptimizerSpec(0)
        table = embedding_tensor.value
        self._host = HostTable(name, table, self._optimizer_spec.accumulation_factor())
        self._table_id = register_table(self._host)
        self._token = Variable(np.zeros((), table.dtype), name=f"{name}/__dummy")

    def get_embedding_tensor(self) -> TFVariable:
        """The host table (the variable the updates change in place)."""
        return self._embedding_tensor

    def register(self, session: Any = None) -> _Registration:
        """A context manager connecting the table to IPU programs while it is open.

        Args:
            session: the TF1 session (accepted; ipusim runs eagerly without one).
        """
        return _Registration(self, session)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(
            "HostEmbedding.__call__ is not supported. Please use the context manager created "
            "with HostEmbedding.register."
        )

    def lookup(self, indices: Any, clip_indices: bool = True) -> Any:
        """The rows of ``indices`` (any shape), looked up on the host.

        Args:
            indices: integer ids.
            clip_indices: clip the ids into ``[0, tokens - 1]`` on the IPU first.

        Returns:
            A tensor of shape ``indices.shape + [encoding]``.
        """
        shape = tuple(int(d) for d in np.shape(indices))
        tokens, width = (int(d) for d in self._embedding_tensor.shape)
        lr = float(self._optimizer_spec.get_learning_rate())
        dtype = canonical_dtype(self._embedding_tensor.dtype)

        def compose(ids: Any, token: Any) -> Any:
            if ids.dtype != "int32":
                ids = gm.cast(ids, "int32")
            if clip_indices:
                ids = gm.minimum(gm.maximum(ids, 0), tokens - 1)
            flat = gs.reshape(ids, (int(np.prod(shape, dtype=np.int64)),))
            rows = apply("host_embedding_lookup", flat, token, table_id=self._table_id,
                         width=width, dtype=dtype, learning_rate=lr)  # fmt: skip
            return gs.reshape(rows, (*shape, width))

        if not context.is_tracing():
            self._host.check_registered()
        return run_op(compose, indices, self._token)


def create_host_embedding(
    name: str,
    shape: Sequence[int],
    dtype: Any,
    partition_strategy: str = "TOKEN",
    optimizer_spec: HostEmbeddingOptimizerSpec | None = None,
    initializer: Any = None,
) -> HostEmbedding:
    """Create a :class:`HostEmbedding` with a new table of ``shape`` and ``dtype``.

    Args:
        name: the name identifying the embedding.
        shape: ``[tokens, encoding]``.
        dtype: the table's dtype.
        partition_strategy: "TOKEN" or "ENCODING".
        optimizer_spec: how the host trains it; None: not trainable.
        initializer: the initial table (an array, or a Keras / tf initializer called with the
            shape and dtype); default zeros, as IPU TensorFlow.
    """
    dims = tuple(int(d) for d in shape)
    numpy_dtype = canonical_dtype(dtype)
    if initializer is None:
        value = np.zeros(dims, numpy_dtype)
    elif callable(initializer):
        value = np.asarray(initializer(dims, dtype=numpy_dtype), numpy_dtype)
    else:
        value = np.broadcast_to(np.asarray(initializer, numpy_dtype), dims).copy()
    table = Variable(value, trainable=False, name=name)
    return HostEmbedding(name, table, partition_strategy, optimizer_spec)
