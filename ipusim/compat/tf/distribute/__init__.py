"""``tf.distribute``: the pieces IPU programs use beside ``IPUStrategy``: ``ReduceOp``, the
current strategy (``get_strategy``, ``has_strategy``), ``InputOptions`` and the cluster
resolvers ``IPUMultiWorkerStrategy`` reads. GPU / TPU / parameter-server strategies are not
simulated (docs/api.md says what to use instead)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ipusim._scope import current_strategy
from ipusim.compat.tf.distribute import cluster_resolver
from ipusim.errors import UnsupportedError

__all__ = ["InputOptions", "ReduceOp", "cluster_resolver", "get_strategy", "has_strategy"]


class ReduceOp(enum.Enum):
    """``tf.distribute.ReduceOp``: how values of the replicas combine."""

    SUM = "SUM"
    MEAN = "MEAN"


@dataclass(frozen=True)
class InputOptions:
    """``tf.distribute.InputOptions``: accepted; ipusim's infeeds feed every replica from the
    host whatever these say."""

    experimental_fetch_to_device: bool | None = None
    experimental_replication_mode: Any = None
    experimental_place_dataset_on_device: bool = False
    experimental_per_replica_buffer_size: int = 1


def has_strategy() -> bool:
    """Whether code runs inside a strategy's ``scope()``."""
    return current_strategy() is not None


def get_strategy() -> Any:
    """The strategy whose ``scope()`` is active (TensorFlow's default strategy is not simulated:
    outside every scope this raises).

    Raises:
        UnsupportedError: no strategy scope is active.
    """
    strategy = current_strategy()
    if strategy is None:
        raise UnsupportedError(
            "tf.distribute.get_strategy() outside any strategy scope would return TensorFlow's "
            "default (CPU) strategy, which ipusim does not simulate; call it inside "
            "`with ipu.ipu_strategy.IPUStrategy().scope():`"
        )
    return strategy
