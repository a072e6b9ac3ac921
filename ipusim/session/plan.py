"""The session's run plan: what an IPUConfig and a system say about a run, resolved once.

:func:`resolve_plan` reads the IPUConfig (or None: IPU TensorFlow's defaults) and the
:class:`~ipusim.hardware.specs.SystemSpec` once, when a step is lowered; lowering, the host's
behaviour, its link and the engine's settings are then computed from the typed
:class:`SessionPlan`, not from the configuration tree.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ipusim.cost.compute import PlannerOptions
from ipusim.cost.units import seconds_to_ps
from ipusim.engine import HostLink, HostOptions
from ipusim.errors import ConfigurationError
from ipusim.hardware.specs import SystemSpec
from ipusim.lowering import Program, StepDescription
from ipusim.lowering.distribution import DistributionSpec
from ipusim.session.options import (
    DEFAULT_BUFFER_DEPTH,
    DEFAULT_PREFETCH_DEPTH,
    HOST_INFEED_QUEUE,
    EngineSettings,
    FeedOptions,
    configured_engine,
    host_cpu_per_process,
    process_count,
)

if TYPE_CHECKING:
    from ipusim.config import IPUConfig

__all__ = [
    "HostSettings",
    "SessionPlan",
    "reserved_io_tiles",
    "resolve_plan",
]

#: Most I/O tiles per IPU IPU TensorFlow accepts (S: graphcore/tensorflow
#: ``poplar_compiler.cc`` ``GetNumIoTiles``, ``kNumIoTilesMaxValue``).
MAX_IO_TILES = 192


@dataclass(frozen=True)
class HostSettings:
    """The host figures of ``IPUConfig.ipusim`` (seconds, samples/s).

    Attributes:
        dataset_rate: the user's ``host_dataset_rate`` (0: model the input pipeline; None: no
            IPUConfig, the input is not limited).
        overhead_s: per-execution host overhead (negative: the system's own).
        outfeed_drain_s: host time to take one element off the outfeed, per local replica.
        callback_s: host time of one callback.
        preset: the host preset (``ipusim.host``; "": the system's default).
    """

    dataset_rate: float | None = None
    overhead_s: float = -1.0
    outfeed_drain_s: float = 0.0
    callback_s: float = 0.0
    preset: str = ""


@dataclass(frozen=True)
class SessionPlan:
    """Everything a run needs from its IPUConfig and system, resolved once.

    Attributes:
        config: the IPUConfig (None: none configured), kept for re-lowering with a change.
        system: the system simulated.
        precision: ``"fp32"``, ``"fp16.16"`` or ``"fp16.32"``.
        planner: PopLibs options of matmuls and convolutions.
        recompute: ``allow_recompute``.
        io_tiles: I/O tiles per IPU with host I/O (every IPU of an unpipelined replica, a
            pipeline's ``PipelineSpec.io_ipus``): ``io_tiles.num_io_tiles`` as configured, then,
            once a step is known (:meth:`for_step`), the tiles IPU TensorFlow reserves for it
            (rounded up to even; 0 when its stream buffers do not fit on them).
        io_memory_proportion: ``io_tiles.available_memory_proportion``.
        io_ops_placed: ``io_tiles.place_ops_on_io_tiles``: the stream copies run on the I/O
            tiles (and so overlap compute). Without it the tiles are reserved but idle, as in
            IPU TensorFlow, whose examples set both options together.
        processes: host processes running the replicas (``process_count``).
        feeding_processes: the processes sharing out the replicas' outfeed drains and stream
            copies (1 without an IPUConfig).
        batch_norm_group / stable_norm_statistics: the ``norms`` options (None: no IPUConfig,
            the distribution's own).
        host: the host figures.
        engine: which engine runs and what the trace keeps.
    """

    config: IPUConfig | None
    system: SystemSpec
    precision: str
    planner: PlannerOptions
    recompute: bool
    io_tiles: int
    processes: int
    feeding_processes: int
    batch_norm_group: int | None
    stable_norm_statistics: bool
    host: HostSettings
    engine: EngineSettings
    io_memory_proportion: float = 0.9
    io_ops_placed: bool = False

    def with_system(self, system: SystemSpec) -> SessionPlan:
        """The same configuration on ``system`` (another host preset, say), with the I/O
        tiles already settled for its step."""
        return replace(resolve_plan(self.config, system), io_tiles=self.io_tiles)

    def for_step(self, step: StepDescription) -> SessionPlan:
        """This plan with the I/O tiles IPU TensorFlow reserves for ``step``.

        The stream buffers of a step (one infeed and one outfeed element) go on the I/O tiles
        only if they take less than ``available_memory_proportion`` of the I/O tiles' memory;
        otherwise nothing is placed there and the tiles go back to the compute graph (S:
        graphcore/tensorflow ``passes/io_tiles_placer.cc``, ``GetMaxLiveBytes`` against
        ``GetMaxAvailableIoBytes``, then ``UpdateNumIoTiles``), which IPU TensorFlow only logs:
        ipusim warns, and the infeed no longer overlaps compute.
        """
        if self.io_tiles == 0:
            return self
        reserved = reserved_io_tiles(self.io_tiles, self.system.ipu.tiles)
        if not self.io_ops_placed:  # S: io_tiles_placer.cc, Run returns at once when disabled
            return replace(self, io_tiles=reserved)
        buffers = step.infeed_bytes + step.outfeed_bytes
        per_tile = self.system.ipu.sram_bytes_per_tile
        available = int(reserved * per_tile * self.io_memory_proportion)
        if buffers < available:
            return replace(self, io_tiles=reserved)
        warnings.warn(
            f"The step's stream buffers ({buffers} bytes: one infeed and one outfeed element) "
            f"do not fit on the {reserved} I/O tiles ({available} bytes at "
            f"io_tiles.available_memory_proportion = {self.io_memory_proportion}), so, as in "
            "IPU TensorFlow, nothing is placed on them: the tiles stay with the compute graph "
            "and the infeed does not overlap compute. Raise io_tiles.num_io_tiles or "
            "io_tiles.available_memory_proportion to use them.",
            UserWarning,
            stacklevel=2,
        )
        return replace(self, io_tiles=0)

    def distribution(self, spec: DistributionSpec) -> DistributionSpec:
        """``spec`` with the IPUConfig's batch-norm options."""
        if self.batch_norm_group is None:
            return spec
        return replace(
            spec,
            batch_norm_group=self.batch_norm_group,
            stable_norm_statistics=self.stable_norm_statistics,
        )

    def local_replicas(self, replicas: int) -> int:
        """Replicas one host process feeds: ``replicas`` (global) over the processes."""
        return max(1, -(-int(replicas) // max(self.feeding_processes, 1)))

    def input_seconds_per_sample(self, feeds: FeedOptions, replicas: int = 1) -> float:
        """Host time per sample of one replica's input: the user's ``host_dataset_rate`` when
        given, else the modelled cost of what the run was fed (its Dataset's transformations,
        or Keras' adapter for arrays) on the preset's host; 0 when unlimited or unknown.

        One host process pulls every element of its replicas on one infeed thread
        (graphcore/tensorflow ``LaunchInfeedThreads``), so a process feeding R replicas takes R
        times as long per step. With P processes each feeds ``replicas / P`` replicas with its
        own infeed thread and input pipeline, on its share of the host's cores
        (:func:`~ipusim.session.options.host_cpu_per_process`). ``replicas`` is global.
        """
        rate = math.inf if self.host.dataset_rate is None else self.host.dataset_rate
        if rate > 0:
            per_sample = 0.0 if math.isinf(rate) else 1.0 / rate
        else:
            from ipusim.data import host_cost

            cpu = host_cpu_per_process(self.system, self.processes)
            modelled = host_cost.input_seconds_per_sample(feeds.source, feeds.source_batch, cpu)
            per_sample = modelled or 0.0
        return per_sample * max(1, replicas // self.processes)

    def host_options(
        self, feeds: FeedOptions, schedule: str | None = None, replicas: int = 1
    ) -> HostOptions:
        """Host behaviour from the ``ipusim`` figures and the step's feeds.

        Infeed copies overlap compute only with I/O tiles, and then only for single-IPU
        programs and Grouped pipelines, as IPU TensorFlow documents. Otherwise the IPU copies
        each element itself: from the staging buffers near it when the infeed is
        multi-buffered (``prefetch_depth`` >= 2, IPU TensorFlow's default of 3), from the host
        otherwise.

        Args:
            feeds: the step's queues, callbacks and input.
            schedule: the pipeline schedule of a pipelined step (None: a single IPU).
            replicas: replicas the host feeds.
        """
        host = self.host
        overhead_s = host.overhead_s
        if overhead_s < 0:
            overhead_s = self.system.host.per_execution_overhead_s
        depth = int(feeds.prefetch_depth or DEFAULT_PREFETCH_DEPTH)
        if self.io_tiles > 0 and self.io_ops_placed and schedule in (None, "grouped"):
            mode = "overlapped"
        else:
            mode = "staged" if depth >= 2 else "direct"
        return HostOptions(
            sample_ps=seconds_to_ps(self.input_seconds_per_sample(feeds, replicas)),
            per_execution_overhead_ps=seconds_to_ps(overhead_s),
            # One host thread dequeues the outfeed of every replica of its process.
            outfeed_drain_ps=seconds_to_ps(host.outfeed_drain_s * self.local_replicas(replicas)),
            callback_ps=seconds_to_ps(host.callback_s if feeds.callbacks else 0.0),
            prefetch_depth=depth,
            buffer_depth=int(feeds.buffer_depth or DEFAULT_BUFFER_DEPTH),
            outfeed_mode=feeds.outfeed_mode,
            asynchronous_callbacks=feeds.asynchronous_callbacks,
            infeed=mode,
            host_queue_depth=HOST_INFEED_QUEUE + depth,
        )

    def host_link(self, program: Program | None = None) -> HostLink:
        """The host link of replica 0's input IPU.

        Two resources are shared. The chassis NIC is shared by every replica on the chassis
        streaming at the same time (they are identical, so each gets an equal share). The host
        side of the stream copies (copying each replica's element into Poplar's stream buffers,
        at the preset's ``stream_bandwidth`` per copy thread) belongs to the host *process*: its
        :func:`stream_callback_threads` serve all the replicas it feeds, as IPU TensorFlow's replicated
        infeed and PopTorch's replicated data loader do, so each of its L local replicas gets
        ``threads / L`` of it (at most all of it).
        """
        system = self.system
        host = system.host
        share, stream = 1, host.stream_bandwidth_bytes_per_s
        if program is not None and program.replicas > 1:
            per_replica = max(program.ipus_per_replica, 1)
            on_chassis = max(1, system.ipus_per_chassis // per_replica)
            share = max(1, min(host.shared_by_ipus, on_chassis, program.replicas))
            threads = stream_callback_threads(system, self.feeding_processes)
            stream *= min(1.0, threads / self.local_replicas(program.replicas))
        return HostLink(
            min(host.h2d_bandwidth_bytes_per_s / share, stream),
            min(host.d2h_bandwidth_bytes_per_s / share, stream),
            seconds_to_ps(host.latency_s),
            seconds_to_ps(host.stream_copy_overhead_s),
            host.ipu_port_bandwidth_bytes_per_s,
        )


def reserved_io_tiles(requested: int, tiles: int) -> int:
    """The I/O tiles per IPU IPU TensorFlow reserves for ``io_tiles.num_io_tiles = requested``
    on an IPU of ``tiles`` tiles: rounded up to an even count (S: graphcore/tensorflow
    ``poplar_compiler.cc`` ``GetNumIoTiles``; tiles come in pairs).

    Raises:
        ConfigurationError: more than :data:`MAX_IO_TILES`, or no tile left for compute.
    """
    if requested > MAX_IO_TILES:
        raise ConfigurationError(
            f"io_tiles.num_io_tiles must be in the range [0, {MAX_IO_TILES}] (IPU TensorFlow's "
            f"limit), received {requested}. Reserve fewer I/O tiles."
        )
    reserved = requested + requested % 2
    if reserved >= tiles:
        raise ConfigurationError(
            f"io_tiles.num_io_tiles = {requested} reserves {reserved} of the IPU's {tiles} "
            "tiles, leaving none for compute. Reserve fewer I/O tiles (or more "
            "ipu_model.tiles_per_ipu)."
        )
    return reserved


def stream_callback_threads(system: SystemSpec, processes: int) -> int:
    """Threads one host process makes its replicas' host-side stream copies on.

    Poplar's engine options (``POPLAR_ENGINE_OPTIONS``, as IPU TensorFlow and PopTorch pass
    them) say it: ``streamCallbacks.multiThreadMode`` "collaborative" or "dedicated" with
    ``streamCallbacks.numWorkerThreads`` N uses N threads; "auto", or no option, is taken as
    one thread per core of the process's share of the host (E: Graphcore's examples set
    "collaborative" / "auto" for replicated runs, "to speed up the throughput for multiple
    replicas"). Mode "none" (or "singleThread") uses one thread.
    """
    cores = host_cpu_per_process(system, processes).cores
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


def resolve_plan(config: IPUConfig | None, system: SystemSpec) -> SessionPlan:
    """The :class:`SessionPlan` of ``config`` (None: IPU TensorFlow's defaults) on ``system``.

    Raises:
        ConfigurationError: the configured process count and the active strategy's workers
            disagree.
    """
    processes = process_count(config)
    if config is None:
        return SessionPlan(
            config=None,
            system=system,
            precision="fp32",
            planner=PlannerOptions(),
            recompute=False,
            io_tiles=0,
            processes=processes,
            feeding_processes=1,
            batch_norm_group=None,
            stable_norm_statistics=False,
            host=HostSettings(),
            engine=configured_engine(None),
        )
    settings, io, norms = config.ipusim, config.io_tiles, config.norms
    return SessionPlan(
        config=config,
        system=system,
        precision=str(settings.precision),
        planner=PlannerOptions.from_poplar_options(
            config.convolutions.poplar_options, config.matmuls.poplar_options
        ),
        recompute=bool(config.allow_recompute),
        io_tiles=int(io.num_io_tiles),
        io_memory_proportion=float(io.available_memory_proportion),
        io_ops_placed=bool(io.place_ops_on_io_tiles),
        processes=processes,
        feeding_processes=processes,
        batch_norm_group=int(norms.experimental.distributed_batch_norm_replica_group_size),
        stable_norm_statistics=bool(norms.use_stable_statistics),
        host=HostSettings(
            float(settings.host_dataset_rate),
            float(settings.host_overhead_s),
            float(settings.host_outfeed_drain_s),
            float(settings.host_callback_s),
            str(settings.host),
        ),
        engine=configured_engine(config),
    )
