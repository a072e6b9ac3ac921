"""``IPUStrategy``: the scope inside which Keras models become IPU models.

Models created (or loaded) inside ``strategy.scope()`` gain the IPU extension methods
(``set_gradient_accumulation_options``, ``set_infeed_queue_options``, ...) and their
``fit``/``evaluate``/``predict`` both train for real and simulate the configured IPU system.
Outside any scope a model runs plainly, with no timing, as a Keras model on a CPU would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ipusim._scope import current_strategy, scope_stack
from ipusim.config._env import tf_config
from ipusim.errors import ConfigurationError, RemovedAPIError, UnsupportedError

__all__ = [
    "IPUMultiReplicaStrategy",
    "IPUMultiWorkerStrategy",
    "IPUMultiWorkerStrategyV1",
    "PopDistStrategy",
    "IPUStrategy",
    "IPUStrategyV1",
    "current_strategy",
]


class IPUStrategy:
    """Targets the (simulated) IPU system configured with ``configure_ipu_system``.

    Args:
        ipu_device: the TensorFlow device name of the IPU (only ``/device:IPU:0`` is simulated).
        cpu_device: the host device name (informational).
        enable_dataset_iterators: accepted for compatibility.
        enable_keras_extensions: when False, Keras models created in the scope are not patched
            and run plainly.
    """

    def __init__(
        self,
        ipu_device: str = "/device:IPU:0",
        cpu_device: str = "/device:CPU:0",
        enable_dataset_iterators: bool = True,
        enable_keras_extensions: bool = True,
    ) -> None:
        if not isinstance(ipu_device, str) or not ipu_device.startswith("/device:IPU:"):
            raise ConfigurationError(
                f"IPUStrategy: `ipu_device` must look like '/device:IPU:0', received {ipu_device!r}"
            )
        if ipu_device != "/device:IPU:0":
            raise UnsupportedError(
                f"IPUStrategy: only /device:IPU:0 is simulated, received {ipu_device!r}"
            )
        self.ipu_device = ipu_device
        self.cpu_device = cpu_device
        self.enable_dataset_iterators = enable_dataset_iterators
        self.enable_keras_extensions = enable_keras_extensions
        #: The simulation report of the last ``run`` (custom training loops), or None.
        self.last_simulation: Any = None

    @contextmanager
    def scope(self) -> Iterator[IPUStrategy]:
        """Models created inside this block target the IPU."""
        scope_stack().append(self)
        try:
            yield self
        finally:
            scope_stack().pop()

    @property
    def num_replicas_in_sync(self) -> int:
        """Always 1, as in IPU TensorFlow: replication happens inside the IPU program."""
        return 1

    @property
    def supports_loss_scaling(self) -> bool:
        return True

    def run(
        self,
        fn: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        options: Any = None,
    ) -> Any:
        """Run ``fn`` (a ``tf.function``) once on the IPU and return its outputs.

        The function is traced, executed with the real kernels and simulated on the configured
        system; the report is kept in :attr:`last_simulation`. Called inside a ``tf.function``,
        ``fn`` simply becomes part of that function.

        Raises:
            ValueError: ``fn`` is a plain Python function called eagerly.
            TypeError: an input or output has dtype float64.
        """
        from ipusim.compat.runtime.function import strategy_run

        return strategy_run(self, fn, args, kwargs)

    def experimental_run_v2(self, *args: Any, **kwargs: Any) -> Any:
        raise RemovedAPIError(
            "IPUStrategy.experimental_run_v2 was removed from IPU TensorFlow; "
            "call strategy.run(fn, args=...) instead"
        )

    def __repr__(self) -> str:
        return f"IPUStrategy(ipu_device={self.ipu_device!r})"


IPUStrategyV1 = IPUStrategy


class _ProcessesStrategy(IPUStrategy):
    """A strategy over several host processes (``worker_count``), each running its replicas."""

    #: Host processes of the job; the session reads it (``process_count``).
    worker_count: int

    def run(
        self,
        fn: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        options: Any = None,
    ) -> Any:
        """As :meth:`IPUStrategy.run`, with the processes visible to the simulation."""
        with self.scope():
            return super().run(fn, args, kwargs, options)

    @property
    def num_replicas_in_sync(self) -> int:
        """The processes (one in-sync replica per process, as TensorFlow counts them)."""
        return self.worker_count


class IPUMultiWorkerStrategy(_ProcessesStrategy):
    """Synchronous data-parallel training over several workers (host processes), each running
    its replicas: IPU TensorFlow's ``IPUMultiWorkerStrategyV1`` (``ipu_multi_worker_strategy``).

    ipusim simulates the whole job from one script: the workers' replicas form one replicated
    program whose gradients are reduced over the IPU-Links and GW-Links of the topology, and each
    worker is one host process feeding its own replicas from its own input pipeline (as
    ``IPUConfig.experimental.multi_replica_distribution.process_count`` = the worker count, which
    it must agree with when both are set). ``auto_select_ipus`` counts the IPUs of one worker,
    so the global replication factor is the local one times the worker count. The numbers are
    those of single-process replication over the same global replicas. Inside its ``scope()``
    (and in ``run``) the simulation sees the workers.

    Args:
        cluster_resolver: where the workers are: an object with a ``cluster_spec()`` method (a
            TensorFlow cluster resolver), a mapping such as ``{"worker": ["host0:2222",
            "host1:2222"]}``, or None to read the ``TF_CONFIG`` environment variable (one worker
            when it is unset). Workers are the ``chief`` and ``worker`` tasks.
        ipu_device: the IPU device of each worker (only ``/device:IPU:0`` is simulated).
        variables_on_host: keep variables (and the weight update) on the hosts; not simulated.

    Raises:
        UnsupportedError: ``variables_on_host=True``.
        ConfigurationError: a cluster specification with no workers, or an unreadable TF_CONFIG.
    """

    def __init__(
        self,
        cluster_resolver: Any = None,
        ipu_device: str = "/device:IPU:0",
        variables_on_host: bool = False,
    ) -> None:
        super().__init__(ipu_device=ipu_device)
        if variables_on_host:
            raise UnsupportedError(
                "IPUMultiWorkerStrategy(variables_on_host=True): streaming gradients to the "
                "hosts and reducing them there is not simulated; keep the variables on the IPU "
                "(variables_on_host=False)."
            )
        self.variables_on_host = False
        spec, self.task_id = _cluster_spec(cluster_resolver)
        self.worker_count = sum(len(spec.get(job, ())) for job in ("chief", "worker"))
        if self.worker_count < 1:
            raise ConfigurationError(
                "IPUMultiWorkerStrategy: the cluster specification names no 'worker' or 'chief' "
                f"task (received {spec!r}); list the workers' addresses under 'worker'."
            )

    def __repr__(self) -> str:
        return (
            f"IPUMultiWorkerStrategy(workers={self.worker_count}, ipu_device={self.ipu_device!r})"
        )


IPUMultiWorkerStrategyV1 = IPUMultiWorkerStrategy


class PopDistStrategy(_ProcessesStrategy):
    """Synchronous data-parallel training over the instances of a PopDist job: IPU TensorFlow's
    ``tensorflow.python.ipu.distributed.popdist_strategy.PopDistStrategy`` (SDK 3.x; older SDKs:
    ``ipu.horovod.popdist_strategy`` and ``ipu.horovod.ipu_multi_replica_strategy``'s
    ``IPUMultiReplicaStrategy``).

    Each instance (one process of ``ipusim run --instances``, as ``poprun`` starts them, see
    :mod:`ipusim.compat.poprun`) runs its local replicas; the strategy makes the simulation see
    every instance (as ``process_count``), so the report times the whole job: gradients reduced
    over all replicas across the IPU-Links and GW-Links, each instance feeding its replicas from
    its share of the host. Each instance computes its own replicas' numbers; a Keras training
    step's gradients are averaged over every replica of the job, the instances exchanging their
    replicas' arrays (:mod:`ipusim.session.exchange`), so their weights stay identical; custom
    loops' ``CrossReplicaOptimizer`` updates likewise. Other in-graph collectives and host-side
    Horovod collectives stay within an instance.

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
            raise UnsupportedError(
                "PopDistStrategy(add_ipu_cross_replica_reductions=False): reductions on the "
                "hosts are not simulated; keep the default True."
            )
        from ipusim.compat import popdist

        popdist.init()
        super().__init__(
            ipu_device=ipu_device,
            enable_dataset_iterators=enable_dataset_iterators,
            enable_keras_extensions=enable_keras_extensions,
        )
        self.worker_count = popdist.getNumInstances()

    def update_ipu_config(self, config: Any) -> Any:
        """Set the multi-replica distribution options of ``config`` (instances, this instance)
        and return it."""
        from ipusim.compat import popdist

        distribution = config.experimental.multi_replica_distribution
        distribution.process_count = popdist.getNumInstances()
        distribution.process_index = popdist.getInstanceIndex()
        return config

    def __repr__(self) -> str:
        return f"PopDistStrategy(instances={self.worker_count}, ipu_device={self.ipu_device!r})"


#: SDK 2.x's name (``tensorflow.python.ipu.horovod.ipu_multi_replica_strategy``).
IPUMultiReplicaStrategy = PopDistStrategy


def _cluster_spec(resolver: Any) -> tuple[dict[str, Any], int]:
    """The cluster specification (job -> task addresses) and this task's index."""
    if resolver is None:
        parsed = tf_config()
        if parsed is None:
            return {"worker": ["localhost"]}, 0
        return dict(parsed.get("cluster", {})), int(parsed.get("task", {}).get("index", 0))
    if hasattr(resolver, "cluster_spec"):
        spec = resolver.cluster_spec()
        spec = spec.as_dict() if hasattr(spec, "as_dict") else spec
        return dict(spec), int(getattr(resolver, "task_id", 0) or 0)
    if isinstance(resolver, dict):
        return dict(resolver), 0
    raise ConfigurationError(
        "IPUMultiWorkerStrategy: `cluster_resolver` must be a cluster resolver (with "
        "cluster_spec()), a dict of job -> addresses, or None to read TF_CONFIG; received "
        f"{type(resolver).__name__}."
    )
