"""The one way a described step becomes a Report: lower → simulate → report → hooks.

Both front ends (the Keras extensions and the custom-loop runtime of ``ipusim.compat``) only
describe the step (:class:`RunDescription`: the step graph, accumulation, optimizer cost,
pipeline layout, distribution, feeds) and call :func:`lower` (before the numerics run, so a
program that does not fit fails first) and :func:`simulate` (after, with the executions that
ran). Lowering, the engine and the report builder are reached from here only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ipusim.data.datasets import data_note
from ipusim.engine import HostLink, HostOptions, RunPlan, SimulationResult
from ipusim.engine import simulate as run_engine
from ipusim.hardware.specs import SystemSpec
from ipusim.lowering import PipelineSpec, Program, StepDescription
from ipusim.lowering import lower as lower_program
from ipusim.lowering.distribution import DistributionSpec
from ipusim.lowering.memory import build_plan
from ipusim.session.options import FeedOptions, traced
from ipusim.session.plan import SessionPlan, resolve_plan
from ipusim.trace import Report

if TYPE_CHECKING:
    from ipusim.config import IPUConfig

#: A report's scalar figures (``Report.extra``).
Figures = Mapping[str, object]

#: Called with every Report a simulation makes, in order (``ipusim run`` saves them from here).
ON_REPORT: list[Callable[[Report], None]] = []


@dataclass(frozen=True)
class RunDescription:
    """A step as a front end describes it.

    Attributes:
        step: the traced step (graph, fetches, batch, feed bytes, variables).
        gradient_accumulation: micro-batch steps per weight update (training).
        pipeline: the stage layout of a pipelined step (None: a single IPU).
        micro_batches: micro-batches per pipeline run (default ``gradient_accumulation``).
        distribution: replication and Streaming Memory offloading.
        feeds: the infeed / outfeed queues and callbacks.
        read_back_weights: the host reads the weights back after each execution (Keras
            training; custom loops do not).
        label: what the step is, for the report (``"segment"`` in ``extra``).
    """

    step: StepDescription
    gradient_accumulation: int = 1
    pipeline: PipelineSpec | None = None
    micro_batches: int | None = None
    distribution: DistributionSpec = field(default_factory=DistributionSpec)
    feeds: FeedOptions = field(default_factory=FeedOptions)
    read_back_weights: bool = True
    label: str = ""


@dataclass(frozen=True)
class LoweredRun:
    """A lowered step and everything needed to simulate it.

    Attributes:
        program: the lowered program (replica 0).
        description: what it was lowered from.
        host: the host's behaviour.
        link: replica 0's host link.
        plan: the IPUConfig and the system, resolved.
    """

    program: Program
    description: RunDescription
    host: HostOptions
    link: HostLink
    plan: SessionPlan

    @property
    def config(self) -> IPUConfig | None:
        """The IPUConfig (None: none configured)."""
        return self.plan.config

    @property
    def system(self) -> SystemSpec:
        """The system simulated."""
        return self.plan.system

    def on(self, plan: SessionPlan) -> LoweredRun:
        """The same program run by ``plan``'s host (another host preset, say)."""
        host, link = _host_of(plan, self.description, self.program)
        return replace(self, plan=plan, host=host, link=link)


def _host_of(
    plan: SessionPlan, description: RunDescription, program: Program
) -> tuple[HostOptions, HostLink]:
    """The host's behaviour and replica 0's host link for ``program``."""
    pipeline = description.pipeline
    schedule = pipeline.schedule if pipeline is not None else None
    return (
        plan.host_options(description.feeds, schedule, program.replicas),
        plan.host_link(program),
    )


def lower(description: RunDescription, config: IPUConfig | None, system: SystemSpec) -> LoweredRun:
    """Lower a described step for ``system`` (raises ``OutOfMemoryError`` if it cannot fit),
    with the I/O tiles IPU TensorFlow reserves for it on the IPUs with host I/O."""
    plan = resolve_plan(config, system).for_step(description.step)
    program = lower_program(
        description.step,
        plan.system,
        precision=plan.precision,
        gradient_accumulation=description.gradient_accumulation,
        pipeline=description.pipeline,
        micro_batches=description.micro_batches,
        distribution=plan.distribution(description.distribution),
        planner=plan.planner,
        recompute=plan.recompute,
        io_tiles=plan.io_tiles,
    )
    if not description.read_back_weights:
        program = replace(program, readback_bytes=0)
    host, link = _host_of(plan, description, program)
    return LoweredRun(program, description, host, link, plan)


@dataclass(frozen=True)
class SimulatedRun:
    """A simulation's report and the simulated seconds of each epoch."""

    report: Report
    epoch_seconds: tuple[float, ...]
    engine: str


def simulate(
    lowered: LoweredRun,
    executions: Sequence[tuple[int, int]],
    *,
    progress: Callable[[], None] | None = None,
    extra: Figures | None = None,
    publish: bool = True,
) -> SimulatedRun:
    """Simulate ``executions`` ((epoch, steps) pairs) of a lowered step and make its Report
    (passed to every :data:`ON_REPORT` hook).

    Args:
        lowered: the lowered step.
        executions: the executions that ran, in order.
        progress: called once per execution simulated.
        extra: further scalar figures for the report.
        publish: pass the report to the hooks (False: a preview of executions about to run;
            :func:`publish` it later if they ran as planned).
    """
    plan = RunPlan(tuple(n for _, n in executions), tuple(e for e, _ in executions))
    settings = traced(lowered.plan.engine)
    result = run_engine(
        lowered.program,
        plan,
        lowered.host,
        lowered.link,
        progress,
        engine=settings.engine,
        detail=settings.detail,
        record_budget=settings.record_budget,
    )
    figures: dict[str, object] = {
        "executions": len(plan.executions),
        "steps_per_execution": max(plan.executions),
        "engine": result.engine,
        "host": host_preset_name(lowered),
    }
    rate = lowered.plan.host.dataset_rate
    if rate is not None and rate > 0:
        figures["host_dataset_rate"] = rate
    if lowered.description.label:
        figures["segment"] = lowered.description.label
    figures.update(extra or {})
    report = make_report(
        lowered.program, result, lowered.system, lowered.plan.precision, figures, publish
    )
    from ipusim.session.advice import WhatIf

    # A frozen dataclass: set the re-simulation handle the way its __post_init__ sets fields.
    object.__setattr__(
        report, "what_if", WhatIf(lowered, executions, report.throughput_samples_per_s)
    )
    return SimulatedRun(report, _epoch_seconds(plan, result), result.engine)


def _epoch_seconds(plan: RunPlan, result: SimulationResult) -> tuple[float, ...]:
    """Simulated seconds of each epoch of ``plan`` (s)."""
    epoch_end = dict(zip(plan.epochs, result.execution_end_ps))  # each epoch's last execution
    seconds, start = [], 0
    for epoch in sorted(epoch_end):
        seconds.append((epoch_end[epoch] - start) / 1e12)
        start = epoch_end[epoch]
    return tuple(seconds)


def publish(report: Report) -> None:
    """Pass ``report`` to every :data:`ON_REPORT` hook, in order."""
    for hook in tuple(ON_REPORT):
        hook(report)


def _data_provenance() -> dict[str, str]:
    """``{"data": ...}`` when a Keras data set was synthesised in this process (timing valid,
    accuracy not), so the report says so; empty otherwise."""
    note = data_note()
    return {"data": note} if note else {}


def host_preset_name(lowered: LoweredRun) -> str:
    """The host preset the run was simulated on (``cfg.ipusim.host``, else the system's own)."""
    from ipusim.hardware.hosts import default_host, load_host

    return load_host(lowered.plan.host.preset or default_host(lowered.system)).name


def make_report(
    program: Program,
    result: SimulationResult,
    system: SystemSpec,
    precision_name: str,
    extra: Figures,
    publish_report: bool = True,
) -> Report:
    """The Report of a simulation of ``program``: replica 0's trace with the replica layout,
    replica 0's memory plans, peaks per IPU, the common figures plus ``extra``; passed to the
    :data:`ON_REPORT` hooks (unless ``publish_report`` is False)."""
    per_replica = max(program.ipus_per_replica, 1)
    # An IPU of the replica that runs no stage (device_mapping [1, 1], or the 4th IPU of a
    # 3-stage pipeline) holds nothing; it still gets its (empty) row in the memory report.
    used = {memory.ipu for memory in program.memory}
    idle = tuple(
        build_plan(ipu, [], system.ipu.tiles, system.ipu.sram_bytes_per_tile)
        for ipu in range(per_replica)
        if ipu not in used
    )
    plans = tuple(sorted((*program.memory, *idle), key=lambda memory: memory.ipu))
    peak = dict.fromkeys(
        range(program.replicas * per_replica), system.ipu.peak_flops(precision_name)
    )
    report = Report(
        trace=result.trace,
        samples=result.samples,
        steps=result.steps,
        seconds=result.end_ps / 1e12,
        memory_plans=plans,
        peak_flops_per_s=peak,
        system_name=system.name,
        kind=program.kind,
        extra={
            "precision": precision_name,
            "gradient_accumulation": program.gradient_accumulation,
            "replicas": program.replicas,
            "pipelined": program.pipelined,
            **_data_provenance(),
            **extra,
        },
    )
    if publish_report:
        publish(report)
    return report
