"""The simulated clock during ``fit`` / ``evaluate`` / ``predict``: each execution ends when the
simulated IPU ends it.

When a simulated clock is in force (:func:`ipusim.session.simulated_time`, installed by
``ipusim run``), ``fit`` simulates the executions it is about to run before running them
(:func:`preview_fit`: the plan is known from the data, ``steps_per_execution`` and the epochs).
While the numbers are computed, every executed step moves the clock to where the simulation puts
it (:meth:`FitClock.step_done`): step ``j`` of an execution of ``n`` steps ends ``(j + 1) / n``
of the way through that execution, so callbacks called per execution see its end. ``evaluate``
and ``predict`` do the same with their own previews (validation inside ``fit`` is not simulated
and does not move the clock). Callbacks, History and the progress bar therefore read the
simulated time. If the fit ran as planned (no early stop) the preview is its report; otherwise
the executions that ran are simulated again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ipusim import session

__all__ = ["FitClock", "planned_fit_executions", "preview_fit"]


def planned_fit_executions(
    steps_per_epoch: int, steps_per_execution: int, initial_epoch: int, epochs: int
) -> list[tuple[int, int]]:
    """The (epoch, steps) executions a fit runs when nothing stops it (the steps per execution
    divide the epoch, which the data check enforces)."""
    per_epoch = steps_per_epoch // steps_per_execution
    return [
        (epoch, steps_per_execution)
        for epoch in range(initial_epoch, epochs)
        for _ in range(per_epoch)
    ]


@dataclass
class FitClock:
    """A fit's simulated executions, moving the clock as they run.

    Attributes:
        clock: the simulated clock.
        run: the simulation of the planned executions (not yet published).
        executions: the planned executions.
        base_ps: the clock when the fit began (simulated picoseconds).
        batches_per_step: calls of :meth:`step_done` per step (the replicas, when the loop runs
            each replica's batch on its own as evaluate and predict do).
        batches_done: calls so far.
    """

    clock: Any
    run: session.SimulatedRun
    executions: list[tuple[int, int]]
    base_ps: int
    batches_per_step: int = 1
    batches_done: int = 0

    def step_done(self) -> None:
        """One more step (or replica batch) ran: move the clock to the end of its execution's
        share of steps."""
        self.batches_done += 1
        done = self.batches_done // self.batches_per_step
        if done == 0:
            return
        index = 0
        while index < len(self.executions) and done > self.executions[index][1]:
            done -= self.executions[index][1]
            index += 1
        if index == len(self.executions):
            return  # more steps than planned: the clock waits for the report
        steps = self.executions[index][1]
        ends = self.run.report.trace.execution_end_ps
        start = int(ends[index - 1]) if index > 0 else 0
        at = start + (int(ends[index]) - start) * done // steps
        self.clock.advance_to(self.base_ps + at)

    def ran_as_planned(self, log: list[tuple[int, int]]) -> bool:
        """Whether the executions that ran are the planned ones."""
        return list(log) == self.executions

    def settle(self) -> None:
        """The next report published ends this fit: the clock moves to the fit's start plus the
        report's duration."""
        self.clock.expect_run_from(self.base_ps)


def preview_fit(
    lowered: Any, executions: list[tuple[int, int]], batches_per_step: int = 1
) -> FitClock | None:
    """Simulate the planned executions of a fit (or evaluate / predict) before they run, when
    a simulated clock is in force (None otherwise, or when nothing is planned)."""
    clock = session.active_clock()
    if clock is None or lowered is None or not executions:
        return None
    run = session.simulate(lowered, executions, publish=False)
    return FitClock(clock, run, executions, clock.elapsed_ps, max(int(batches_per_step), 1))
