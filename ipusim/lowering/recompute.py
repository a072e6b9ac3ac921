"""Recomputation: what a pipeline stage recomputes, stashes and runs in its backward pass, and
which instructions an unpipelined step recomputes (``IPUConfig.allow_recompute``).

IPU TensorFlow's two strategies (graphcore/tensorflow ``pipeline_recomputation_stage_inserter.cc``
and ``pipeline_recomputation.cc``; ``RecomputationMode`` names them; :func:`resolve_recomputation`):

- **RecomputeThenBackpropagate**: every stage but the last gets a recomputation stage, a clone
  of its forward stage run just before its backward stage. The stash (the FIFO between the
  forward and the recomputation stage) holds the stage's inputs; the recomputation re-creates
  every forward activation at once, then the backward pass consumes them. Checkpoints have no
  effect. The last stage is not recomputed (its forward and backward passes are adjacent).
- **RecomputeAndBackpropagateInterleaved**: the recomputable forward operations are cloned into
  the backward stage and scheduled as the backward pass needs them; the stash holds the stage's
  inputs and its recomputation checkpoints (the checkpoint values are not recomputed). In the
  last stage only what lies before its final checkpoints is recomputed (nothing without one).

Stateful operations (phase ``update``: BatchNorm's moving statistics) are never recomputed. The
stash is, in every case, the forward values the backward block reads that it does not make
itself, counted once per value: ``stash = (reads of B ∪ R) − outputs of R`` for the recomputed
nodes R and backward nodes B of the stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from ipusim.errors import UnsupportedError
from ipusim.graph.graph import Node, Symbol
from ipusim.graph.spec import TensorSpec
from ipusim.lowering.liveness import SHAPE_ONLY_INPUTS

#: The two recomputation strategies.
RECOMPUTE_THEN_BACKPROPAGATE = "recompute-then-backpropagate"
RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED = "recompute-and-backpropagate-interleaved"

#: The strategy of each ``RecomputationMode`` (by name) and the schedules it supports
#: (graphcore/tensorflow ``pipeline_util.cc`` ``GetPipelineRecomputationMode``).
_MODES = {
    "RecomputeThenBackpropagate": (RECOMPUTE_THEN_BACKPROPAGATE, ("grouped", "interleaved")),
    "RecomputeAndBackpropagateInterleaved": (
        RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED,
        ("grouped", "sequential"),
    ),
}


def resolve_recomputation(mode: str, schedule: str) -> str:
    """The strategy a ``RecomputationMode`` selects for ``schedule``, as IPU TensorFlow does:
    Auto is RecomputeThenBackpropagate for Grouped and Interleaved and
    RecomputeAndBackpropagateInterleaved for Sequential.

    Args:
        mode: the mode's name (``"Auto"``, ``"RecomputeThenBackpropagate"``,
            ``"RecomputeAndBackpropagateInterleaved"``).
        schedule: ``"grouped"``, ``"interleaved"`` or ``"sequential"``.

    Returns:
        :data:`RECOMPUTE_THEN_BACKPROPAGATE` or :data:`RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED`.

    Raises:
        UnsupportedError: the mode does not support the schedule (RecomputeThenBackpropagate
            with Sequential, RecomputeAndBackpropagateInterleaved with Interleaved).
    """
    if mode == "Auto":
        mode = (
            "RecomputeAndBackpropagateInterleaved"
            if schedule == "sequential"
            else "RecomputeThenBackpropagate"
        )
    strategy, supported = _MODES[mode]
    if schedule not in supported:
        raise UnsupportedError(
            f"recomputation_mode {mode} does not support the {schedule.capitalize()} pipeline "
            f"schedule (it supports {' and '.join(s.capitalize() for s in supported)}); choose "
            "another schedule, or RecomputationMode.Auto."
        )
    return strategy


#: The op of ``pipelining_ops.recomputation_checkpoint`` and the ``RecomputationCheckpoint`` layer.
CHECKPOINT_OP = "recomputation_checkpoint"
_NOT_DATA = ("variable", "constant")


@dataclass(frozen=True)
class StageRecomputation:
    """One stage's recomputation.

    Attributes:
        recomputed: the forward nodes re-run in the backward pass, in forward order.
        backward_order: the backward block's nodes in execution order (recomputed nodes and
            backward nodes).
        stash_bytes: bytes of one micro-batch's stash.
    """

    recomputed: tuple[Node, ...]
    backward_order: tuple[Node, ...]
    stash_bytes: int


def _ancestors_of_checkpoints(forward: Sequence[Node]) -> set[int]:
    """Ids of the stage's forward nodes that feed one of its checkpoints (directly or not)."""
    by_id = {n.id: n for n in forward}
    out: set[int] = set()
    work = [n for n in forward if n.op.name == CHECKPOINT_OP]
    while work:
        node = work.pop()
        for sym in node.inputs:
            producer = sym.node.id
            if producer in by_id and producer not in out:
                out.add(producer)
                work.append(by_id[producer])
    return out


def recomputed_nodes(strategy: str, forward: Sequence[Node], last_stage: bool) -> tuple[Node, ...]:
    """The forward nodes of a stage that ``strategy`` recomputes (see the module docstring).

    Args:
        strategy: :data:`RECOMPUTE_THEN_BACKPROPAGATE` or
            :data:`RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED`.
        forward: the stage's forward nodes in execution order.
        last_stage: whether this is the last stage of the pipeline.
    """
    recomputable = [n for n in forward if n.phase != "update"]
    if strategy == RECOMPUTE_THEN_BACKPROPAGATE:
        return () if last_stage else tuple(recomputable)
    if last_stage:
        before = _ancestors_of_checkpoints(forward)
        return tuple(n for n in recomputable if n.id in before and n.op.name != CHECKPOINT_OP)
    return tuple(n for n in recomputable if n.op.name != CHECKPOINT_OP)


def on_demand_order(recomputed: Sequence[Node], backward: Sequence[Node]) -> list[Node]:
    """Backward nodes in order, each preceded by the recomputed nodes it needs that have not
    run yet (their own inputs first): the recomputation interleaved with backpropagation."""
    pending = {n.id: n for n in recomputed}
    order: list[Node] = []

    def emit(root: Node) -> None:
        # Depth first, inputs in order, without recursion: a recurrent layer's loop makes
        # dependency chains thousands of nodes long.
        stack = [(root, iter(root.inputs))]
        while stack:
            node, inputs = stack[-1]
            for sym in inputs:
                producer = pending.pop(sym.node.id, None)
                if producer is not None:
                    stack.append((producer, iter(producer.inputs)))
                    break
            else:
                stack.pop()
                order.append(node)

    for node in backward:
        emit(node)
    return order


def plan_stage(
    strategy: str,
    forward: Sequence[Node],
    backward: Sequence[Node],
    last_stage: bool,
    nbytes: Callable[[TensorSpec], int],
) -> StageRecomputation:
    """The recomputation of one stage.

    Args:
        strategy: :data:`RECOMPUTE_THEN_BACKPROPAGATE` or
            :data:`RECOMPUTE_AND_BACKPROPAGATE_INTERLEAVED`.
        forward / backward: the stage's forward and backward nodes in execution order.
        last_stage: whether this is the pipeline's last stage.
        nbytes: bytes of a value from its TensorSpec (at the run's precision).
    """
    recomputed = recomputed_nodes(strategy, forward, last_stage)
    if strategy == RECOMPUTE_THEN_BACKPROPAGATE:
        order = [*recomputed, *backward]
    else:
        order = on_demand_order(recomputed, backward)
    made = {n.id for n in recomputed}
    stashed: dict[tuple[int, int], int] = {}
    for node in (*recomputed, *backward):
        shape_only = SHAPE_ONLY_INPUTS.get(node.op.name, ())
        for k, sym in enumerate(node.inputs):
            producer = sym.node
            if producer.op.name in _NOT_DATA or producer.id in made or k in shape_only:
                continue
            if producer.phase == "bwd":
                continue  # a gradient, not a stashed forward value
            stashed[(producer.id, sym.index)] = nbytes(sym.spec)
    return StageRecomputation(tuple(recomputed), tuple(order), sum(stashed.values()))


# ----------------------------------------------------------------- unpipelined: instructions
#: Non-linearities the Conv->Norm->NonLinearity pattern recomputes.
_NON_LINEARITIES = frozenset({"relu", "sigmoid", "tanh", "gelu", "elu", "softplus"})


@dataclass(frozen=True)
class _Ref:
    """A value of a re-wired node (the part of a Symbol liveness reads)."""

    node: _Rewired
    index: int
    spec: TensorSpec


@dataclass(frozen=True)
class _Rewired:
    """A node as liveness sees it after recomputation: a clone (negative id) or a backward node
    reading clones (its own id)."""

    id: int
    op: object
    inputs: tuple[Symbol | _Ref, ...]
    outputs: tuple[Symbol | _Ref, ...]
    name: str
    phase: str


def _read_clones(
    inputs: Sequence[Symbol | _Ref], clone_of: dict[int, _Rewired]
) -> tuple[Symbol | _Ref, ...]:
    """``inputs`` with every value of a recomputed node read from its clone instead."""
    return tuple(
        _Ref(clone_of[s.node.id], s.index, s.spec) if s.node.id in clone_of else s for s in inputs
    )


@dataclass(frozen=True)
class InstructionRecomputation:
    """Recomputation of an unpipelined training step.

    Attributes:
        before: id of a backward node -> the forward nodes recomputed just before it.
        liveness_order: the step's nodes as they run, recomputed clones included and backward
            nodes reading them (for :func:`ipusim.lowering.memory.peak_live_bytes`).
        sizes: bytes of every value in ``liveness_order`` (clones included).
    """

    before: dict[int, tuple[Node, ...]]
    liveness_order: tuple[Node, ...]  # re-wired nodes stand in for the nodes they re-wire
    sizes: dict[tuple[int, int], int]


def conv_norm_patterns(nodes: Sequence[Node]) -> list[tuple[Node, ...]]:
    """IPU TensorFlow's instruction-recomputation patterns (graphcore/tensorflow
    ``recompute_instructions.cc``): a convolution read only by a training-mode batch norm and its
    gradient (Conv->Norm), optionally with a non-linearity on the norm's output that the backward
    pass reads (Conv->Norm->NonLinearity). A convolution followed by a bias add does not match,
    as in IPU TensorFlow."""
    users: dict[int, list[Node]] = {}
    for node in nodes:
        for sym in node.inputs:
            users.setdefault(sym.node.id, []).append(node)
    groups = []
    for conv in nodes:
        if conv.op.name != "conv2d" or conv.phase != "fwd":
            continue
        readers = users.get(conv.id, [])
        norm = [u for u in readers if u.op.name == "batch_norm" and u.attrs.get("training")]
        grads = [u for u in readers if u.op.name == "batch_norm_grad"]
        if len(readers) != 2 or len(norm) != 1 or len(grads) != 1:
            continue
        group = [conv, norm[0]]
        after = [
            u
            for u in users.get(norm[0].id, [])
            if u.op.name in _NON_LINEARITIES and u.phase == "fwd" and u.inputs[0].node is norm[0]
        ]
        if after and any(r.phase == "bwd" for r in users.get(after[0].id, [])):
            group.append(after[0])
        groups.append(tuple(group))
    return groups


def instruction_recomputation(
    nodes: Sequence[Node], fetches: Sequence[object], sizes: dict[tuple[int, int], int]
) -> InstructionRecomputation:
    """Clone each pattern of :func:`conv_norm_patterns` into the backward pass, just before its
    first backward reader; backward readers read the clones, so the forward values die after
    their last forward use.

    Args:
        nodes: the step's nodes in execution order.
        fetches: the step's fetched values (kept alive to the end).
        sizes: bytes of every value ``(node id, output index)``.
    """
    groups = conv_norm_patterns(nodes)
    position = {n.id: i for i, n in enumerate(nodes)}
    clone_of: dict[int, _Rewired] = {}
    before: dict[int, list[Node]] = {}
    sizes = dict(sizes)
    for group in groups:
        ids = {n.id for n in group}
        readers = [n for n in nodes if n.phase == "bwd" and any(s.node.id in ids for s in n.inputs)]
        if not readers:
            continue
        first = min(readers, key=lambda n: position[n.id])
        before.setdefault(first.id, []).extend(group)
        for node in group:
            clone = _Rewired(-node.id - 1, node.op, (), (), f"recompute {node.name}", "bwd")
            outputs = tuple(_Ref(clone, s.index, s.spec) for s in node.outputs)
            clone_of[node.id] = _Rewired(
                clone.id,
                node.op,
                _read_clones(node.inputs, clone_of),
                outputs,
                clone.name,
                clone.phase,
            )
            for s in node.outputs:
                sizes[(clone.id, s.index)] = sizes.get((node.id, s.index), 0)
    order: list[Node | _Rewired] = []
    for node in nodes:
        order += [clone_of[original.id] for original in before.get(node.id, ())]
        if node.phase == "bwd" and any(s.node.id in clone_of for s in node.inputs):
            inputs = _read_clones(node.inputs, clone_of)
            order.append(_Rewired(node.id, node.op, inputs, node.outputs, node.name, node.phase))
        else:
            order.append(node)
    frozen = {k: tuple(v) for k, v in before.items()}
    # Liveness reads of a re-wired node only what a Node has (id, op, inputs, outputs, name).
    return InstructionRecomputation(frozen, cast(tuple[Node, ...], tuple(order)), sizes)
