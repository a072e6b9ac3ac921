"""What a fit / evaluate / predict ran, described for the session: its step, pipeline layout,
distribution and feeds. Lowering, simulating and reporting are :mod:`ipusim.session`'s."""

from __future__ import annotations

import sys
from typing import Any

from ipusim import session
from ipusim.config._env import using_synthetic_data
from ipusim.keras.engine.step import StepProgram
from ipusim.keras.extensions.retrace import attach_retrace
from ipusim.progress import ProgressBar
from ipusim.session import DistributionSpec, PipelineSpec, StepDescription
from ipusim.trace import Report

#: Simulations of at least this many executions show a progress bar on a terminal.
PROGRESS_MIN = 20

#: Bytes of each metric value in the outfeed (fp32).
_VALUE_BYTES = 4

#: Called with every Report a simulation makes (the session's hooks; ``ipusim run`` saves them).
ON_REPORT = session.ON_REPORT


def step_description(model: Any, program: StepProgram) -> StepDescription:
    """Describe a traced step program for lowering."""
    specs = [sym.spec for sym in program.feeds]
    batch = int(specs[0].shape[0]) if specs and specs[0].shape else 1
    infeed = sum(spec.nbytes for spec in specs)
    if program.kind == "predict":
        outfeed = sum(sym.spec.nbytes for sym in program.outputs)
        copies = len(program.outputs)
    else:
        # Keras outfeeds {metric name: result} every step: one scalar tensor per metric, the
        # loss tracker's included.
        container = getattr(model, "_metrics_container", None)
        copies = 1 + (container().count if container is not None else 0)
        outfeed = _VALUE_BYTES * copies
    if using_synthetic_data():  # TF_POPLAR_FLAGS=--use_synthetic_data: no host I/O at all
        infeed = outfeed = 0
    return StepDescription(
        kind=program.kind,
        graph=program.graph,
        fetches=tuple(program.executor.fetches),
        batch_size=batch,
        infeed_bytes=infeed,
        outfeed_bytes=outfeed,
        trainable=tuple(program.trainable),
        weights=tuple(model.weights),
        outfeed_copies=max(copies, 1),
    )


def feed_options(model: Any) -> session.FeedOptions:
    """The model's infeed and outfeed options and callback mode."""
    infeed = model._infeed_kwargs
    outfeed = model._outfeed_kwargs
    source, batch = getattr(model, "_infeed_source", (None, None))
    return session.FeedOptions(
        prefetch_depth=infeed.get("prefetch_depth"),
        buffer_depth=outfeed.get("buffer_depth"),
        outfeed_mode="all",
        asynchronous_callbacks=model._asynchronous_callbacks,
        source=source,
        source_batch=batch,
    )


def pipeline_spec(model: Any, program: StepProgram, config: Any) -> tuple[Any, int] | None:
    """The stage layout of a pipelined model for this step graph, and its depth; None if the
    model is not pipelined."""
    plan_of = getattr(model, "_pipeline_plan", None)
    plan = plan_of(program.graph) if plan_of is not None else None
    if plan is None:
        return None
    options = plan.options
    schedule = options.schedule.name.lower()
    recompute = bool(config is not None and config.allow_recompute)
    spec = PipelineSpec(
        dict(plan.invocation_stage),
        tuple(plan.device_mapping),
        schedule,
        recompute,
        recomputation_mode=options.recomputation_mode.name,
    )
    # Training runs N = gradient_accumulation_steps_per_replica micro-batches per pipeline run;
    # evaluate/predict run the whole execution as one pipeline (IPU TensorFlow's rule).
    depth = (
        options.gradient_accumulation_steps_per_replica
        if program.kind == "train"
        else model._steps_per_execution
    )
    return spec, depth


def distribution_spec(
    model: Any, config: Any, replicas: int, pipeline_options: Any
) -> DistributionSpec:
    """Replication and offloading from the pipelining options (pipelined models) or the
    gradient-accumulation optimizer arguments (others), and the device's remote buffers."""
    if pipeline_options is not None:
        return session.pipeline_distribution(pipeline_options, replicas, config)
    kwargs = getattr(model, "_gradient_accumulation_kwargs", {}) or {}
    return DistributionSpec(
        replicas=replicas,
        offload_optimizer_state=kwargs.get("offload_weight_update_variables"),
        replicated_optimizer_state_sharding=bool(
            kwargs.get("replicated_optimizer_state_sharding", False)
        ),
        offload_gradient_accumulation_buffers=bool(
            kwargs.get("offload_gradient_accumulation_buffers", False)
        ),
        remote_buffers=session.remote_buffers(config),
    )


def describe_step(
    model: Any,
    program: StepProgram,
    config: Any,
    steps_per_execution: int | None = None,
    replicas: int = 1,
) -> session.RunDescription:
    """The session's description of a traced step program."""
    ga = model._gradient_accumulation if program.kind == "train" else 1
    pipelined = pipeline_spec(model, program, config)
    spec, depth = pipelined if pipelined is not None else (None, None)
    if spec is not None and program.kind != "train" and steps_per_execution is not None:
        depth = steps_per_execution
    options = model._pipeline_plan(program.graph).options if spec is not None else None
    return session.RunDescription(
        step=step_description(model, program),
        gradient_accumulation=ga,
        pipeline=spec,
        micro_batches=depth,
        distribution=distribution_spec(model, config, replicas, options),
        feeds=feed_options(model),
    )


def lower_step(
    model: Any,
    program: StepProgram,
    config: Any,
    system: Any,
    steps_per_execution: int | None = None,
    replicas: int = 1,
) -> session.LoweredRun:
    """Lower a traced step program for ``system`` (raises OutOfMemoryError if it cannot fit)."""
    description = describe_step(model, program, config, steps_per_execution, replicas)
    return session.lower(description, config, system)


def simulate_program(
    model: Any,
    lowered: session.LoweredRun,
    executions: list[tuple[int, int]],
    progress: bool | None = None,
) -> tuple[Report, list[float]]:
    """Simulate ``executions`` ((epoch, steps) pairs) of a lowered step.

    Args:
        progress: show the progress of the simulation on stderr: True always (a bar redrawn in
            place on a terminal, else one line per tenth of the executions), False never, None
            (default) only on a terminal for runs of at least ``PROGRESS_MIN`` executions.

    Returns:
        The report, and the simulated seconds of each epoch.
    """
    if progress is None:
        progress = sys.stderr.isatty() and len(executions) >= PROGRESS_MIN
    bar = ProgressBar(len(executions), unit="executions", enabled=progress)
    with bar:
        run = session.simulate(lowered, executions, progress=bar.advance)
    attach_retrace(model, lowered, run.report)  # the advice may try a larger micro-batch
    return run.report, list(run.epoch_seconds)
