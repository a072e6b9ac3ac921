"""``ipu.ops.embedding_ops`` (also ``ipu.embedding_ops``): the IPU's embedding lookup
(``tensorflow/python/ipu/ops/embedding_ops.py``), the runtime's gather of rows of ``params``,
and the host embeddings (:mod:`ipusim.compat.ipu.ops.host_embedding`).

``serialization_factor`` splits the table into that many parts on the IPU to save memory; the
result is the same and the split is not modelled.
"""

from __future__ import annotations

from typing import Any

from ipusim.compat.ipu.ops import host_embedding
from ipusim.compat.ipu.ops.host_embedding import (  # noqa: F401 - in __all__
    HostEmbedding,
    HostEmbeddingOptimizerSpec,
    HostEmbeddingSGDGAOptimizerSpec,
    create_host_embedding,
)
from ipusim.compat.runtime.dispatch import run_op
from ipusim.errors import ConfigurationError
from ipusim.graph.ops import nn as gnn

__all__ = [*host_embedding.__all__, "embedding_lookup"]


def embedding_lookup(
    params: Any, ids: Any, name: str | None = None, serialization_factor: int = 1
) -> Any:
    """Rows ``params[ids]`` (``ids`` of any shape; the result has shape ``ids.shape +
    params.shape[1:]``).

    Raises:
        ConfigurationError: ``serialization_factor`` is below 1 or does not divide the number of
            rows (IPU TensorFlow requires both).
    """
    rows = int(params.shape[0])
    if serialization_factor < 1 or rows % serialization_factor:
        raise ConfigurationError(
            f"embedding_lookup: serialization_factor ({serialization_factor}) must be a "
            f"positive divisor of the number of rows of params ({rows})"
        )
    return run_op(gnn.embedding_lookup, params, ids)
