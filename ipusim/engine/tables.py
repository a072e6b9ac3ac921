"""A program compiled for the engine: the templates of its activities and one pipeline run's work.

Both backends (the SimPy processes and the compiled fast path) run these tables, so they emit
the same instances and differ only in how they find the times.

One pipeline run is the schedule's time steps (``ipusim.lowering.schedules``, over the stage
groups), then the weight update (training). A time step is, per IPU that has work in it, a list
of operations run one after the other, then the step's inter-stage copies, then the cross-IPU
sync. An operation is:

- ``FIXED``: a block of supersteps or a transfer (collective, Streaming Memory) of known
  duration, recorded as one instance of its template;
- ``INFEED``: take the micro-batch's element from the infeed (the host may make the IPU wait);
- ``OUTFEED``: copy the micro-batch's results to the host outfeed (the buffer may be full).

A stage's forward item runs: infeed read (first physical stage), ``before_forward`` transfers,
the forward block, ``after_forward`` transfers (training), outfeed write (last physical stage,
when forward is its last pass). A backward item: ``before_backward`` transfers, the backward
block, outfeed write (last physical stage). The weight update of an IPU: for each of its stages in
order, ``update_before``, the weight-update block, ``update_after``; then every IPU syncs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ipusim.cost.units import transfer_ps
from ipusim.engine.options import HostLink, HostOptions
from ipusim.errors import ConfigurationError
from ipusim.lowering.program import Block, PipelineProgram, Program, Timed, copy_bandwidth
from ipusim.lowering.schedules import time_steps
from ipusim.trace import HOST
from ipusim.trace.templates import TemplateBuilder, TemplateTable

OP_FIXED = 0
OP_INFEED = 1
OP_OUTFEED = 2


@dataclass(frozen=True)
class Op:
    """One operation of an IPU in a time step.

    Attributes:
        kind: :data:`OP_FIXED`, :data:`OP_INFEED` or :data:`OP_OUTFEED`.
        template: the template a FIXED operation records (-1 otherwise).
        duration_ps: how long a FIXED operation takes.
        micro_batch: the micro-batch of the item (the step is the run's first step plus it).
    """

    kind: int
    template: int
    duration_ps: int
    micro_batch: int


@dataclass(frozen=True)
class TimeStep:
    """One time step of a pipeline run (or its weight update).

    Attributes:
        work: ``(ipu, operations)`` of every IPU with work, IPUs ascending.
        copies: ``(ipu, template)`` of every IPU copying over the IPU-Links after the work.
        copy_ps: how long the copies hold the step (the longest).
        micro_batch: the micro-batch of every item of the step, or -1 when they differ.
    """

    work: tuple[tuple[int, tuple[Op, ...]], ...]
    copies: tuple[tuple[int, int], ...] = ()
    copy_ps: int = 0
    micro_batch: int = -1


@dataclass(frozen=True)
class HostTemplates:
    """Templates and durations of the host's side of the run (-1: never recorded)."""

    infeed_copy_host: int
    infeed_copy_ipu: int
    infeed_stall: int
    outfeed_copy: int
    outfeed_stall: int
    overhead: int
    readback: int
    callbacks: int
    dataset: int
    drain: int
    callback: int
    infeed_copy_ps: int
    infeed_port_ps: int
    outfeed_copy_ps: int
    readback_ps: int


@dataclass(frozen=True)
class RunTables:
    """Everything both backends need to run a program.

    Attributes:
        program: the program.
        templates: every template of the run (the trace's templates).
        slots: the host and the IPUs of replica 0, ascending (the counters' columns).
        steps: the time steps of one pipeline run.
        update: the weight-update step (None when nothing is updated).
        sync_template: the template of the cross-IPU sync (-1 when there is none).
        micro_batches: micro-batches per pipeline run.
        cuttable: one logical stage: an execution may end inside a pipeline run (each time
            step then holds one micro-batch, in order).
        first_step_of: for cuttable runs, the index of the first time step of each micro-batch
            (and the number of steps at the end).
        host: the host's templates and durations.
        infeed_bytes / outfeed_bytes: per micro-batch (0: no infeed / outfeed).
    """

    program: Program
    templates: TemplateTable
    slots: tuple[int, ...]
    steps: tuple[TimeStep, ...]
    update: TimeStep | None
    sync_template: int
    micro_batches: int
    cuttable: bool
    first_step_of: tuple[int, ...]
    host: HostTemplates
    infeed_bytes: int
    outfeed_bytes: int

    @property
    def pipeline(self) -> PipelineProgram:
        return self.program.pipeline

    @property
    def ipus(self) -> tuple[int, ...]:
        return self.program.pipeline.ipus

    def pieces(self, first_step: int, steps: int) -> list[tuple[int, int, int]]:
        """The parts of pipeline runs an execution of ``steps`` steps from ``first_step`` runs:
        ``(run, first micro-batch, stop micro-batch)``.

        Raises:
            ValueError: a pipeline of several stages would stop inside a run.
        """
        m = self.micro_batches
        out = []
        step, left = first_step, steps
        while left > 0:
            run, lo = divmod(step, m)
            hi = min(m, lo + left)
            if not self.cuttable and (lo != 0 or hi != m):
                raise ConfigurationError(
                    f"an execution of {steps} steps is not a whole number of pipeline runs of "
                    f"{m} micro-batches"
                )
            out.append((run, lo, hi))
            left -= hi - lo
            step += hi - lo
        return out

    def step_range(self, lo: int, hi: int) -> range:
        """The time steps of micro-batches ``lo`` to ``hi - 1`` of a run."""
        if self.cuttable:
            return range(self.first_step_of[lo], self.first_step_of[hi])
        return range(len(self.steps))


def _block_template(builder: TemplateBuilder, block: Block) -> int:
    """The template of a block: compute, exchange and sync of each superstep (zero parts left
    out), back to back; -1 for a block that records nothing."""
    records = []
    t = 0
    for s in block.supersteps:
        if s.compute_ps:
            records.append(
                ("compute", s.name, s.layer, s.op, s.phase, t, t + s.compute_ps, 0, s.flops)
            )
            t += s.compute_ps
        if s.exchange_ps:
            end = t + s.exchange_ps
            records.append(
                ("exchange", s.name, s.layer, s.op, s.phase, t, end, s.exchange_bytes, 0)
            )
            t += s.exchange_ps
        if s.sync_ps:
            records.append(("sync", s.name, s.layer, s.op, s.phase, t, t + s.sync_ps, 0, 0))
            t += s.sync_ps
    if not records:
        return -1
    return builder.template(records, label=block.label or records[0][1])


class _Compiler:
    def __init__(self, program: Program, options: HostOptions, link: HostLink) -> None:
        self.program = program
        self.pipeline = program.pipeline
        self.options = options
        self.link = link
        self.builder = TemplateBuilder()
        self._blocks: dict[int, tuple[int, int]] = {}
        self._timed: dict[Timed, int] = {}

    def block(self, block: Block, micro_batch: int) -> Op | None:
        key = id(block)
        if key not in self._blocks:
            self._blocks[key] = (_block_template(self.builder, block), block.duration_ps)
        template, duration = self._blocks[key]
        return None if template < 0 else Op(OP_FIXED, template, duration, micro_batch)

    def timed(self, item: Timed | None, micro_batch: int) -> Op | None:
        if item is None or not item.duration_ps:
            return None
        template = self._timed.get(item)
        if template is None:
            template = self._timed[item] = self.builder.single(
                item.track, item.name, item.phase, item.duration_ps, num_bytes=item.bytes
            )
        return Op(OP_FIXED, template, item.duration_ps, micro_batch)

    def item_ops(self, stage: int, kind: str, mb: int, last_pass: str) -> list[Op]:
        p = self.pipeline
        program = p.stages[stage]
        ops: list[Op | None] = []
        if kind == "F":
            if stage == 0 and p.infeed_bytes:
                ops.append(Op(OP_INFEED, -1, 0, mb))
            ops += [self.timed(t, mb) for t in program.before_forward]
            ops.append(self.block(program.forward, mb))
            if p.training:
                ops += [self.timed(t, mb) for t in program.after_forward]
        else:
            ops += [self.timed(t, mb) for t in program.before_backward]
            ops.append(self.block(program.backward, mb))
        if stage == len(p.stages) - 1 and kind == last_pass and p.outfeed_bytes:
            ops.append(Op(OP_OUTFEED, -1, 0, mb))
        return [op for op in ops if op is not None]

    def copies(self, items: list[tuple[int, str, int]]) -> tuple[tuple[tuple[int, int], ...], int]:
        """Copy templates of a time step (per IPU: its longest copy, bytes and pairs)."""
        p = self.pipeline
        group_of = {s: g for g, members in enumerate(p.groups) for s in members}
        by_pair: dict[tuple[int, int], int] = {}
        for stage, kind, _ in items:
            program = p.stages[stage]
            size = program.send_forward_bytes if kind == "F" else program.send_backward_bytes
            group = group_of[stage]
            target = group + 1 if kind == "F" else group - 1
            if not size or not 0 <= target < len(p.groups):
                continue
            for dst_stage in p.groups[target]:
                dst = p.stages[dst_stage].ipu
                if dst != program.ipu:
                    pair = (program.ipu, dst)
                    by_pair[pair] = by_pair.get(pair, 0) + size
        if not by_pair:
            return (), 0
        per_ipu: dict[int, tuple[int, int, list[str]]] = {}
        for (src, dst), size in sorted(by_pair.items()):
            bandwidth = copy_bandwidth(src, dst, p.link_bytes_per_s, p.pair_link_bytes_per_s)
            duration = transfer_ps(size, bandwidth) + p.link_latency_ps
            for ipu in (src, dst):
                longest, total, names = per_ipu.get(ipu, (0, 0, []))
                per_ipu[ipu] = (
                    max(longest, duration),
                    total + size,
                    names + [f"IPU {src} -> IPU {dst}"],
                )
        out = []
        for ipu, (duration, size, names) in sorted(per_ipu.items()):
            name = "copy " + ", ".join(names)
            out.append((ipu, self.builder.single("link", name, "io", duration, num_bytes=size)))
        return tuple(out), max(d for d, _, _ in per_ipu.values())

    def host_templates(self) -> HostTemplates:
        b, opts, link, p = self.builder, self.options, self.link, self.pipeline
        program = self.program

        def copy_ps(num_bytes: int, bandwidth: float, copies: int = 1) -> int:
            """Stream copies of ``num_bytes`` together: the transfer, the link's latency and the
            host sync that starts each copy."""
            if not num_bytes:
                return 0
            overhead = copies * link.copy_overhead_ps
            return transfer_ps(num_bytes, bandwidth) + link.latency_ps + overhead

        infeed_ps = copy_ps(p.infeed_bytes, link.h2d_bytes_per_s)
        port_ps = copy_ps(p.infeed_bytes, link.port_bytes_per_s or link.h2d_bytes_per_s)
        staged = opts.infeed == "staged"
        outfeed_ps = copy_ps(p.outfeed_bytes, link.d2h_bytes_per_s, p.outfeed_copies)
        readback_ps = copy_ps(program.readback_bytes, link.d2h_bytes_per_s)
        produce_ps = opts.sample_ps * program.batch_size

        def io(name: str, duration: int, num_bytes: int) -> int:
            return b.single("host-io", name, "io", duration, num_bytes=num_bytes)

        def host(name: str, duration: int) -> int:
            return b.single("host", name, "host", duration) if duration else -1

        has_in, has_out = bool(p.infeed_bytes), bool(p.outfeed_bytes)
        host_copy = "infeed staging" if staged else "infeed copy"
        ipu_copy_ps = port_ps if staged else infeed_ps
        return HostTemplates(
            infeed_copy_host=io(host_copy, infeed_ps, p.infeed_bytes) if has_in else -1,
            infeed_copy_ipu=io("infeed copy", ipu_copy_ps, p.infeed_bytes) if has_in else -1,
            infeed_stall=b.single("host-io", "infeed stall", "io", None) if has_in else -1,
            outfeed_copy=io("outfeed copy", outfeed_ps, p.outfeed_bytes) if has_out else -1,
            outfeed_stall=b.single("host-io", "outfeed stall", "io", None) if has_out else -1,
            overhead=host("execution overhead", opts.per_execution_overhead_ps),
            readback=(
                io("weight read-back", readback_ps, program.readback_bytes)
                if program.readback_bytes
                else -1
            ),
            callbacks=host("callbacks", opts.callback_ps),
            dataset=host("dataset", produce_ps) if has_in else -1,
            drain=host("outfeed drain", opts.outfeed_drain_ps),
            callback=host("callback", opts.callback_ps),
            infeed_copy_ps=infeed_ps,
            infeed_port_ps=port_ps,
            outfeed_copy_ps=outfeed_ps,
            readback_ps=readback_ps,
        )

    def compile(self) -> RunTables:
        p = self.pipeline
        backward = p.has_backward
        last_pass = "B" if backward else "F"
        logical = time_steps(p.schedule, p.logical_stages, p.micro_batches, backward)
        steps = []
        for items in logical:
            physical = [(s, kind, mb) for g, kind, mb in items for s in p.groups[g]]
            work = []
            for ipu in p.ipus:
                ops: list[Op] = []
                for stage, kind, mb in physical:
                    if p.stages[stage].ipu == ipu:
                        ops += self.item_ops(stage, kind, mb, last_pass)
                if ops:
                    work.append((ipu, tuple(ops)))
            copies, copy_ps = self.copies(physical)
            mbs = {mb for _, _, mb in items}
            steps.append(TimeStep(tuple(work), copies, copy_ps, mbs.pop() if len(mbs) == 1 else -1))
        update = self.update_step() if p.training else None
        sync = self.builder.single("sync", "inter-IPU sync", "io", p.sync_ps) if p.sync_ps else -1
        host = self.host_templates()
        cuttable = p.logical_stages == 1
        first_step_of = self.first_steps(steps) if cuttable else ()
        return RunTables(
            program=self.program,
            templates=self.builder.build(),
            slots=(HOST, *p.ipus),
            steps=tuple(steps),
            update=update,
            sync_template=sync,
            micro_batches=p.micro_batches,
            cuttable=cuttable,
            first_step_of=first_step_of,
            host=host,
            infeed_bytes=p.infeed_bytes,
            outfeed_bytes=p.outfeed_bytes,
        )

    def update_step(self) -> TimeStep:
        p = self.pipeline
        mb = p.micro_batches - 1
        work = []
        for ipu in p.ipus:
            ops: list[Op | None] = []
            for program in p.stages:
                if program.ipu != ipu:
                    continue
                ops += [self.timed(t, mb) for t in program.update_before]
                ops.append(self.block(program.weight_update, mb))
                ops += [self.timed(t, mb) for t in program.update_after]
            kept = tuple(op for op in ops if op is not None)
            if kept:
                work.append((ipu, kept))
        return TimeStep(tuple(work), (), 0, mb)

    def first_steps(self, steps: list[TimeStep]) -> tuple[int, ...]:
        m = self.pipeline.micro_batches
        first = [len(steps)] * (m + 1)
        for u in reversed(range(len(steps))):
            first[steps[u].micro_batch] = u
        for mb in reversed(range(m)):  # micro-batches without a step of their own
            first[mb] = min(first[mb], first[mb + 1])
        return tuple(first)


def compile_program(program: Program, options: HostOptions, link: HostLink) -> RunTables:
    """The run tables of ``program`` with these host options and link."""
    return _Compiler(program, options, link).compile()
