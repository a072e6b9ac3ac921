"""Run a lowered program: the compiled fast path when the run is a max-plus recurrence, SimPy
otherwise; both give the same end times and the same trace.

``engine="auto"`` (``IPUConfig.ipusim.engine``) picks the fast path when both hold:

- :func:`fast_path_blockers` finds nothing on the outfeed's side that could make the IPUs wait
  for the host (a slow outfeed drain, per-element callbacks) - the input pipeline, its dataset
  rate and queues included, is part of the recurrence;
- the run is long enough to pay for loading the fast path's compiled code: at least
  :data:`AUTO_FAST_MIN_INSTANCES` block instances (the SimPy processes' work, from
  :func:`~ipusim.engine.recorder.execution_sizes`). Below that SimPy finishes first, because
  loading Numba and the cached kernel costs about a second of a short run.

and SimPy otherwise. ``"fast"`` insists on the fast path (an error names what stands in its
way); ``"simpy"`` always uses SimPy. :mod:`ipusim.engine.fast` (and through it Numba) is
imported only when the fast path runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy
from simpy.core import SimTime
from simpy.events import NORMAL, Event, EventPriority

from ipusim.choices import ENGINES
from ipusim.engine.host import HostProcesses
from ipusim.engine.options import HostLink, HostOptions, RunPlan
from ipusim.engine.pipeline import PipelineDriver
from ipusim.engine.recorder import (
    DEFAULT_RECORD_BUDGET,
    InstanceRecorder,
    KeepPlan,
    execution_sizes,
    keep_plan,
    trace_detail,
)
from ipusim.engine.tables import RunTables, compile_program
from ipusim.engine.time_limit import check_run_end, check_run_length
from ipusim.errors import ConfigurationError
from ipusim.lowering.program import Program
from ipusim.trace import Trace
from ipusim.trace.counters import Counters

#: ``engine="auto"`` runs SimPy below this many block instances: there SimPy ends before the fast
#: path has loaded Numba and its cached kernel. M: bench/bench_engine_choice.py (the MNIST CNN,
#: timing-only; bench/results/engine_choice.json): SimPy takes 5-8 us per instance and loading
#: 0.37-0.47 s on a quiet machine, so they cross near 60,000 instances; on a loaded one 20-35 us
#: and 1.9-2.8 s, crossing near 60,000-80,000. Below both crossings.
AUTO_FAST_MIN_INSTANCES = 50_000


def fast_path_blockers(tables: RunTables, options: HostOptions) -> list[str]:
    """Why the run needs the SimPy engine: what of the outfeed's host side could make the IPUs
    wait (empty when the fast path applies)."""
    reasons = []
    draining = tables.outfeed_bytes and options.outfeed_mode == "all"
    if draining and options.outfeed_drain_ps:
        reasons.append("the host drains the outfeed slowly (IPUConfig.ipusim.host_outfeed_drain_s)")
    if draining and options.asynchronous_callbacks and options.callback_ps:
        reasons.append("asynchronous callbacks run on every outfeed element")
    return reasons


def choose_engine(engine: str, tables: RunTables, plan: RunPlan, options: HostOptions) -> str:
    """The backend that runs: ``"fast"`` or ``"simpy"`` (see the module docstring).

    Raises:
        ConfigurationError: an unknown engine, or ``"fast"`` for a run the host can hold back.
    """
    if engine not in ENGINES:
        raise ConfigurationError(f"engine must be one of {ENGINES}, received {engine!r}")
    blockers = fast_path_blockers(tables, options)
    if engine == "fast" and blockers:
        raise ConfigurationError(
            "engine='fast' needs a run whose outfeed the host cannot hold back, but "
            + "; ".join(blockers)
            + ". Use engine='auto' or 'simpy'."
        )
    if engine == "auto":
        instances = int(execution_sizes(tables, plan)[1].sum())
        long_enough = instances >= AUTO_FAST_MIN_INSTANCES
        return "fast" if long_enough and not blockers else "simpy"
    return engine


@dataclass(frozen=True)
class SimulationResult:
    """What a simulation produced.

    Attributes:
        trace: the run's trace (replica 0 and the replica layout; see :class:`Trace`).
        end_ps: when the last execution (including its host work) finished.
        execution_end_ps: end time of each execution.
        steps: micro-batch steps run (per replica).
        samples: samples consumed (all replicas).
        events: SimPy events scheduled (0 on the fast path).
        engine: ``"fast"`` or ``"simpy"``: the backend that ran.
    """

    trace: Trace
    end_ps: int
    execution_end_ps: tuple[int, ...]
    steps: int
    samples: int
    events: int = 0
    engine: str = "simpy"


class CountingEnvironment(simpy.Environment):
    """A SimPy environment that counts the events it schedules (for benchmarks)."""

    def __init__(self) -> None:
        super().__init__()
        self.events_scheduled = 0

    def schedule(self, event: Event, priority: EventPriority = NORMAL, delay: SimTime = 0) -> None:
        self.events_scheduled += 1
        super().schedule(event, priority, delay)


class Simulation:
    """One SimPy run of ``program`` following ``plan`` (build it, then call :meth:`run`)."""

    def __init__(
        self,
        program: Program,
        plan: RunPlan,
        options: HostOptions,
        link: HostLink,
        progress: Callable[[], None] | None = None,
        *,
        tables: RunTables | None = None,
        keep_steps: int | None = None,
    ) -> None:
        self.program = program
        self.plan = plan
        self.progress = progress  # called after each execution (e.g. to advance a progress bar)
        self.options = options
        self.link = link
        self.tables = tables or compile_program(program, options, link)
        self.env = CountingEnvironment()
        drain_overlap = bool(
            self.tables.outfeed_bytes and options.outfeed_mode == "all" and options.outfeed_drain_ps
        )
        keep = plan.total_steps if keep_steps is None else keep_steps
        self.recorder = InstanceRecorder(self.tables, keep, drain_overlap)
        self.launched = [self.env.event() for _ in plan.executions]
        self.finished = [self.env.event() for _ in plan.executions]
        self.execution_end_ps: list[int] = []
        self.driver = PipelineDriver(self)
        self.host = HostProcesses(self)

    def run(self) -> tuple[Counters, dict[str, np.ndarray], tuple[int, ...], int]:
        """Run to the end; returns the counters, the kept instances, the execution ends and the
        events scheduled."""
        env = self.env
        if self.tables.infeed_bytes:
            env.process(self.host.producer())
            if self.options.infeed != "direct":
                env.process(self.host.copier())
        if self.options.outfeed_mode == "all":
            env.process(self.host.drainer())
        env.process(self.driver.run())
        control = env.process(self.host.control())
        env.run(until=control)
        return (
            self.recorder.counters(),
            self.recorder.instances(),
            tuple(self.execution_end_ps),
            self.env.events_scheduled,
        )


def simulate(
    program: Program,
    plan: RunPlan,
    options: HostOptions | None = None,
    link: HostLink | None = None,
    progress: Callable[[], None] | None = None,
    *,
    engine: str = "auto",
    detail: str = "auto",
    record_budget: int = DEFAULT_RECORD_BUDGET,
) -> SimulationResult:
    """Run ``program`` for ``plan`` and return the trace and figures.

    Args:
        program: the lowered program.
        plan: the executions to run.
        options: the host's behaviour (default :class:`HostOptions`).
        link: the host link of replica 0 (default 12.5 GB/s each way).
        progress: called once after each execution (e.g. to advance a progress bar).
        engine: ``"auto"``, ``"fast"`` or ``"simpy"`` (see the module docstring).
        detail: what the trace keeps: ``"auto"`` (full detail of the first executions within
            ``record_budget`` records, counters for the rest), ``"full"``, ``"blocks"`` or
            ``"summary"``.
        record_budget: records the ``"auto"`` detail keeps at most.

    Raises:
        ValueError: an unknown engine or detail, or ``engine="fast"`` for a run the host can
            hold back.
    """
    options = options or HostOptions()
    link = link or HostLink(12.5e9, 12.5e9, 0)
    check_run_length(program, plan, options)
    tables = compile_program(program, options, link)
    keep = keep_plan(tables, plan, detail, record_budget)
    chosen = choose_engine(engine, tables, plan, options)
    if chosen == "fast":
        counters, instances, execution_end = _run_fast(tables, plan, options, keep, progress)
        events = 0
    else:
        sim = Simulation(
            program, plan, options, link, progress, tables=tables, keep_steps=keep.steps
        )
        counters, instances, execution_end, events = sim.run()
    end_ps = execution_end[-1] if execution_end else 0
    check_run_end(end_ps, execution_end)
    trace = Trace.build(
        tables.templates,
        instances,
        counters,
        end_ps,
        replicas=program.replicas,
        ipus_per_replica=max(program.ipus_per_replica, max(program.pipeline.ipus) + 1),
        detail=trace_detail(keep, plan),
        execution_end_ps=execution_end,
    )
    return SimulationResult(
        trace=trace,
        end_ps=end_ps,
        execution_end_ps=execution_end,
        steps=plan.total_steps,
        samples=plan.total_steps * program.samples_per_step,
        events=events,
        engine=chosen,
    )


def _run_fast(
    tables: RunTables,
    plan: RunPlan,
    options: HostOptions,
    keep: KeepPlan,
    progress: Callable[[], None] | None,
) -> tuple[Counters, dict[str, np.ndarray], tuple[int, ...]]:
    """The fast path's counters, kept instances and execution ends (imported here: loading it
    costs Numba and its compiled kernel, paid only by runs that take it)."""
    from ipusim.engine.fast import run_fast

    instances, count, stretch, waiting, ends = run_fast(tables, plan, options, keep)
    if progress is not None:
        for _ in plan.executions:
            progress()
    return Counters(tables.slots, count, stretch, waiting), instances, tuple(int(e) for e in ends)
