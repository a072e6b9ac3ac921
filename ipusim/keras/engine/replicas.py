"""The cross-replica mean of a replicated Keras step: over this process's replicas, and over
every instance's when the process is one instance of a PopDist job (``ipusim run --instances``,
:mod:`ipusim.session.exchange`), as the IPUs' one collective over all replicas of the job does."""

from __future__ import annotations

import numpy as np

from ipusim.graph.numerics import current_numerics
from ipusim.kernels.accumulate import accumulate, finish
from ipusim.kernels.half import round_to_half

__all__ = ["job_replicas", "replica_mean"]


def job_replicas(per_replica: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Every replica's arrays in the job (:func:`ipusim.session.exchange.job_replicas`)."""
    from ipusim.session.exchange import job_replicas as gather  # on use: session loads pandas

    return gather(per_replica)


def replica_mean(per_replica: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Element-wise mean over replicas of matching arrays (one replica: returned as is).

    Half-precision gradients (float16, or float32 under fp16.x precision) are summed in float32
    and the mean rounded to half once.
    """
    if len(per_replica) == 1:
        return per_replica[0]
    numerics = current_numerics()
    out = []
    for arrays in zip(*per_replica):
        dtype = arrays[0].dtype
        acc = np.zeros(arrays[0].shape, dtype=np.float64 if dtype == np.float64 else np.float32)
        for count, array in enumerate(arrays):
            accumulate(acc, np.asarray(array, dtype=acc.dtype), count, "sum")
        finish(acc, len(arrays), "mean")
        if dtype == np.float16 or (dtype == np.float32 and numerics.emulate_half):
            acc = round_to_half(acc, nan_on_overflow=numerics.nan_on_overflow)[0]
        out.append(acc.astype(dtype, copy=False))
    return out
