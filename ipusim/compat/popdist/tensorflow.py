"""``popdist.tensorflow``: configure an ``IPUConfig`` for this instance of a PopDist job.

``set_ipu_config`` gives the configuration this instance's IPUs (its local replicas times the
IPUs per replica) and the multi-replica distribution options (``process_count`` = instances,
``process_index`` = this instance), so the simulation times the whole job: the global
replication factor is the local one times the instances, each instance feeding its replicas
from its own share of the host (:func:`ipusim.session.host_cpu_per_process`).
"""

from __future__ import annotations

from typing import Any

from ipusim.compat import popdist
from ipusim.errors import ConfigurationError

__all__ = ["set_ipu_config"]


def set_ipu_config(
    config: Any, ipus_per_replica: int | None = None, configure_device: bool = True
) -> Any:
    """Set up ``config`` for this instance and return it.

    Args:
        config: the ``IPUConfig``.
        ipus_per_replica: IPUs of one replica (default: poprun's ``--ipus-per-replica``).
        configure_device: also select the instance's IPUs (``auto_select_ipus`` = local
            replicas x IPUs per replica); False sets only the distribution options.

    Raises:
        ConfigurationError: ``ipus_per_replica`` disagrees with the one poprun was given.
    """
    per_replica = popdist.getNumIpusPerReplica() if ipus_per_replica is None else ipus_per_replica
    if not popdist.checkNumIpusPerReplica(per_replica):
        raise ConfigurationError(
            f"popdist.tensorflow.set_ipu_config: ipus_per_replica={per_replica}, but the job was "
            f"launched with {popdist.getNumIpusPerReplica()} IPUs per replica; make them agree "
            "(ipusim run --ipus-per-replica)."
        )
    if configure_device:
        config.auto_select_ipus = popdist.getNumLocalReplicas() * int(per_replica)
    distribution = config.experimental.multi_replica_distribution
    distribution.process_count = popdist.getNumInstances()
    distribution.process_index = popdist.getInstanceIndex()
    return config


def __getattr__(name: str) -> Any:
    if name == "PopDistStrategy":
        from ipusim.compat.ipu.distributed import PopDistStrategy

        return PopDistStrategy
    raise AttributeError(f"module 'popdist.tensorflow' has no attribute {name!r}")
