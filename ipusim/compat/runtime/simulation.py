"""How a device run is described to the session (``ipusim.session``) and becomes Reports.

A traced device function is simulated segment by segment:

- a **loop** (``loops.repeat`` / ``while_loop``) is its body graph lowered as one step; the
  iterations it ran are the steps of one execution. The step reads one element of each dequeue
  per iteration (infeed bytes from the dataset's element spec, samples per step from the first
  dimension of the first element of each dequeue; a function fed by its arguments instead, as
  ``strategy.run(step, args=(x, y))`` is, takes its samples from the first dimension of its first
  array argument) and writes what its outfeed enqueues send
  (outfeed bytes from the enqueued values' specs). It is a training step when the body updates
  variables with an optimizer: lowering then adds the weight update of the updated variables (and
  gradient accumulation when the optimizer is a gradient-accumulation wrapper, with its
  offloading options);
- a **pipeline** (``pipeline()``) describes itself (see :mod:`.pipeline_timing`);
- a function with neither is one step of its own graph.

Host behaviour comes from the active ``IPUConfig`` (``config.ipusim``: dataset rate, per-execution
overhead, outfeed drain time) and from the queues: the infeed's ``prefetch_depth``, the outfeed's
``buffer_depth`` and mode (``ALL`` / ``LAST``). Custom loops read no weights back after an
execution and run no Keras callbacks. Replication is IPU TensorFlow's: configured IPUs / the
program's IPUs rounded up to a power of two. Every segment is lowered (by the session) before the run executes
(so an out-of-memory program fails first) and simulated after it; the report of the last segment
is the run's ``last_simulation`` (all of them are in :attr:`DeviceRunTiming.reports`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipusim import session
from ipusim.compat.runtime.compiled import CompiledGraph
from ipusim.compat.runtime.ops_outfeed import lookup_queue
from ipusim.session import DistributionSpec, Program, StepDescription
from ipusim.trace import Report

log = logging.getLogger("ipusim")

_last_report: Report | None = None


def last_simulation() -> Report | None:
    """The report of the most recent simulated device run (any strategy), or None."""
    return _last_report


def environment() -> tuple[Any, Any]:
    """The active IPUConfig (or None) and the SystemSpec to simulate (one GC200 by default)."""
    return session.environment()


def replication_factor(segments: list[Any]) -> int:
    """Replicas of a device run on the configured device: IPU TensorFlow's rule
    (:func:`ipusim.session.replication_factor`) for the segment using the most IPUs.

    Raises:
        PipelineConfigurationError: the configured IPU count is not a multiple of the IPUs one
            replica occupies.
    """
    from ipusim.config import configured_num_ipus

    mappings = [getattr(getattr(s, "args", None), "device_mapping", None) for s in segments]
    widest = max(mappings, key=session.shard_count, default=None)
    return session.replication_factor(configured_num_ipus(), widest, "The pipeline")


@dataclass
class SegmentTiming:
    """A lowered segment and how to simulate it.

    Attributes:
        lowered: the session's lowered step.
        steps: returns the steps the last execution ran (called after the run).
        label: what it is, for the report.
    """

    lowered: session.LoweredRun
    steps: Callable[[], int]
    label: str

    @property
    def program(self) -> Program:
        return self.lowered.program


def feed_options(prefetch_depth: int, outfeed: Any) -> session.FeedOptions:
    """The feeds of a custom loop: the infeed's depth, the outfeed queue (or None); no Keras
    callbacks."""
    last = outfeed is not None and outfeed.outfeed_mode.name == "LAST"
    return session.FeedOptions(
        prefetch_depth=prefetch_depth,
        buffer_depth=getattr(outfeed, "buffer_depth", None),
        outfeed_mode="last" if last else "all",
        callbacks=False,
    )


def graph_outfeeds(graph: Any, nodes: list[Any]) -> tuple[int, Any]:
    """Bytes enqueued per execution of ``nodes`` and the first outfeed queue they enqueue."""
    total, queue = 0, None
    for node in nodes:
        if node.op.name != "outfeed_enqueue":
            continue
        total += sum(s.spec.nbytes for s in node.inputs)
        if queue is None:
            queue = lookup_queue(node.attrs["queue_id"])
    return total, queue


def optimizer_settings(handles: list[Any]) -> tuple[int, dict[str, Any]]:
    """Gradient accumulation count and offloading options of the updates (what the update
    costs, lowering reads from the update ops in the graph)."""
    from ipusim.compat.runtime.optimizers import accumulation_of

    if not handles:
        return 1, {}
    accumulation = [accumulation_of(h.optimizer) for h in handles]
    ga = max((a.num_mini_batches for a in accumulation if a is not None), default=1)
    options: dict[str, Any] = {}
    for acc in accumulation:
        if acc is not None:
            options["offload_optimizer_state"] = acc.offload_weight_update_variables
            options["replicated_optimizer_state_sharding"] = acc.replicated_optimizer_state_sharding
    return ga, options


def argument_batch(compiled: CompiledGraph) -> int:
    """Samples one execution of a function fed by its arguments processes: the first dimension
    of its first array argument of rank >= 1 (the batch, as ``model(x)`` in the step reads it);
    1 when it has no such argument."""
    for placeholder in compiled.arg_placeholders:
        spec = placeholder.spec
        if spec.rank >= 1:  # an argument's array: its sizes are known
            return int(spec.shape[0])  # type: ignore[arg-type]
    return 1


def describe_graph(
    compiled: CompiledGraph, fed_by_arguments: bool = False
) -> tuple[StepDescription, Any, list[Any]]:
    """A step description of one execution of ``compiled`` (a loop body, or a function:
    ``fed_by_arguments``, whose arguments are its batch when it dequeues nothing)."""
    ctx = compiled.ctx
    graph = ctx.graph
    fetches = tuple(compiled.fetches)
    nodes = graph.nodes_between(list(fetches))
    infeed_bytes = sum(p.spec.nbytes for d in ctx.dequeues for p in d.placeholders)
    samples = 0
    for dequeue in ctx.dequeues:
        first = dequeue.placeholders[0].spec if dequeue.placeholders else None
        # dequeued elements have known sizes (the feeds check it)
        samples += (
            int(first.shape[0])  # type: ignore[arg-type]
            if first is not None and first.rank >= 1
            else 1
        )
    if fed_by_arguments and not ctx.dequeues:
        samples = argument_batch(compiled)  # fed by its arguments (strategy.run(step, args=(x, y)))
    outfeed_bytes, outfeed = graph_outfeeds(graph, nodes)
    handles = list(ctx.applies)
    trainable: dict[int, Any] = {}
    for handle in handles:
        for variable in handle.variables:
            trainable.setdefault(id(variable), variable)
    step = StepDescription(
        kind="train" if handles else "predict",
        graph=graph,
        fetches=fetches,
        batch_size=max(samples, 1),
        infeed_bytes=infeed_bytes,
        outfeed_bytes=outfeed_bytes,
        trainable=tuple(trainable.values()),
        weights=tuple(graph.variables),
    )
    return step, outfeed, handles


def lower_graph(
    compiled: CompiledGraph,
    config: Any,
    system: Any,
    replicas: int,
    prefetch_depth: int,
    steps: Callable[[], int],
    label: str,
    fed_by_arguments: bool = False,
) -> SegmentTiming:
    """Lower ``compiled`` as the step of a loop (or of a one-step function: ``fed_by_arguments``
    as :func:`describe_graph` reads it)."""
    step, outfeed, handles = describe_graph(compiled, fed_by_arguments)
    ga, offload = optimizer_settings(handles)
    distribution = DistributionSpec(
        replicas=replicas, remote_buffers=session.remote_buffers(config), **offload
    )
    description = session.RunDescription(
        step=step,
        gradient_accumulation=ga if step.kind == "train" else 1,
        distribution=distribution,
        feeds=feed_options(prefetch_depth, outfeed),
        read_back_weights=False,
        label=label,
    )
    return SegmentTiming(session.lower(description, config, system), steps, label)


class DeviceRunTiming:
    """The timing side of one device run: lowered before it executes, simulated after."""

    def __init__(self, traced: Any) -> None:
        from ipusim.compat.runtime.loops import LoopProgram

        self.traced = traced
        self.config, self.system = environment()
        segments = list(traced.ctx.segments)
        self.replicas = replication_factor(segments)
        self.timing = self.config is None or bool(self.config.ipusim.timing)
        self.reports: list[Report] = []
        self.parts: list[SegmentTiming] = []
        if not self.timing:
            return
        key = (id(self.config), id(self.system), self.replicas)
        cached = traced.plans.get(key)
        if cached is None:
            cached = []
            where = (self.config, self.system, self.replicas)
            for segment in segments:
                if isinstance(segment, LoopProgram):
                    depth = segment.infeed.prefetch_depth if segment.infeed is not None else 1
                    steps = lambda s=segment: s.iterations_run  # noqa: E731
                    cached.append(lower_graph(segment.body, *where, depth, steps, segment.name))
                else:
                    cached.append(segment.timing(*where))
            if not segments:
                cached.append(lower_graph(traced.compiled, *where, 1, lambda: 1, "function", True))
            traced.plans[key] = cached
        self.parts = cached

    def simulate(self) -> Report | None:
        """Simulate every segment's last execution; returns the last report (or None)."""
        global _last_report
        if not self.timing:
            return None
        for part in self.parts:
            steps = int(part.steps())
            if steps < 1:
                continue
            run = session.simulate(part.lowered, [(0, steps)])
            self.reports.append(run.report)
        if not self.reports:
            return None
        _last_report = self.reports[-1]
        return _last_report


def prepare(traced: Any) -> DeviceRunTiming:
    """Lower the segments of ``traced`` for the active configuration (see the module doc)."""
    return DeviceRunTiming(traced)
