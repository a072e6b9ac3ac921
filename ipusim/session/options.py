"""What a run's configuration says about the host, its link, the planner and the engine."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ipusim.engine import HostLink, HostOptions
from ipusim.engine.options import OUTFEED_MODES
from ipusim.engine.recorder import DEFAULT_RECORD_BUDGET
from ipusim.errors import ConfigurationError
from ipusim.lowering import Program
from ipusim.lowering.distribution import DistributionSpec

if TYPE_CHECKING:
    from ipusim.config import IPUConfig
    from ipusim.data.host_cost import HostCPU
    from ipusim.hardware.specs import SystemSpec
    from ipusim.pipelining import PipelineOptions

#: IPU TensorFlow's default depths of the infeed's and the outfeed's device buffers
#: (``IPUInfeedQueue(prefetch_depth=None)`` -> 3, ``IPUOutfeedQueue(buffer_depth=3)``).
DEFAULT_PREFETCH_DEPTH = 3
DEFAULT_BUFFER_DEPTH = 3

#: Elements the infeed's host I/O thread may queue ahead of the device (graphcore/tensorflow
#: ``infeed_iterator.h``: a single-producer, single-consumer queue of 32 per replica).
HOST_INFEED_QUEUE = 32


@dataclass(frozen=True)
class FeedOptions:
    """How the step meets the host: its queues and callbacks.

    Attributes:
        prefetch_depth: infeed elements that may wait on the device (``IPUInfeedQueue``;
            None: IPU TensorFlow's default of 3).
        buffer_depth: outfeed elements that may wait for the host (``IPUOutfeedQueue``;
            None: 3).
        outfeed_mode: ``"all"`` (every element is drained) or ``"last"`` (only the latest is
            kept; the IPU never waits).
        asynchronous_callbacks: Keras callbacks fed per step from the outfeed, not once per
            execution.
        callbacks: whether the host runs callbacks at all (Keras: yes; custom loops: no).
        source / source_batch: what the host's input pipeline feeds (a Dataset, or arrays for
            Keras' adapter) and its batch size, for the modelled input cost
            (``ipusim.data.host_cost``); None when unknown (then the input is not limited).
    """

    prefetch_depth: int | None = None
    buffer_depth: int | None = None
    outfeed_mode: str = "all"
    asynchronous_callbacks: bool = False
    callbacks: bool = True
    source: object = field(default=None, compare=False)
    source_batch: int | None = None

    def __post_init__(self) -> None:
        if self.outfeed_mode not in OUTFEED_MODES:
            raise ConfigurationError(
                f"outfeed_mode must be one of {OUTFEED_MODES}, received {self.outfeed_mode!r}"
            )


@dataclass(frozen=True)
class EngineSettings:
    """Which engine runs and what the trace keeps (``IPUConfig.ipusim``)."""

    engine: str = "auto"
    detail: str = "auto"
    record_budget: int = DEFAULT_RECORD_BUDGET


def process_count(config: IPUConfig | None) -> int:
    """Host processes (instances) running the replicas of one program: IPU TensorFlow's
    ``experimental.multi_replica_distribution.process_count`` when set, else the workers of an
    active :class:`~ipusim.strategy.IPUMultiWorkerStrategy`, else 1.

    Raises:
        ConfigurationError: both are set and disagree.
    """
    from ipusim._scope import current_strategy

    count = int(config.experimental.multi_replica_distribution.process_count) if config else 0
    workers = int(getattr(current_strategy(), "worker_count", 0) or 0)
    if count > 0 and workers and workers != count:
        raise ConfigurationError(
            f"IPUConfig.experimental.multi_replica_distribution.process_count is {count} but the "
            f"active IPUMultiWorkerStrategy has {workers} workers; they must agree (one process "
            "per worker). Set process_count to the number of workers, or leave it 0."
        )
    return count if count > 0 else max(workers, 1)


def replication_factor(
    num_ipus: int,
    device_mapping: Sequence[int] | None = None,
    what: str = "The model",
    config: IPUConfig | None = None,
) -> int:
    """The global replication factor: IPU TensorFlow's rule for the local device
    (:func:`ipusim.lowering.shards.replication_factor`: ``num_ipus`` is ``auto_select_ipus``, the
    IPUs of one process) times :func:`process_count` ("Global replication = local replication x
    process_count"). ``config`` defaults to the active IPUConfig.

    Raises:
        PipelineConfigurationError: the local IPU count is not a multiple of the IPUs one
            replica occupies.
    """
    from ipusim.lowering import shards

    processes = process_count(config if config is not None else _active_config())
    if processes > 1:
        what = f"{what} (with {processes} processes, each with {num_ipus} local IPUs)"
    return shards.replication_factor(num_ipus, device_mapping, what) * processes


#: Set in each instance process ``ipusim run --instances`` starts (as ``poprun`` sets it).
INSTANCE_ENVIRONMENT = "POPDIST_NUM_LOCAL_REPLICAS"


def local_replicas(replicas: int, config: IPUConfig | None = None) -> int:
    """The replicas whose data and numbers this host process runs, of ``replicas`` (global).

    One process simulates the whole job (``IPUMultiWorkerStrategy``, or ``process_count`` set in
    a plain script): it runs every replica. A process started by ``ipusim run --instances`` (as
    ``poprun`` starts them: :data:`INSTANCE_ENVIRONMENT` is set) is one of
    :func:`process_count` instances and runs its share; the simulation still times the whole
    job's ``replicas``.
    """
    import os

    processes = process_count(config if config is not None else _active_config())
    if INSTANCE_ENVIRONMENT not in os.environ or processes <= 1:
        return replicas
    return max(replicas // processes, 1)


def _active_config() -> IPUConfig | None:
    from ipusim import config as config_module

    return config_module.active_config()


def host_cpu_per_process(system: SystemSpec, processes: int) -> HostCPU:
    """The host CPU one process's input pipeline gets when ``processes`` processes share the
    system's host server: an equal share of its cores; past one core each, the processes
    time-share the cores, so their work takes ``processes / cores`` times as long (D)."""
    from ipusim.data.host_cost import HostCPU

    host = system.host
    processes = max(int(processes), 1)
    slowdown = max(1.0, processes / host.cpu_cores)
    return HostCPU(
        max(1, host.cpu_cores // processes),
        host.cpu_compute_scale * slowdown,
        host.cpu_call_scale * slowdown,
    )


def host_options(
    config: IPUConfig | None,
    system: SystemSpec,
    feeds: FeedOptions,
    schedule: str | None = None,
    replicas: int = 1,
) -> HostOptions:
    """Host behaviour of ``config`` on ``system``
    (:meth:`~ipusim.session.plan.SessionPlan.host_options`)."""
    from ipusim.session.plan import resolve_plan

    return resolve_plan(config, system).host_options(feeds, schedule, replicas)


def host_link(
    system: SystemSpec, program: Program | None = None, config: IPUConfig | None = None
) -> HostLink:
    """The host link of replica 0's input IPU
    (:meth:`~ipusim.session.plan.SessionPlan.host_link`)."""
    from ipusim.session.plan import resolve_plan

    return resolve_plan(config, system).host_link(program)


def pipeline_distribution(
    options: PipelineOptions, replicas: int, config: IPUConfig | None
) -> DistributionSpec:
    """Replication and offloading of a pipelined step from its
    :class:`~ipusim.pipelining.PipelineOptions` (what both front ends' pipeline options say)
    and the device's remote buffers."""
    return DistributionSpec(
        replicas=replicas,
        offload_optimizer_state=options.offload_weight_update_variables,
        replicated_optimizer_state_sharding=bool(options.replicated_optimizer_state_sharding),
        offload_activations=bool(options.offload_activations),
        offload_gradient_accumulation_buffers=bool(options.offload_gradient_accumulation_buffers),
        replicated_weight_sharding=bool(
            options.replicated_weight_sharding or options.offload_weights
        ),
        remote_buffers=remote_buffers(config),
    )


def remote_buffers(config: IPUConfig | None) -> bool:
    """Whether the device offers remote buffers (Streaming Memory) to the program."""
    if config is None:
        return True
    return bool(
        config.device_connection.type.name == "ALWAYS"
        or config.device_connection.enable_remote_buffers
    )


#: Set within :func:`full_trace`: the runs simulated there keep every record.
_FULL_TRACE: contextvars.ContextVar[bool] = contextvars.ContextVar("full_trace", default=False)


@contextlib.contextmanager
def full_trace() -> Iterator[None]:
    """Within the block, simulations keep every record whatever ``trace_detail`` says (a serving
    export reads each request's latency from the records of its one execution)."""
    token = _FULL_TRACE.set(True)
    try:
        yield
    finally:
        _FULL_TRACE.reset(token)


def configured_engine(config: IPUConfig | None) -> EngineSettings:
    """``IPUConfig.ipusim.engine``, ``trace_detail`` and ``trace_records``."""
    if config is None:
        return EngineSettings()
    settings = config.ipusim
    return EngineSettings(
        str(settings.engine), str(settings.trace_detail), int(settings.trace_records)
    )


def traced(settings: EngineSettings) -> EngineSettings:
    """``settings`` with ``trace_detail`` "full" within :func:`full_trace`."""
    return replace(settings, detail="full") if _FULL_TRACE.get() else settings


def engine_settings(config: IPUConfig | None) -> EngineSettings:
    """:func:`configured_engine` (``trace_detail`` "full" within :func:`full_trace`)."""
    return traced(configured_engine(config))


def environment() -> tuple[IPUConfig | None, SystemSpec]:
    """The active IPUConfig (or None) and the SystemSpec to simulate (one GC200 by default)."""
    from ipusim import config as config_module

    system = config_module.active_system()
    if system is None:
        from ipusim.hardware import load_system
        from ipusim.hardware.hosts import with_host

        system = with_host(load_system(None))
    return config_module.active_config(), system
