"""The cross-replica mean of a replicated Keras step: over this process's replicas, and over
every instance's when the process is one instance of a PopDist job (``ipusim run --instances``,
:mod:`ipusim.session.exchange`), as the IPUs' one collective over all replicas of the job does.
The mean is :func:`ipusim.graph.ops.update.cross_replica_mean`, shared with the compat runtime."""

from __future__ import annotations

import numpy as np

from ipusim.graph.ops.update import cross_replica_mean as replica_mean

__all__ = ["job_replicas", "replica_mean"]


def job_replicas(per_replica: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Every replica's arrays in the job (:func:`ipusim.session.exchange.job_replicas`)."""
    from ipusim.session.exchange import job_replicas as gather  # on use: session loads pandas

    return gather(per_replica)
