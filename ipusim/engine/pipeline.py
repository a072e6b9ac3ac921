"""The one pipeline driver (SimPy): time steps in lock step, copies over IPU-Links, syncs.

Every program is a pipeline (a single IPU is a pipeline of one stage). Every time step of the
run's tables (``ipusim.engine.tables``) runs in three phases:

1. each IPU with work runs its operations one after the other (blocks and transfers take their
   time; an infeed read or outfeed write meets the host processes and may wait);
2. once every IPU is done, the step's inter-stage copies cross the IPU-Links (copies between
   different IPU pairs run in parallel) and are recorded on the ``link`` track of both IPUs;
3. all IPUs sync (``sync_ps``), recorded on every IPU's ``sync`` track.

After the last micro-batch of a pipeline run each IPU runs its stages' weight updates, then all
sync. An execution of a single-stage program may end inside a pipeline run (the weight update
then comes in the execution that completes the run); a pipeline of several stages runs whole
runs only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ipusim.engine.host import Process
from ipusim.engine.tables import OP_FIXED, OP_INFEED, Op, TimeStep

if TYPE_CHECKING:
    from ipusim.engine.simulator import Simulation


class PipelineDriver:
    """Runs the program's pipeline for every execution of the simulation's plan."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.tables = sim.tables
        self.ipus = self.tables.ipus

    def _ops(self, ipu: int, ops: tuple[Op, ...], first_step: int) -> Process:
        sim = self.sim
        env = sim.env
        add = sim.recorder.add
        for op in ops:
            step = first_step + op.micro_batch
            if op.kind == OP_FIXED:
                start = int(env.now)
                add(op.template, ipu, start, start + op.duration_ps, step, op.micro_batch)
                yield env.timeout(op.duration_ps)
            elif op.kind == OP_INFEED:
                yield from sim.host.infeed_read(ipu, step)
            else:
                yield from sim.host.outfeed_write(ipu, step)

    def _step(self, step: TimeStep, first_step: int, sync_step: int) -> Process:
        env = self.sim.env
        if len(step.work) == 1:
            ipu, ops = step.work[0]
            yield from self._ops(ipu, ops, first_step)
        elif step.work:
            yield env.all_of(
                [env.process(self._ops(ipu, ops, first_step)) for ipu, ops in step.work]
            )
        add = self.sim.recorder.add
        if step.copies:
            start = int(env.now)
            durations = self.tables.templates.duration_ps
            for ipu, template in step.copies:
                add(template, ipu, start, start + int(durations[template]), first_step, -1)
            yield env.timeout(step.copy_ps)
        sync = self.tables.sync_template
        if sync >= 0:
            start = int(env.now)
            sync_ps = self.tables.pipeline.sync_ps
            for ipu in self.ipus:
                add(sync, ipu, start, start + sync_ps, sync_step, -1)
            yield env.timeout(sync_ps)

    def run_piece(self, run: int, lo: int, hi: int) -> Process:
        """Micro-batches ``lo`` to ``hi - 1`` of pipeline run ``run`` (and its weight update
        when ``hi`` ends the run)."""
        tables = self.tables
        m = tables.micro_batches
        first_step = run * m
        for u in tables.step_range(lo, hi):
            yield from self._step(tables.steps[u], first_step, first_step)
        if hi == m and tables.update is not None:
            yield from self._step(tables.update, first_step, first_step + m - 1)

    def run(self) -> Process:
        sim = self.sim
        step = 0
        for execution, n_steps in enumerate(sim.plan.executions):
            pieces = self.tables.pieces(step, n_steps)
            yield sim.launched[execution]
            for run, lo, hi in pieces:
                yield from self.run_piece(run, lo, hi)
            step += n_steps
            sim.finished[execution].succeed()
