"""The cross-replica reduction across the instances of a PopDist job (``ipusim run --instances``).

On the IPUs the gradients of every replica of a job, whichever host process feeds it, are
reduced by one collective over the IPU-Links and GW-Links; the instances' weights therefore stay
identical. Each instance of ``ipusim run --instances`` is its own operating-system process and
computes the numbers of its own replicas, so the instances hand those replicas' arrays to each
other at each reduction: every instance writes its arrays to a folder the launcher shares with
them (:data:`EXCHANGE_ENVIRONMENT`) and reads everyone's, in instance order, so all reduce the
same arrays in the same order and get bit-identical results. This is host plumbing: the
simulated time of the collective comes from the program, as in a single process.

Files are ``.npz`` without pickle, written aside and renamed into place; an instance removes its
file of two rounds back (everyone has read it once they have written the next round).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ipusim._files import atomic_output
from ipusim.errors import IncompatibleStateError

__all__ = ["EXCHANGE_ENVIRONMENT", "InstanceExchange", "instance_exchange", "job_replicas"]

#: The folder the launcher shares with its instances (unset: a process on its own).
EXCHANGE_ENVIRONMENT = "IPUSIM_INSTANCE_EXCHANGE"

#: Written into the folder by the launcher when an instance failed: the others stop waiting.
ABORT_FILE = "abort"

_POLL_S = 0.002  # seconds between looks for the other instances' files (wall time, host only)
_WAIT_LIMIT_S = 900.0  # how long an instance waits for the others before giving up


@dataclass
class InstanceExchange:
    """One instance's end of the exchange.

    Attributes:
        folder: the shared folder.
        index: this instance's index (its replica index offset / its local replicas).
        count: the number of instances (total replicas / local replicas).
        rounds: exchanges made so far.
    """

    folder: Path
    index: int
    count: int
    rounds: int = 0

    def all_gather(self, arrays: list[np.ndarray]) -> list[list[np.ndarray]]:
        """Every instance's ``arrays`` (this one's included), in instance order."""
        number = self.rounds
        self.rounds += 1
        with atomic_output(self._path(number, self.index)) as handle:  # the others see all or none
            np.savez(handle, *[np.asarray(a) for a in arrays])
        gathered = [self._read(self._wait(number, k), len(arrays)) for k in range(self.count)]
        if number >= 2:
            self._path(number - 2, self.index).unlink(missing_ok=True)
        return gathered

    def _path(self, number: int, instance: int) -> Path:
        return self.folder / f"{number:09d}-{instance}.npz"

    def _wait(self, number: int, instance: int) -> Path:
        path = self._path(number, instance)
        # Counted sleeps, not a clock: inside `ipusim run` the script's clocks are simulated.
        for _ in range(int(_WAIT_LIMIT_S / _POLL_S)):
            if path.exists():
                return path
            if (self.folder / ABORT_FILE).exists():
                break
            time.sleep(_POLL_S)
        raise IncompatibleStateError(
            f"instance {self.index} of {self.count}: instance {instance} did not reach "
            f"cross-replica reduction {number} (it failed or stopped early; every instance of a "
            "PopDist job must run the same steps)"
        )

    @staticmethod
    def _read(path: Path, expected: int) -> list[np.ndarray]:
        with np.load(path, allow_pickle=False) as data:
            arrays = [data[f"arr_{i}"] for i in range(len(data.files))]
        if len(arrays) != expected:
            raise IncompatibleStateError(
                f"{path.name}: another instance reduced {len(arrays)} arrays where this one has "
                f"{expected}; every instance of a PopDist job must build the same model"
            )
        return arrays


_CURRENT: dict[str, InstanceExchange] = {}


def instance_exchange() -> InstanceExchange | None:
    """This process's exchange when it is an instance of ``ipusim run --instances``, else None."""
    folder = os.environ.get(EXCHANGE_ENVIRONMENT)
    if not folder:
        return None
    if folder not in _CURRENT:
        _CURRENT.clear()
        local = int(os.environ["POPDIST_NUM_LOCAL_REPLICAS"])
        _CURRENT[folder] = InstanceExchange(
            Path(folder),
            int(os.environ["POPDIST_REPLICA_INDEX_OFFSET"]) // local,
            int(os.environ["POPDIST_NUM_TOTAL_REPLICAS"]) // local,
        )
    return _CURRENT[folder]


def job_replicas(per_replica: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """The arrays of every replica of the job: this process's ``per_replica`` (each replica's
    list of arrays) among the other instances', in instance order (this process's alone when it
    is no instance of ``ipusim run --instances``)."""
    exchange = instance_exchange()
    if exchange is None:
        return per_replica
    width = len(per_replica[0])
    flat = [array for replica in per_replica for array in replica]
    out: list[list[np.ndarray]] = []
    for arrays in exchange.all_gather(flat):
        out.extend(arrays[i : i + width] for i in range(0, len(arrays), width))
    return out
