"""What lowering is given (a step, its pipeline layout) and the one context it lowers with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ipusim.graph.graph import Graph, Node, Symbol
from ipusim.graph.spec import FLOAT_DTYPES, TensorSpec
from ipusim.graph.variable import Variable
from ipusim.hardware.loader import load_system
from ipusim.hardware.specs import IPUSpec, SystemSpec
from ipusim.lowering.program import Superstep
from ipusim.lowering.supersteps import element_bytes

if TYPE_CHECKING:
    from ipusim.lowering.distribution import Distribution
    from ipusim.lowering.recompute import InstructionRecomputation, StageRecomputation
    from ipusim.lowering.tile_mapping import TileMapper
    from ipusim.lowering.update import OptimizerCost, UpdatePhase

#: Graph nodes that hold data but run nothing.
SOURCES = ("placeholder", "variable", "constant")


@dataclass(frozen=True)
class StepDescription:
    """What lowering needs to know about one kind of step.

    Attributes:
        kind: ``"train"``, ``"test"`` or ``"predict"``.
        graph: the traced step graph.
        fetches: the values the step produces (restricts the nodes lowered).
        batch_size: samples per step.
        infeed_bytes: bytes of one infeed element (inputs and targets of a micro-batch).
        outfeed_bytes: bytes of one outfeed element.
        outfeed_copies: stream copies of one outfeed element (one per tensor outfed).
        trainable: trainable variables (updated by the optimizer), training only; lowering
            reads the update from the graph's update nodes instead.
        weights: every variable the model holds (for memory and read-back).
    """

    kind: str
    graph: Graph
    fetches: tuple[Symbol, ...]
    batch_size: int
    infeed_bytes: int
    outfeed_bytes: int
    trainable: tuple[Variable, ...] = ()
    outfeed_copies: int = 1
    weights: tuple[Variable, ...] = ()


@dataclass(frozen=True)
class PipelineSpec:
    """How a pipelined model maps onto IPUs (from the Keras stage assignment and options).

    Attributes:
        invocation_stage: top-level layer-call index of the step graph -> pipeline stage.
        device_mapping: IPU of each stage.
        schedule: ``"grouped"``, ``"interleaved"`` or ``"sequential"``.
        recompute: recompute forward activations in the backward pass (smaller stash):
            ``IPUConfig.allow_recompute``.
        recomputation_mode: the :class:`~ipusim.pipelining.RecomputationMode` name
            (``"Auto"``, ``"RecomputeThenBackpropagate"``,
            ``"RecomputeAndBackpropagateInterleaved"``); used when ``recompute`` is on.
        groups: the stage groups (concurrent stages): the stages of each logical stage of the
            schedule; empty means one stage per logical stage.
    """

    invocation_stage: dict[int, int]
    device_mapping: tuple[int, ...]
    schedule: str = "grouped"
    recompute: bool = False
    groups: tuple[tuple[int, ...], ...] = ()
    recomputation_mode: str = "Auto"

    @property
    def io_ipus(self) -> frozenset[int]:
        """The IPUs that hold host I/O, so get I/O tiles: stage 0's, which dequeues the infeed,
        and the last stage's, which enqueues the outfeed (S: graphcore/tensorflow
        ``tests/io_tiles_test.py``, ``testIoTilesOnlyCreatedOnDevicesWithIoInstructions``)."""
        return frozenset((self.device_mapping[0], self.device_mapping[-1]))


def compute_system(system: SystemSpec, io_tiles: int) -> SystemSpec:
    """``system`` as the compute graph of an IPU with ``io_tiles`` I/O tiles sees it: every op's
    tile mapping, cost and memory use the other ``tiles - io_tiles`` tiles (S:
    graphcore/tensorflow ``poplar_compiler.cc`` ``PartitionTiles``)."""
    if io_tiles == 0:
        return system
    return load_system(system, overrides={"ipu.tiles": system.ipu.tiles - io_tiles})


@dataclass(frozen=True)
class LoweringContext:
    """Everything the stage builder and the memory builder read, resolved once by ``lower``.

    A single IPU is a pipeline of one *fused* stage: its forward block is the whole step
    (forward, backward and accumulation supersteps in graph order), as the Program IR has it.

    Attributes:
        step: the step being lowered.
        system: the system it runs on.
        precision: ``"fp32"``, ``"fp16.16"`` or ``"fp16.32"``.
        update: the weight update, from the step graph's update nodes.
        nodes: the step's nodes in program order, sources included.
        supersteps: node id -> its superstep (nodes that do no work are absent).
        without_norm_collectives: node id -> its superstep without distributed batch norm's
            all-reduces (what RecomputeAndBackpropagateInterleaved recomputes).
        dist: the resolved replication and offloading (training), or None.
        replicas: replicas of the program.
        layout: the stage (and so the IPU) of every node and variable.
        mappers: IPU -> the tile mapping of its tensors, each with its own linear-mapping
            cursor (IPU TensorFlow's per-graph ``linear_mapping_state``).
        check_memory: raise ``OutOfMemoryError`` when an IPU's plan does not fit.
        pipeline: the stage layout, or None for a single IPU (one fused stage).
        micro_batches: micro-batches per run (per weight update when training).
        recompute: the pipeline's recomputation strategy (``ipusim.lowering.recompute``), or "".
        instructions: the single-IPU step's instruction recomputation, or None.
        gradient_accumulation: micro-batch steps per weight update.
        ipu: the IPU a memory plan is being made for (:meth:`on_ipu`).
    """

    step: StepDescription
    system: SystemSpec
    precision: str
    update: UpdatePhase
    nodes: tuple[Node, ...]
    supersteps: Mapping[int, Superstep]
    without_norm_collectives: Mapping[int, Superstep]
    dist: Distribution | None
    replicas: int
    layout: StageLayout
    mappers: Mapping[int, TileMapper]
    check_memory: bool
    pipeline: PipelineSpec | None
    micro_batches: int
    recompute: str = ""
    instructions: InstructionRecomputation | None = None
    gradient_accumulation: int = 1
    ipu: int = 0

    def on_ipu(self, ipu: int) -> LoweringContext:
        """This context making IPU ``ipu``'s plans (its :attr:`chip` and :attr:`mapper`)."""
        return replace(self, ipu=ipu)

    @property
    def chip(self) -> IPUSpec:
        """The chip of :attr:`ipu` as its compute graph sees it (without its I/O tiles)."""
        return self.mapper.chip

    @property
    def mapper(self) -> TileMapper:
        """The tile mapping of :attr:`ipu`'s tensors."""
        return self.mappers[self.ipu]

    def nbytes(self, spec: TensorSpec) -> int:
        """Bytes of a value at the run's precision (floats) or its own itemsize."""
        return spec.size * (self.element if spec.dtype in FLOAT_DTYPES else spec.itemsize)

    @property
    def optimizer(self) -> OptimizerCost:
        """The weight update's cost per trainable element."""
        return self.update.optimizer

    @property
    def element(self) -> int:
        """Bytes of one float element at the run's precision."""
        return element_bytes(self.precision)

    @property
    def training(self) -> bool:
        return self.step.kind == "train"

    @property
    def fused(self) -> bool:
        """A single IPU: one stage whose forward block runs the whole step."""
        return self.pipeline is None

    @property
    def accumulates(self) -> bool:
        """Whether gradients go through accumulators (pipelines always; one IPU when it
        accumulates several micro-batches)."""
        return self.training and (self.pipeline is not None or self.gradient_accumulation > 1)

    @property
    def schedule(self) -> str:
        return self.pipeline.schedule if self.pipeline is not None else "sequential"

    @property
    def device_mapping(self) -> tuple[int, ...]:
        return self.pipeline.device_mapping if self.pipeline is not None else (0,)


def is_forward(node: Node) -> bool:
    """Whether a node runs in its stage's forward pass."""
    return node.phase in ("fwd", "loss", "update")


@dataclass(frozen=True)
class StageLayout:
    """Where each node of a step graph runs."""

    node_stage: dict[int, int]
    variable_stage: dict[int, int]  # id(variable) -> stage
    num_stages: int


@dataclass(frozen=True)
class StagePlan:
    """What the stage builder decided about one stage before making its program.

    Attributes:
        forward / backward: the stage's nodes of each pass, in graph order (a single IPU's
            fused stage has them all in ``forward``).
        variables: the trainable variables it updates.
        accumulate / update: their accumulation and optimizer-update supersteps.
        recomputation: its recomputation (pipelines), or None.
        stash_bytes: activations kept per micro-batch in flight.
        send_forward_bytes / send_backward_bytes: bytes sent after each pass.
    """

    forward: tuple[Node, ...]
    backward: tuple[Node, ...]
    variables: tuple[Variable, ...]
    accumulate: tuple[Superstep, ...]
    update: tuple[Superstep, ...]
    recomputation: StageRecomputation | None
    stash_bytes: int
    send_forward_bytes: int
    send_backward_bytes: int
