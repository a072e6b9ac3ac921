"""How a traced ``pipeline()`` is described to the session (``ipusim.session``).

The pipeline is a :class:`~ipusim.session.RunDescription` with a
:class:`~ipusim.session.PipelineSpec`: the stage invocations, the physical ``device_mapping``,
the schedule, recomputation when ``IPUConfig.allow_recompute`` is on, and the stage groups: a
list of functions in one slot of ``pipeline()`` (concurrent stages) is one group of physical
stages, each on its own IPU, run by lowering's pipeline spec and the engine's one pipeline driver
(see :mod:`ipusim.lowering.pipeline`). The offloading options are its
:class:`~ipusim.session.DistributionSpec`; one call is ``gradient_accumulation_count ×
repeat_count`` steps.
"""

from __future__ import annotations

from typing import Any

from ipusim import session
from ipusim.compat.runtime.simulation import SegmentTiming, feed_options
from ipusim.session import PipelineSpec, StepDescription


def describe_pipeline(runtime: Any, config: Any, replicas: int) -> session.RunDescription:
    """The session's description of ``runtime`` (a traced ``pipeline()``)."""
    args = runtime.args
    batch, infeed_bytes, outfeed_bytes = runtime.step_bytes()
    step = StepDescription(
        kind="train" if args.training else "predict",
        graph=runtime.graph,
        fetches=tuple(runtime.compiled.fetches),
        batch_size=batch,
        infeed_bytes=infeed_bytes,
        outfeed_bytes=outfeed_bytes,
        trainable=tuple(runtime.variables),
        weights=tuple(runtime.graph.variables),
    )
    distribution = session.pipeline_distribution(args.options, replicas, config)
    spec = PipelineSpec(
        dict(runtime.invocation_stage),
        tuple(args.device_mapping),
        args.schedule.name.lower(),
        bool(config is not None and config.allow_recompute),
        tuple(tuple(g) for g in args.groups),
        recomputation_mode=args.recomputation_mode.name,
    )
    return session.RunDescription(
        step=step,
        gradient_accumulation=args.gac,
        pipeline=spec,
        micro_batches=args.gac,
        distribution=distribution,
        feeds=feed_options(
            runtime.infeed.prefetch_depth if runtime.infeed is not None else 1, runtime.outfeed
        ),
        read_back_weights=False,
        label="pipeline",
    )


def lower_pipeline_run(runtime: Any, config: Any, system: Any, replicas: int) -> SegmentTiming:
    """Lower ``runtime`` (a traced ``pipeline()``) for ``system`` with ``replicas`` replicas
    (lowering checks that the replicas fit the system)."""
    args = runtime.args
    description = describe_pipeline(runtime, config, replicas)
    steps = args.gac * args.repeat_count
    return SegmentTiming(session.lower(description, config, system), lambda: steps, "pipeline")
