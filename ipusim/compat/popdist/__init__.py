"""``popdist`` for ported scripts: the PopDist API (Poplar distributed configuration) that
programs launched with ``poprun`` call to learn their place in the job.

``ipusim run --instances N --replicas R script.py`` starts one process per instance, as
``poprun --num-instances N --num-replicas R`` does, and gives each the environment ``poprun``
gives it (``POPDIST_NUM_TOTAL_REPLICAS``, ``POPDIST_NUM_LOCAL_REPLICAS``,
``POPDIST_NUM_IPUS_PER_REPLICA``, ``POPDIST_REPLICA_INDEX_OFFSET``,
``POPDIST_LOCAL_INSTANCE_INDEX``); these functions read it. Outside such a run (a plain
``ipusim run``) they describe a job of one instance holding every replica, as PopDist does
without ``poprun``. See :mod:`ipusim.compat.poprun` for what each instance simulates.

Names and defaults follow the PopDist Python API reference
(https://docs.graphcore.ai/projects/poprun-user-guide/en/latest/api_python.html).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from typing import Any

from ipusim.config.devices import DEFAULT_LISTING_IPUS, device_listing
from ipusim.errors import ConfigurationError

__all__ = [
    "checkNumIpusPerReplica",
    "execute_on_instances",
    "finalizeBackend",
    "getDeviceId",
    "getInstanceIndex",
    "getLocalInstanceIndex",
    "getNumInstances",
    "getNumIpusPerReplica",
    "getNumLocalReplicas",
    "getNumTotalReplicas",
    "getReplicaIndexOffset",
    "init",
    "isPopdistEnvSet",
]

#: The environment variables poprun sets for each instance (and their values without poprun).
ENVIRONMENT = {
    "POPDIST_NUM_TOTAL_REPLICAS": 1,
    "POPDIST_NUM_LOCAL_REPLICAS": 1,
    "POPDIST_NUM_IPUS_PER_REPLICA": 1,
    "POPDIST_REPLICA_INDEX_OFFSET": 0,
    "POPDIST_LOCAL_INSTANCE_INDEX": 0,
}


def _read(name: str) -> int:
    text = os.environ.get(name)
    if text is None:
        return ENVIRONMENT[name]
    try:
        return int(text)
    except ValueError:
        raise ConfigurationError(
            f"popdist: the environment variable {name}={text!r} is not a whole number; it is "
            "set by poprun / ipusim run --instances, unset it or give a number."
        ) from None


def isPopdistEnvSet() -> bool:
    """Whether the process was started by ``poprun`` (here: ``ipusim run --instances``)."""
    return "POPDIST_NUM_TOTAL_REPLICAS" in os.environ


def init() -> None:
    """Initialise PopDist (nothing to set up in a simulation; checks the environment)."""
    if getNumTotalReplicas() % getNumLocalReplicas():
        raise ConfigurationError(
            f"popdist.init: {getNumTotalReplicas()} total replicas do not split evenly into "
            f"instances of {getNumLocalReplicas()} local replicas; give --replicas a multiple "
            "of --instances."
        )


def finalizeBackend() -> None:
    """End PopDist's communication backend (nothing to end in a simulation)."""


def getNumTotalReplicas() -> int:
    """Replicas of the whole job (all instances); 1 without poprun."""
    return _read("POPDIST_NUM_TOTAL_REPLICAS")


def getNumLocalReplicas() -> int:
    """Replicas of this instance; 1 without poprun."""
    return _read("POPDIST_NUM_LOCAL_REPLICAS")


def getNumIpusPerReplica() -> int:
    """IPUs each replica occupies; 1 without poprun."""
    return _read("POPDIST_NUM_IPUS_PER_REPLICA")


def getReplicaIndexOffset() -> int:
    """Global index of this instance's first replica; 0 without poprun."""
    return _read("POPDIST_REPLICA_INDEX_OFFSET")


def getNumInstances() -> int:
    """Instances (host processes) of the job: total replicas / local replicas."""
    return getNumTotalReplicas() // getNumLocalReplicas()


def getInstanceIndex() -> int:
    """This instance's index in ``[0, getNumInstances())``."""
    return getReplicaIndexOffset() // getNumLocalReplicas()


def getLocalInstanceIndex() -> int:
    """This instance's index among the instances of its host (every instance of a simulated
    job runs on one host); 0 without poprun."""
    return _read("POPDIST_LOCAL_INSTANCE_INDEX")


def checkNumIpusPerReplica(ipus_per_replica: int) -> bool:
    """Whether ``ipus_per_replica`` agrees with the IPUs per replica poprun was given (True
    without poprun)."""
    return not isPopdistEnvSet() or getNumIpusPerReplica() == int(ipus_per_replica)


def getDeviceId(ipusPerReplica: int = 0) -> int:  # noqa: N803 (PopDist's spelling)
    """The ``select_ipus`` index of the device holding this instance's IPUs: its local
    replicas times ``ipusPerReplica`` (default: poprun's IPUs per replica), numbered as
    ``gc-info -l`` lists devices (:mod:`ipusim.config.devices`)."""
    per_replica = int(ipusPerReplica) or getNumIpusPerReplica()
    size = 1 << max(getNumLocalReplicas() * per_replica - 1, 0).bit_length()  # next power of 2
    listing = device_listing(max(DEFAULT_LISTING_IPUS, size))
    return next(i for i, ipus in enumerate(listing) if len(ipus) == size)


def execute_on_instances(
    instances: Collection[int], func: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """Call ``func(*args, **kwargs)`` on the listed instances only (None on the others)."""
    if getInstanceIndex() in set(instances):
        return func(*args, **kwargs)
    return None
