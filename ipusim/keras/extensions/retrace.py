"""Tracing a Keras model's step again at another micro-batch, so the measured advice
(:mod:`ipusim.session.advice`) can try a larger micro-batch by simulating the program the model
would really run at that batch size."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ipusim import session
from ipusim.keras.engine.nest import map_structure
from ipusim.keras.engine.step import StepProgram
from ipusim.session.advice import WhatIf
from ipusim.trace import Report

__all__ = ["attach_retrace"]


def _rebatched(spec: Any, batch: int) -> Any:
    """``spec`` (a structure of TensorSpecs, or None) with ``batch`` as its leading dimension."""
    if spec is None:
        return None
    return map_structure(lambda s: s.with_shape((batch, *s.shape[1:])), spec)


def attach_retrace(model: Any, lowered: session.LoweredRun, report: Report) -> None:
    """Give ``report``'s re-simulation handle a way to trace ``lowered``'s step again at
    another micro-batch (per replica). Nothing happens when the step is not one of ``model``'s
    traced programs."""
    graph = lowered.description.step.graph
    program = next((p for p in model._programs.values() if p.graph is graph), None)
    # A simulated run's handle is a WhatIf (session.run sets it), the report's type its Protocol.
    if program is None or not isinstance(report.what_if, WhatIf):
        return
    description = lowered.description
    pipelined_inference = description.pipeline is not None and program.kind != "train"
    steps_per_execution = description.micro_batches if pipelined_inference else None
    replicas = description.distribution.replicas
    config = lowered.config
    kind = program.kind

    def retrace(batch: int) -> session.RunDescription:
        from ipusim.keras.extensions.simulation import describe_step

        x_spec, y_spec, sw_spec = (_rebatched(s, batch) for s in program.specs)
        step = StepProgram(model, kind, x_spec, y_spec, sw_spec)
        described = describe_step(model, step, config, steps_per_execution, replicas)
        # Keras' adapter for arrays gathers batches of the new size (a Dataset's pipeline is
        # costed as the user built it, whatever this field says).
        return replace(described, feeds=replace(described.feeds, source_batch=batch))

    report.what_if.retrace = retrace
