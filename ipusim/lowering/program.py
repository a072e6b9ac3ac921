"""The Program IR: what each IPU executes, as the engine consumes it.

A :class:`Program` is built by :mod:`ipusim.lowering` from a step graph, the compile options and the
system. Times are integer picoseconds, already converted from cycles with each IPU's clock, so the
engine only adds integers.

Every program has one shape: a :class:`PipelineProgram`. A step on a single IPU is a pipeline of
one stage whose forward pass is the whole step (forward, backward and accumulation supersteps in
one block); a pipelined model has one stage per pipeline stage; concurrent stages (several
functions in one slot of ``pipeline()``) are a *stage group*: one logical stage of the schedule
run by several physical stages on their own IPUs at the same time. Per pipeline run of
``micro_batches`` micro-batches the schedule's time steps run in lock step, then every IPU runs
its stages' weight updates (training).

:class:`Block` s of BSP supersteps run locally and are timed arithmetically; :class:`Timed`
transfers (collectives, Streaming Memory) and the stages' infeed reads and outfeed writes are
the points where an IPU meets the rest of the system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ipusim.lowering.liveness import IPULiveness

#: Trace phases of supersteps.
PHASES = ("fwd", "bwd", "accumulate", "weight-update", "io")


def copy_bandwidth(src: int, dst: int, neighbour: float, pair: float) -> float:
    """Bytes/s of an inter-stage copy from IPU ``src`` to ``dst``: ``pair`` between the two
    IPUs of a pair (2r, 2r + 1), joined by more links (0: no faster than the others),
    ``neighbour`` otherwise."""
    return pair if src // 2 == dst // 2 and pair else neighbour


@dataclass(frozen=True, slots=True)
class Superstep:
    """One BSP superstep on one IPU: a compute set, its exchange and the sync that ends it.

    Attributes:
        name: ``layer/op`` label shown in traces.
        layer: layer name ('' for ops outside layers).
        op: op name.
        phase: one of :data:`PHASES`.
        compute_ps / exchange_ps / sync_ps: durations of the three parts (picoseconds).
        flops: floating-point operations of the compute set.
        exchange_bytes: bytes received by the tiles during the exchange (all tiles).
        tiles: tiles the compute set runs on.
        compute_sets: compute sets the op compiles to (a convolution and its reduction, the
            passes of a batch norm, ...); each ends with a sync.
    """

    name: str
    layer: str
    op: str
    phase: str
    compute_ps: int
    exchange_ps: int
    sync_ps: int
    flops: int = 0
    exchange_bytes: int = 0
    tiles: int = 1
    compute_sets: int = 1

    @property
    def duration_ps(self) -> int:
        return self.compute_ps + self.exchange_ps + self.sync_ps


@dataclass(frozen=True, slots=True)
class Block:
    """Consecutive supersteps that run on one IPU with no outside interaction."""

    supersteps: tuple[Superstep, ...]
    label: str = ""

    @property
    def duration_ps(self) -> int:
        return sum(s.duration_ps for s in self.supersteps)

    @property
    def flops(self) -> int:
        return sum(s.flops for s in self.supersteps)


@dataclass(frozen=True, slots=True)
class Timed:
    """An activity of known duration outside the compute sets: a collective over the links or
    a transfer to or from Streaming Memory.

    Attributes:
        name: label in traces (e.g. ``"all-reduce gradients"``, ``"load optimizer state"``).
        track: ``"link"`` or ``"remote"``.
        duration_ps: how long it takes.
        bytes: bytes this IPU sends, receives, loads or stores.
        phase: trace phase.
    """

    name: str
    track: str
    duration_ps: int
    bytes: int = 0
    phase: str = "weight-update"


@dataclass(frozen=True)
class MemoryItem:
    """One thing that occupies SRAM on an IPU."""

    name: str
    category: str  # weights / optimizer-state / gradient-accumulators / activations / code / exchange-buffers
    bytes: int


MEMORY_CATEGORIES = (
    "weights",
    "optimizer-state",
    "gradient-accumulators",
    "activations",
    "code",
    "exchange-buffers",
)


@dataclass(frozen=True)
class IPUMemoryPlan:
    """What one IPU holds, against its SRAM.

    Attributes:
        ipu: IPU index.
        items: every item, with its category and size.
        budget_bytes: SRAM of the IPU (all tiles).
        tile_bytes: bytes per tile at the fullest tile's worst program step (length = tiles).
        tile_budget_bytes: SRAM of one tile.
        liveness: the IPU's liveness over its program (an
            :class:`~ipusim.lowering.liveness.IPULiveness`), or None for a plan made without
            one.
        working_upper_bound: the working activations are an upper bound (a recomputing
            pipeline stage runs here: its ops run in graph order, not Poplar's memory-aware
            schedule, with only the checkpoints the model declares), so a plan over budget only
            by them may fit.
    """

    ipu: int
    items: tuple[MemoryItem, ...]
    budget_bytes: int
    tile_bytes: tuple[int, ...] = ()
    tile_budget_bytes: int = 0
    liveness: IPULiveness | None = field(default=None, compare=False, repr=False)
    working_upper_bound: bool = False

    @property
    def total_bytes(self) -> int:
        return sum(item.bytes for item in self.items)

    def by_category(self) -> dict[str, int]:
        """Bytes per category, every category of :data:`MEMORY_CATEGORIES` present."""
        out = dict.fromkeys(MEMORY_CATEGORIES, 0)
        for item in self.items:
            out[item.category] = out.get(item.category, 0) + item.bytes
        return out

    def largest(self, n: int = 5) -> list[MemoryItem]:
        return sorted(self.items, key=lambda item: (-item.bytes, item.name))[:n]


@dataclass(frozen=True)
class StageProgram:
    """One pipeline stage: its work per micro-batch and what it sends to its neighbours.

    Attributes:
        stage: stage index.
        ipu: IPU the stage runs on (``device_mapping[stage]``).
        forward: the stage's forward pass for one micro-batch.
        backward: its backward pass (with the recomputed forward first when recomputing);
            empty in inference.
        weight_update: accumulation is part of ``backward``; this is the stage's optimizer step,
            run once per pipeline run.
        send_forward_bytes: bytes sent to stage + 1 after each forward (activations, and targets
            passed through to the last stage).
        send_backward_bytes: bytes sent to stage - 1 after each backward (gradients).
        stash_bytes: activations kept per micro-batch in flight, from forward to backward.
        update_before / update_after: collectives and Streaming Memory transfers around the
            weight update (gradient all-reduce, optimizer-state load and store, ...).
        after_forward / before_backward: Streaming Memory transfers per micro-batch (offloaded
            activations or accumulators).
        before_forward: transfers before each forward pass (a single-IPU step loading its
            offloaded accumulators).
    """

    stage: int
    ipu: int
    forward: Block
    backward: Block = Block(())
    weight_update: Block = Block(())
    send_forward_bytes: int = 0
    send_backward_bytes: int = 0
    stash_bytes: int = 0
    update_before: tuple[Timed, ...] = ()
    update_after: tuple[Timed, ...] = ()
    after_forward: tuple[Timed, ...] = ()
    before_backward: tuple[Timed, ...] = ()
    before_forward: tuple[Timed, ...] = ()

    @property
    def has_backward(self) -> bool:
        """Whether the stage runs a backward pass of its own (work or transfers)."""
        return bool(self.backward.supersteps or self.before_backward)


@dataclass(frozen=True)
class PipelineProgram:
    """A step as a pipeline: stages, their schedule and the cost of crossing IPUs.

    Attributes:
        stages: one program per physical stage, in stage order.
        schedule: ``"grouped"``, ``"interleaved"`` or ``"sequential"``.
        micro_batches: micro-batches per pipeline run (the gradient accumulation count; 1 for a
            single-IPU step without accumulation).
        training: whether weight updates run (and backward passes, where stages have them).
        sync_ps: the cross-IPU sync that ends every pipeline time step (0 on one IPU).
        link_bytes_per_s / link_latency_ps: one IPU-Link direction (inter-stage copies).
        pair_link_bytes_per_s: one direction between the two IPUs of a pair (IPUs 2r, 2r+1),
            joined by more links; 0 means ``link_bytes_per_s``.
        infeed_bytes / outfeed_bytes: per micro-batch, read by the first stage's IPU and written
            by the last stage's IPU.
        outfeed_copies: stream copies of each outfeed element.
        groups: the physical stages of each logical stage of the schedule (stage groups);
            empty means one physical stage per logical stage. A group of several stages runs
            them at the same time on their own IPUs; copies go to every stage of the
            neighbouring group.
    """

    stages: tuple[StageProgram, ...]
    schedule: str
    micro_batches: int
    training: bool
    sync_ps: int = 0
    link_bytes_per_s: float = 32e9
    link_latency_ps: int = 0
    pair_link_bytes_per_s: float = 0.0
    infeed_bytes: int = 0
    outfeed_bytes: int = 0
    outfeed_copies: int = 1
    groups: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.stages:
            raise ValueError("a PipelineProgram needs at least one stage")
        if self.micro_batches < 1:
            raise ValueError(f"micro_batches must be >= 1, received {self.micro_batches}")
        if not self.groups:
            object.__setattr__(self, "groups", tuple((s,) for s in range(len(self.stages))))
        members = sorted(p for g in self.groups for p in g)
        if members != list(range(len(self.stages))) or any(not g for g in self.groups):
            raise ValueError(
                f"stage groups {self.groups} must hold every physical stage 0.."
                f"{len(self.stages) - 1} exactly once"
            )

    @property
    def ipus(self) -> tuple[int, ...]:
        """IPUs used, ascending."""
        return tuple(sorted({s.ipu for s in self.stages}))

    @property
    def logical_stages(self) -> int:
        """Stages of the schedule (stage groups)."""
        return len(self.groups)

    @property
    def has_backward(self) -> bool:
        """Whether the schedule has backward passes (training with a backward pass per stage;
        a single-IPU step keeps its backward supersteps inside its forward block)."""
        return self.training and any(s.has_backward for s in self.stages)


@dataclass(frozen=True)
class Program:
    """Everything the engine needs to simulate one kind of step on the system.

    Attributes:
        kind: ``"train"``, ``"test"`` or ``"predict"``.
        pipeline: the step as a pipeline (one stage on a single IPU).
        batch_size: samples per micro-batch step per replica.
        replicas: number of replicas. Only replica 0 is simulated: replicas are identical and
            synchronous, so the others' timelines are replica 0's (the trace keeps replica 0
            and the layout, and copies on demand).
        ipus_per_replica: IPUs one replica occupies (its shards, rounded up to a power of two).
        gradient_accumulation: micro-batch steps per weight update (1 = every step).
        readback_bytes: weights read back to the host after every execution (0 for IPU
            TensorFlow, which keeps them on the device until the host reads them).
        memory: one plan per IPU.
        system_name: the system preset the program was lowered for.
    """

    kind: str
    pipeline: PipelineProgram
    batch_size: int
    replicas: int = 1
    ipus_per_replica: int = 1
    gradient_accumulation: int = 1
    readback_bytes: int = 0
    memory: tuple[IPUMemoryPlan, ...] = ()
    system_name: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def samples_per_step(self) -> int:
        """Samples consumed by one step of every replica together."""
        return self.batch_size * self.replicas

    @property
    def pipelined(self) -> bool:
        """Whether the step is a pipeline of several stages (not a single-IPU step)."""
        return len(self.pipeline.stages) > 1
