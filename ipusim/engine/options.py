"""What the engine needs besides the program: host behaviour, links, and the shape of the run."""

from __future__ import annotations

from dataclasses import dataclass

from ipusim.errors import ConfigurationError

OUTFEED_MODES = ("all", "last")
INFEED_MODES = ("overlapped", "staged", "direct")


@dataclass(frozen=True)
class HostOptions:
    """Host-side behaviour of a run (times in picoseconds).

    Attributes:
        sample_ps: host time to produce one sample (0 = unlimited dataset rate).
        per_execution_overhead_ps: fixed host cost before each execution is launched.
        outfeed_drain_ps: host time to take one element off the outfeed.
        callback_ps: host time of one callback invocation.
        prefetch_depth: infeed elements that may wait on the device side (IPUInfeedQueue).
        buffer_depth: outfeed elements that may wait for the host (IPUOutfeedQueue).
        outfeed_mode: ``"all"`` (every element is kept and drained) or ``"last"`` (only the latest
            element is kept; the IPU never waits).
        asynchronous_callbacks: per-step callbacks fed by polling the outfeed, instead of once
            per execution.
        infeed: how elements reach the IPU.
            ``"overlapped"``: a host copier moves each element over the host link into one of
            ``prefetch_depth`` device-side slots while the IPU computes; the IPU only takes it (I/O
            tiles: ``IPUConfig.io_tiles.num_io_tiles`` > 0 and the step's stream buffers fit on
            them, single-IPU or Grouped programs; the IPUs with host I/O were lowered on the
            other tiles, ``ipusim.lowering.PipelineSpec.io_ipus``).
            ``"staged"``: the copier stages elements near the IPU (Poplar's multi-buffered
            streams, ``prefetch_depth`` >= 2, which may sit in the IPU-Machine's DRAM) while the
            IPU computes; the IPU then copies each from there itself, between its compute sets,
            at the IPU's port bandwidth (IPU TensorFlow's default).
            ``"direct"``: no staging (``prefetch_depth`` 1): the IPU copies each element from the
            host over the host link itself.
        host_queue_depth: elements the host pipeline may produce ahead of the infeed copies
            (the infeed's host-side queue and Poplar's stream buffers).
    """

    sample_ps: int = 0
    per_execution_overhead_ps: int = 0
    outfeed_drain_ps: int = 0
    callback_ps: int = 0
    prefetch_depth: int = 1
    buffer_depth: int = 1
    outfeed_mode: str = "all"
    asynchronous_callbacks: bool = False
    infeed: str = "overlapped"
    host_queue_depth: int = 2

    def __post_init__(self) -> None:
        times = ("sample_ps", "per_execution_overhead_ps", "outfeed_drain_ps", "callback_ps")
        depths = ("prefetch_depth", "buffer_depth", "host_queue_depth")
        for name, least in [*((t, 0) for t in times), *((d, 1) for d in depths)]:
            if getattr(self, name) < least:
                raise ConfigurationError(
                    f"HostOptions.{name} must be >= {least}, received {getattr(self, name)}"
                )
        if self.infeed not in INFEED_MODES:
            raise ConfigurationError(
                f"infeed must be one of {INFEED_MODES}, received {self.infeed!r}"
            )
        if self.outfeed_mode not in OUTFEED_MODES:
            raise ConfigurationError(
                f"outfeed_mode must be one of {OUTFEED_MODES}, received {self.outfeed_mode!r}"
            )


@dataclass(frozen=True)
class HostLink:
    """The link between the host and one IPU (one per direction).

    Attributes:
        h2d_bytes_per_s / d2h_bytes_per_s: bandwidth per direction.
        latency_ps: fixed cost of each transfer.
        copy_overhead_ps: fixed cost of each stream copy on the IPU (the host sync starting it).
        port_bytes_per_s: bandwidth of the IPU's own port (to the IPU-Gateway), at which it copies
            staged elements; 0 means the host link's.
    """

    h2d_bytes_per_s: float
    d2h_bytes_per_s: float
    latency_ps: int = 0
    copy_overhead_ps: int = 0
    port_bytes_per_s: float = 0.0


@dataclass(frozen=True)
class RunPlan:
    """The executions of a run: how many steps each one has.

    Attributes:
        executions: steps per execution, in order (all epochs).
        epochs: epoch index of each execution (for reporting); default all 0.
    """

    executions: tuple[int, ...]
    epochs: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if any(n < 1 for n in self.executions):
            raise ValueError(f"every execution needs at least one step, received {self.executions}")
        if self.epochs and len(self.epochs) != len(self.executions):
            raise ValueError("RunPlan.epochs needs one entry per execution")

    @property
    def total_steps(self) -> int:
        return sum(self.executions)

    @classmethod
    def uniform(cls, epochs: int, steps_per_epoch: int, steps_per_execution: int) -> RunPlan:
        """``epochs`` epochs of ``steps_per_epoch`` steps, cut into executions."""
        starts = range(0, steps_per_epoch, steps_per_execution)
        sizes = [min(steps_per_execution, steps_per_epoch - k) for k in starts]
        return cls(tuple(sizes * epochs), tuple(e for e in range(epochs) for _ in sizes))
