"""The one entry point both front ends call: a described step → lowering → engine → Report → hooks.

The Keras extensions (``ipusim.keras.extensions.simulation``) and the custom-loop runtime
(``ipusim.compat.runtime.simulation``) build a :class:`RunDescription` and call :func:`lower`
and :func:`simulate`; :data:`ON_REPORT` hooks see every Report (``ipusim run`` saves them).
:func:`lower` resolves the IPUConfig and the system once into a typed :class:`SessionPlan`
(precision, planner options, host figures, processes, engine settings), from which lowering, the
host's behaviour and the engine's settings are taken.

The session also re-exports what a description is made of (:class:`StepDescription`,
:class:`OptimizerCost`, :class:`PipelineSpec`, :class:`DistributionSpec`) and the one shards rule
(:func:`shard_count`, :func:`ipus_per_replica`, from ``ipusim.lowering.shards``, and
:func:`replication_factor`, that rule times the host processes of multi-replica distribution), so a front end needs nothing from ``ipusim.lowering`` or
``ipusim.engine``.
"""

from ipusim.lowering import OptimizerCost, PipelineSpec, Program, StepDescription
from ipusim.lowering.distribution import DistributionSpec
from ipusim.lowering.schedules import depth_multiple as pipeline_depth_multiple
from ipusim.lowering.shards import ipus_per_replica, shard_count
from ipusim.session.clock import active_clock, simulated_time
from ipusim.session.options import (
    EngineSettings,
    FeedOptions,
    engine_settings,
    environment,
    host_link,
    host_options,
    local_replicas,
    pipeline_distribution,
    process_count,
    remote_buffers,
    replication_factor,
)
from ipusim.session.plan import SessionPlan, resolve_plan
from ipusim.session.run import (
    ON_REPORT,
    LoweredRun,
    RunDescription,
    SimulatedRun,
    lower,
    make_report,
    publish,
    simulate,
)

__all__ = [
    "ON_REPORT",
    "DistributionSpec",
    "EngineSettings",
    "FeedOptions",
    "LoweredRun",
    "OptimizerCost",
    "PipelineSpec",
    "Program",
    "RunDescription",
    "SessionPlan",
    "SimulatedRun",
    "StepDescription",
    "engine_settings",
    "environment",
    "host_link",
    "host_options",
    "ipus_per_replica",
    "local_replicas",
    "lower",
    "make_report",
    "publish",
    "active_clock",
    "simulated_time",
    "pipeline_depth_multiple",
    "pipeline_distribution",
    "process_count",
    "remote_buffers",
    "replication_factor",
    "resolve_plan",
    "shard_count",
    "simulate",
]
