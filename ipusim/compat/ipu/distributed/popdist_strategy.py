"""``PopDistStrategy``: data-parallel training over the instances of a PopDist job
(``tensorflow.python.ipu.distributed.popdist_strategy``, IPU TensorFlow 2 SDK 3.x).

Each instance (one process of ``ipusim run --instances``, as ``poprun`` starts them) runs its
local replicas; the strategy makes the simulation see every instance
(``IPUConfig.experimental.multi_replica_distribution.process_count``), so the report times the
whole job: gradients reduced over all replicas across the IPU-Links and GW-Links, each instance
feeding its replicas from its share of the host. ipusim computes each instance's numbers on its
own: the gradients of one step are averaged over the instance's local replicas, not over every
instance's (variables start equal when the instances seed alike, as IPU TensorFlow's broadcast
makes them, but drift apart as they train on different data).
"""

from __future__ import annotations

from typing import Any

from ipusim.compat import popdist
from ipusim.strategy import IPUStrategy

__all__ = ["PopDistStrategy"]


class PopDistStrategy(IPUStrategy):
    """Synchronous data-parallel training with PopDist.

    Args:
        ipu_device: the instance's IPU device (only ``/device:IPU:0`` is simulated).
        add_ipu_cross_replica_reductions: reduce over the replicas on the IPUs (the default;
            False is not simulated).
        enable_dataset_iterators / enable_keras_extensions: as :class:`IPUStrategy`.

    Raises:
        UnsupportedError: ``add_ipu_cross_replica_reductions=False``.
    """

    def __init__(
        self,
        ipu_device: str = "/device:IPU:0",
        add_ipu_cross_replica_reductions: bool = True,
        enable_dataset_iterators: bool = True,
        enable_keras_extensions: bool = True,
    ) -> None:
        if not add_ipu_cross_replica_reductions:
            from ipusim.errors import UnsupportedError

            raise UnsupportedError(
                "PopDistStrategy(add_ipu_cross_replica_reductions=False): reductions on the "
                "hosts are not simulated; keep the default True."
            )
        popdist.init()
        super().__init__(
            ipu_device=ipu_device,
            enable_dataset_iterators=enable_dataset_iterators,
            enable_keras_extensions=enable_keras_extensions,
        )
        #: Host processes of the job; the session reads it (``process_count``).
        self.worker_count = popdist.getNumInstances()

    def update_ipu_config(self, config: Any) -> Any:
        """Set the multi-replica distribution options of ``config`` (instances, this instance)
        and return it."""
        distribution = config.experimental.multi_replica_distribution
        distribution.process_count = popdist.getNumInstances()
        distribution.process_index = popdist.getInstanceIndex()
        return config

    def run(
        self, fn: Any, args: tuple = (), kwargs: dict | None = None, options: Any = None
    ) -> Any:
        """As :meth:`IPUStrategy.run`, with the instances visible to the simulation."""
        with self.scope():
            return super().run(fn, args, kwargs, options)

    @property
    def num_replicas_in_sync(self) -> int:
        """The instances (one in-sync replica per instance, as TensorFlow's collective
        strategies count them)."""
        return self.worker_count

    def __repr__(self) -> str:
        return f"PopDistStrategy(instances={self.worker_count}, ipu_device={self.ipu_device!r})"
