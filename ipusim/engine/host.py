"""The host as SimPy processes: dataset producer, infeed copier, outfeed drainer, control loop.

Semantics (all times integer picoseconds):

Every activity is recorded as one instance of its template (``ipusim.engine.tables``).

- **Producer**: makes one micro-batch every ``batch × sample_ps`` and puts it on a host queue of
  ``host_queue_depth`` elements (it waits while the queue is full).
- **Infeed** (``HostOptions.infeed``): an infeed copier takes the next element, waits for a free
  slot (``prefetch_depth`` of them), copies it over the host→device link and marks it ready. With
  ``"overlapped"`` (I/O tiles) the IPU only takes ready elements and frees their slot, stalling
  when none is ready ("infeed stall"). With ``"staged"`` (IPU TensorFlow's default multi-buffered
  streams) the copier's copies are "infeed staging" on the host and the IPU then copies the
  staged element itself between its compute sets, at its port bandwidth ("infeed copy" on its
  ``host-io`` track). With ``"direct"`` there is no copier: the IPU waits for the host pipeline's
  next element and copies it over the host link itself. Every stream copy pays the link's
  ``copy_overhead_ps`` (the host sync that starts it).
- **Outfeed**: the IPU copies each step's results over the device→host link (``host-io``,
  "outfeed copy") into a buffer of ``buffer_depth`` elements and stalls ("outfeed stall") while it
  is full. The host drains one element per ``outfeed_drain_ps``. In ``"last"`` mode only the latest
  element is kept and the IPU never waits for the host.
- **Control loop**: before each execution the host spends ``per_execution_overhead_ps``, then
  launches it; after the IPU finishes and the outfeed is drained, the host reads the weights back
  (training) and runs the per-execution callbacks. The next execution starts after that.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from ipusim.trace import HOST

if TYPE_CHECKING:
    from ipusim.engine.simulator import Simulation

#: A SimPy process: it yields events and is resumed with their values (a queue's item, say).
Process = Generator[simpy.Event, Any, None]


class HostProcesses:
    """The host side of one simulation (the feeds of replica 0's first and last stage)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        env = sim.env
        opts = sim.options
        self.host = sim.tables.host
        self.h2d = simpy.Resource(env, capacity=1)
        self.port = simpy.Resource(env, capacity=1)
        self.d2h = simpy.Resource(env, capacity=1)
        self.host_queue = simpy.Store(env, capacity=opts.host_queue_depth)
        self.free_slots = simpy.Container(
            env, capacity=opts.prefetch_depth, init=opts.prefetch_depth
        )
        self.ready = simpy.Store(env)
        self.outfeed = simpy.Store(env, capacity=opts.buffer_depth)
        self.drained = 0
        self.written = 0
        self._drain_waiters: list[tuple[int, simpy.Event]] = []

    # ------------------------------------------------------------------ transfers
    def _copy(
        self, link: simpy.Resource, duration: int, template: int, owner: int, step: int
    ) -> Process:
        """Hold ``link`` for one transfer and record it on ``owner``'s host-io track."""
        env = self.sim.env
        with link.request() as request:
            yield request
            start = int(env.now)
            if duration:
                yield env.timeout(duration)
            self.sim.recorder.add(template, owner, start, int(env.now), step, -1)

    def _busy(self, template: int, duration: int, step: int) -> Process:
        """Spend ``duration`` of host time and record it as one instance of ``template``."""
        env = self.sim.env
        start = int(env.now)
        yield env.timeout(duration)
        self.sim.recorder.add(template, HOST, start, int(env.now), step, -1)

    # ------------------------------------------------------------------ infeed
    def producer(self) -> Process:
        produce_ps = self.sim.options.sample_ps * self.sim.program.batch_size
        for step in range(self.sim.plan.total_steps):
            if produce_ps:
                yield from self._busy(self.host.dataset, produce_ps, step)
            yield self.host_queue.put(step)

    def copier(self) -> Process:
        duration = self.host.infeed_copy_ps
        for _ in range(self.sim.plan.total_steps):
            step = yield self.host_queue.get()
            yield self.free_slots.get(1)
            yield from self._copy(self.h2d, duration, self.host.infeed_copy_host, HOST, step)
            yield self.ready.put(step)

    def infeed_read(self, ipu: int, step: int) -> Process:
        env = self.sim.env
        start = int(env.now)
        infeed = self.sim.options.infeed
        if infeed != "direct":
            yield self.ready.get()
            if env.now > start:
                self.sim.recorder.add(self.host.infeed_stall, ipu, start, int(env.now), step, -1)
            if infeed == "staged":  # the IPU copies the staged element itself
                yield from self._copy(
                    self.port, self.host.infeed_port_ps, self.host.infeed_copy_ipu, ipu, step
                )
            yield self.free_slots.put(1)
            return
        yield self.host_queue.get()
        if env.now > start:
            self.sim.recorder.add(self.host.infeed_stall, ipu, start, int(env.now), step, -1)
        yield from self._copy(
            self.h2d, self.host.infeed_copy_ps, self.host.infeed_copy_ipu, ipu, step
        )

    # ------------------------------------------------------------------ outfeed
    def outfeed_write(self, ipu: int, step: int) -> Process:
        env = self.sim.env
        yield from self._copy(
            self.d2h, self.host.outfeed_copy_ps, self.host.outfeed_copy, ipu, step
        )
        self.written += 1
        if self.sim.options.outfeed_mode == "last":
            self._count_drained(self.written)  # overwritten in place: nothing to wait for
            return
        start = int(env.now)
        yield self.outfeed.put(step)
        if env.now > start:
            self.sim.recorder.add(self.host.outfeed_stall, ipu, start, int(env.now), step, -1)

    def drainer(self) -> Process:
        opts = self.sim.options
        while True:
            step = yield self.outfeed.get()
            if opts.outfeed_drain_ps:
                yield from self._busy(self.host.drain, opts.outfeed_drain_ps, step)
            if opts.asynchronous_callbacks and opts.callback_ps:
                yield from self._busy(self.host.callback, opts.callback_ps, step)
            self._count_drained(self.drained + 1)

    def _count_drained(self, count: int) -> None:
        self.drained = count
        for target, event in list(self._drain_waiters):
            if self.drained >= target:
                self._drain_waiters.remove((target, event))
                event.succeed()

    def drained_to(self, count: int) -> simpy.Event:
        """An event that fires once ``count`` outfeed elements have been drained."""
        event = self.sim.env.event()
        if self.drained >= count:
            event.succeed()
        else:
            self._drain_waiters.append((count, event))
        return event

    # ------------------------------------------------------------------ control
    def _host_work(self, template: int, duration: int, step: int) -> Process:
        yield from self._busy(template, duration, step)
        self.sim.recorder.host_round_trip(duration)

    def control(self) -> Process:
        sim = self.sim
        env = sim.env
        opts = sim.options
        recorder = sim.recorder
        steps_done = 0
        window_start = 0
        for execution, n_steps in enumerate(sim.plan.executions):
            if opts.per_execution_overhead_ps:
                yield from self._host_work(
                    self.host.overhead, opts.per_execution_overhead_ps, steps_done
                )
            sim.launched[execution].succeed()
            yield sim.finished[execution]
            steps_done += n_steps
            if sim.tables.outfeed_bytes:
                yield self.drained_to(steps_done)
            if sim.program.readback_bytes:
                start = int(env.now)
                yield from self._copy(
                    self.d2h, self.host.readback_ps, self.host.readback, HOST, steps_done - 1
                )
                recorder.host_round_trip(int(env.now) - start)
            if opts.callback_ps and not opts.asynchronous_callbacks:
                yield from self._host_work(self.host.callbacks, opts.callback_ps, steps_done - 1)
            window_end = int(env.now)  # integral: every timeout is whole picoseconds
            sim.execution_end_ps.append(window_end)
            recorder.execution_done(window_start, window_end)
            window_start = window_end
            if sim.progress is not None:
                sim.progress()
