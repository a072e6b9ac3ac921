"""``tensorflow.python.ipu.horovod`` as PopDist programs use it: ``init`` / ``shutdown`` and the
job's size and rank (one rank per instance), and the strategies of older SDKs
(``popdist_strategy.PopDistStrategy``, ``ipu_multi_replica_strategy.IPUMultiReplicaStrategy``).
Host-side collectives (``allreduce``, ``broadcast``) are not simulated.
"""

from __future__ import annotations

from ipusim.compat import popdist
from ipusim.compat.ipu.horovod import (  # type: ignore[attr-defined]
    # both are ipusim.strategy, made by the import hook of ipusim.compat._alias (MODULES),
    # which mypy cannot follow
    ipu_multi_replica_strategy,
    popdist_strategy,
)

__all__ = [
    "init",
    "ipu_multi_replica_strategy",
    "local_rank",
    "local_size",
    "popdist_strategy",
    "rank",
    "shutdown",
    "size",
]


def init() -> None:
    """Start Horovod (nothing to start: the instances do not talk to each other here)."""
    popdist.init()


def shutdown() -> None:
    """Stop Horovod."""


def size() -> int:
    """Processes of the job: the PopDist instances."""
    return popdist.getNumInstances()


def rank() -> int:
    """This process's rank: its PopDist instance index."""
    return popdist.getInstanceIndex()


def local_size() -> int:
    """Processes on this host: every instance of a simulated job runs on one host."""
    return popdist.getNumInstances()


def local_rank() -> int:
    """This process's rank on its host."""
    return popdist.getLocalInstanceIndex()
