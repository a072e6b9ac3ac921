"""Traces of simulated runs and the reports made from them.

The engine appends instances of templates (``ipusim.trace.templates``) and counts every run in
``ipusim.trace.counters``; a :class:`Trace` holds the templates, the instances it kept (its
:class:`TraceDetail`), the whole-run counters and the replica layout, and makes records (integer
picoseconds) on demand. :class:`TraceRecorder` builds a trace record by record. From a trace and
the memory plans come:

- :func:`to_chrome_json`: the Chrome Trace Event Format, for Perfetto / chrome://tracing;
- :func:`utilisation`, :func:`throughput`, :func:`memory_report`, :func:`memory_items`,
  :func:`liveness_report`, :func:`timeline_summary`: pandas DataFrames and figures;
- :class:`Report`: what one simulated ``fit`` / ``evaluate`` / ``predict`` returns, with
  :meth:`Report.summary` and :meth:`Report.save` / :meth:`Report.load`.
"""

from ipusim.trace._schema import HOST_ROUND_TRIP_WORK
from ipusim.trace.building import TraceRecorder, concat, expand_replicas
from ipusim.trace.chrome import to_chrome_json
from ipusim.trace.records import (
    DETAIL_LEVELS,
    HOST,
    HOST_TRACKS,
    IPU_STATE_TRACKS,
    TRACE_PHASES,
    TRACKS,
    Trace,
    TraceDetail,
    TraceError,
)
from ipusim.trace.report import Report
from ipusim.trace.reports import (
    liveness_report,
    memory_items,
    memory_report,
    throughput,
    timeline_summary,
    utilisation,
)

__all__ = [
    "DETAIL_LEVELS",
    "HOST",
    "HOST_ROUND_TRIP_WORK",
    "HOST_TRACKS",
    "IPU_STATE_TRACKS",
    "TRACE_PHASES",
    "TRACKS",
    "Report",
    "Trace",
    "TraceDetail",
    "TraceError",
    "TraceRecorder",
    "concat",
    "expand_replicas",
    "liveness_report",
    "memory_items",
    "memory_report",
    "throughput",
    "timeline_summary",
    "to_chrome_json",
    "utilisation",
]
