"""What a run's configuration says about the host, its link, the planner and the engine."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ipusim.cost.compute import PlannerOptions
from ipusim.cost.units import seconds_to_ps
from ipusim.engine import HostLink, HostOptions
from ipusim.engine.options import OUTFEED_MODES
from ipusim.engine.recorder import DEFAULT_RECORD_BUDGET
from ipusim.errors import ConfigurationError
from ipusim.lowering import Program
from ipusim.lowering.distribution import DistributionSpec

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
    source: Any = field(default=None, compare=False)
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


def _settings(config: Any) -> Any:
    return config.ipusim if config is not None else None


def io_tiles(config: Any) -> int:
    """I/O tiles of the configuration (``IPUConfig.io_tiles.num_io_tiles``)."""
    return int(config.io_tiles.num_io_tiles) if config is not None else 0


def process_count(config: Any) -> int:
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
    num_ipus: int, device_mapping: Any = None, what: str = "The model", config: Any = None
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

    if config is None:
        from ipusim import config as config_module

        config = config_module.active_config()
    processes = process_count(config)
    if processes > 1:
        what = f"{what} (with {processes} processes, each with {num_ipus} local IPUs)"
    return shards.replication_factor(num_ipus, device_mapping, what) * processes


#: Set in each instance process ``ipusim run --instances`` starts (as ``poprun`` sets it).
INSTANCE_ENVIRONMENT = "POPDIST_NUM_LOCAL_REPLICAS"


def local_replicas(replicas: int, config: Any = None) -> int:
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


def _active_config() -> Any:
    from ipusim import config as config_module

    return config_module.active_config()


def host_cpu_per_process(system: Any, processes: int) -> Any:
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


def input_seconds_per_sample(
    config: Any, system: Any, feeds: FeedOptions, replicas: int = 1
) -> float:
    """Host time per sample of one replica's input: the user's ``host_dataset_rate`` when given,
    else the modelled cost of what the run was fed (its Dataset's transformations, or Keras'
    adapter for arrays) on the preset's host; 0 when unlimited or unknown.

    One host process pulls every element of its replicas on one infeed thread (graphcore/tensorflow
    ``LaunchInfeedThreads``), so a process feeding R replicas takes R times as long per step.
    With P processes (:func:`process_count`) each feeds ``replicas / P`` replicas with its own
    infeed thread and input pipeline, on its share of the host's cores
    (:func:`host_cpu_per_process`). ``replicas`` is the global replication factor.
    """
    settings = _settings(config)
    rate = settings.host_dataset_rate if settings is not None else math.inf
    if rate > 0:
        per_sample = 0.0 if math.isinf(rate) else 1.0 / rate
    processes = process_count(config)
    if rate <= 0:
        from ipusim.data import host_cost

        cpu = host_cpu_per_process(system, processes)
        per_sample = (
            host_cost.input_seconds_per_sample(feeds.source, feeds.source_batch, cpu) or 0.0
        )
    return per_sample * max(1, replicas // processes)


def host_options(
    config: Any,
    system: Any,
    feeds: FeedOptions,
    schedule: str | None = None,
    replicas: int = 1,
) -> HostOptions:
    """Host behaviour from the IPUConfig's ``ipusim`` category and the step's feeds.

    Infeed copies overlap compute only with I/O tiles (``io_tiles.num_io_tiles`` > 0), and then
    only for single-IPU programs and Grouped pipelines, as IPU TensorFlow documents. Otherwise
    the IPU copies each element itself: from the staging buffers near it when the infeed is
    multi-buffered (``prefetch_depth`` >= 2, IPU TensorFlow's default of 3), from the host
    otherwise.

    Args:
        config / system: the IPUConfig (or None) and the SystemSpec.
        feeds: the step's queues, callbacks and input.
        schedule: the pipeline schedule of a pipelined step (None: a single IPU).
        replicas: replicas the host feeds.
    """
    settings = _settings(config)
    overhead_s = settings.host_overhead_s if settings is not None else -1.0
    if overhead_s < 0:
        overhead_s = system.host.per_execution_overhead_s
    callback_s = settings.host_callback_s if settings is not None and feeds.callbacks else 0.0
    depth = int(feeds.prefetch_depth or DEFAULT_PREFETCH_DEPTH)
    if io_tiles(config) > 0 and schedule in (None, "grouped"):
        mode = "overlapped"
    else:
        mode = "staged" if depth >= 2 else "direct"
    return HostOptions(
        sample_ps=seconds_to_ps(input_seconds_per_sample(config, system, feeds, replicas)),
        per_execution_overhead_ps=seconds_to_ps(overhead_s),
        # One host thread dequeues the outfeed of every replica of its process.
        outfeed_drain_ps=seconds_to_ps(
            settings.host_outfeed_drain_s * local_replicas_of(config, replicas)
        )
        if settings
        else 0,
        callback_ps=seconds_to_ps(callback_s),
        prefetch_depth=depth,
        buffer_depth=int(feeds.buffer_depth or DEFAULT_BUFFER_DEPTH),
        outfeed_mode=feeds.outfeed_mode,
        asynchronous_callbacks=feeds.asynchronous_callbacks,
        infeed=mode,
        host_queue_depth=HOST_INFEED_QUEUE + depth,
    )


def local_replicas_of(config: Any, replicas: int) -> int:
    """Replicas one host process feeds: ``replicas`` (global) over :func:`process_count`."""
    processes = process_count(config) if config is not None else 1
    return max(1, -(-int(replicas) // max(processes, 1)))


def stream_callback_threads(config: Any, system: Any) -> int:
    """Threads one host process makes its replicas' host-side stream copies on.

    Poplar's engine options (``POPLAR_ENGINE_OPTIONS``, as IPU TensorFlow and PopTorch pass
    them) say it: ``streamCallbacks.multiThreadMode`` "collaborative" or "dedicated" with
    ``streamCallbacks.numWorkerThreads`` N uses N threads; "auto", or no option, is taken as
    one thread per core of the process's share of the host (E: Graphcore's examples set
    "collaborative" / "auto" for replicated runs, "to speed up the throughput for multiple
    replicas"). Mode "none" (or "singleThread") uses one thread.
    """
    import json
    import os

    cores = host_cpu_per_process(system, process_count(config) if config else 1).cores
    try:
        options = json.loads(os.environ.get("POPLAR_ENGINE_OPTIONS", "") or "{}")
    except ValueError:
        return cores
    mode = str(options.get("streamCallbacks.multiThreadMode", "auto"))
    threads = str(options.get("streamCallbacks.numWorkerThreads", "auto"))
    if mode in ("none", "singleThread"):
        return 1
    if threads.isdigit() and int(threads) > 0:
        return int(threads)
    return cores


def host_link(system: Any, program: Program | None = None, config: Any = None) -> HostLink:
    """The host link of replica 0's input IPU.

    Two resources are shared. The chassis NIC is shared by every replica on the chassis
    streaming at the same time (they are identical, so each gets an equal share). The host side
    of the stream copies (copying each replica's element into Poplar's stream buffers, at the
    preset's ``stream_bandwidth`` per copy thread) belongs to the host *process*: its
    :func:`stream_callback_threads` serve all the replicas it feeds, as IPU TensorFlow's
    replicated infeed and PopTorch's replicated data loader do, so each of its L local replicas
    gets ``threads / L`` of it (at most all of it).
    """
    host = system.host
    share, stream = 1, host.stream_bandwidth_bytes_per_s
    if program is not None and program.replicas > 1:
        per_replica = max(program.ipus_per_replica, 1)
        on_chassis = max(1, system.ipus_per_chassis // per_replica)
        share = max(1, min(host.shared_by_ipus, on_chassis, program.replicas))
        local = local_replicas_of(config, program.replicas)
        stream *= min(1.0, stream_callback_threads(config, system) / local)
    return HostLink(
        min(host.h2d_bandwidth_bytes_per_s / share, stream),
        min(host.d2h_bandwidth_bytes_per_s / share, stream),
        seconds_to_ps(host.latency_s),
        seconds_to_ps(host.stream_copy_overhead_s),
        host.ipu_port_bandwidth_bytes_per_s,
    )


def planner_options(config: Any) -> PlannerOptions:
    """The PopLibs options of matmuls and convolutions from the IPUConfig."""
    if config is None:
        return PlannerOptions()
    return PlannerOptions.from_poplar_options(
        config.convolutions.poplar_options, config.matmuls.poplar_options
    )


def pipeline_distribution(options: Any, replicas: int, config: Any) -> DistributionSpec:
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


def with_norms(spec: DistributionSpec, config: Any) -> DistributionSpec:
    """``spec`` with the IPUConfig's batch-norm options:
    ``norms.experimental.distributed_batch_norm_replica_group_size`` and
    ``norms.use_stable_statistics``."""
    if config is None:
        return spec
    return replace(
        spec,
        batch_norm_group=int(config.norms.experimental.distributed_batch_norm_replica_group_size),
        stable_norm_statistics=bool(config.norms.use_stable_statistics),
    )


def remote_buffers(config: Any) -> bool:
    """Whether the device offers remote buffers (Streaming Memory) to the program."""
    if config is None:
        return True
    return (
        config.device_connection.type.name == "ALWAYS"
        or config.device_connection.enable_remote_buffers
    )


def precision(config: Any) -> str:
    """The run's arithmetic (``IPUConfig.ipusim.precision``; fp32 by default)."""
    settings = _settings(config)
    return settings.precision if settings is not None else "fp32"


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


def engine_settings(config: Any) -> EngineSettings:
    """``IPUConfig.ipusim.engine``, ``trace_detail`` and ``trace_records`` (``trace_detail``
    "full" within :func:`full_trace`)."""
    settings = _settings(config)
    found = (
        EngineSettings()
        if settings is None
        else EngineSettings(settings.engine, settings.trace_detail, settings.trace_records)
    )
    return replace(found, detail="full") if _FULL_TRACE.get() else found


def environment() -> tuple[Any, Any]:
    """The active IPUConfig (or None) and the SystemSpec to simulate (one GC200 by default)."""
    from ipusim import config as config_module

    config = config_module.active_config()
    system = config_module.active_system()
    if system is None:
        from ipusim.hardware import load_system
        from ipusim.hardware.hosts import with_host

        system = with_host(load_system(None))
    return config, system
