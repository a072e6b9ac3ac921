"""Simulated serving figures: per-request latency and throughput of one exported program.

An exported program runs ``iterations`` requests per execution: the host launches the on-device
loop (paying its per-execution overhead once), each request's inputs cross the host link into the
device, the IPU(s) compute the step (pipelined over the stages of a pipelined model) and the
results cross back. With every request queued when the execution starts, the simulation of one
execution gives, for request ``i``:

    latency_i = end of the device->host copy of its results - start of the host->device copy of
                its inputs (their staging near the IPU when the infeed is multi-buffered)

and the execution's length ``T`` gives the throughput ``iterations * batch_size / T`` samples per
second (times the replicas, when the program is replicated). Both come from the trace of the
simulated execution ("infeed staging" / "infeed copy" / "outfeed copy" records, numbered by
request; replicas run in lock step, so replica 0's figures stand for all).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ipusim.cost.units import PS_PER_S
from ipusim.errors import TraceError
from ipusim.trace import Report

__all__ = ["ServingTiming", "timing_from_report"]


@dataclass(frozen=True)
class ServingTiming:
    """Serving figures of an exported program, from its simulated execution.

    Attributes:
        batch_size: samples in one request.
        iterations: requests served by one execution of the on-device loop.
        execution_s: simulated seconds of one execution, host overhead included.
        request_latency_s: per request, seconds from its inputs leaving the host to its results
            arriving there.
        replicas: data-parallel copies of the program serving requests side by side (each
            replica serves ``iterations`` requests per execution).
    """

    batch_size: int
    iterations: int
    execution_s: float
    request_latency_s: tuple[float, ...]
    replicas: int = 1

    @property
    def mean_latency_s(self) -> float:
        """Mean request latency (seconds)."""
        return float(np.mean(self.request_latency_s))

    @property
    def max_latency_s(self) -> float:
        """Worst request latency (seconds)."""
        return float(np.max(self.request_latency_s))

    @property
    def requests_per_s(self) -> float:
        """Requests served per second (all replicas) when executions run back to back."""
        return self.iterations * self.replicas / self.execution_s

    @property
    def throughput_samples_per_s(self) -> float:
        """Samples served per second (all replicas) when executions run back to back."""
        return self.requests_per_s * self.batch_size

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["request_latency_s"] = list(self.request_latency_s)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServingTiming:
        return cls(
            int(data["batch_size"]),
            int(data["iterations"]),
            float(data["execution_s"]),
            tuple(float(v) for v in data["request_latency_s"]),
            int(data.get("replicas", 1)),
        )

    def summary(self) -> str:
        """One line: latency and throughput."""
        return (
            f"{self.iterations} requests of {self.batch_size} per execution: latency mean "
            f"{self.mean_latency_s * 1e6:.1f} us, max {self.max_latency_s * 1e6:.1f} us; "
            f"{self.throughput_samples_per_s:,.0f} samples/s"
        )


def timing_from_report(report: Report, batch_size: int, iterations: int) -> ServingTiming:
    """The serving figures of a simulated execution of ``iterations`` requests.

    Raises:
        TraceError: the trace does not hold one input copy and one output copy per request
            (an export simulates its execution keeping every record, so this is a bug).
    """
    df = report.trace.to_dataframe()
    inputs = df[df["name"].isin(["infeed staging", "infeed copy"])]
    infeed = inputs.groupby("step")["start_ps"].min()
    outfeed = df[df["name"] == "outfeed copy"].groupby("step")["end_ps"].max()
    steps = list(range(iterations))
    if list(infeed.index) != steps or list(outfeed.index) != steps:
        raise TraceError(
            f"the simulated execution should copy {iterations} requests in and out; its trace "
            f"holds input copies {list(infeed.index)} and output copies {list(outfeed.index)}"
        )
    latency = tuple(float((outfeed[i] - infeed[i]) / PS_PER_S) for i in steps)
    replicas = int(report.extra.get("replicas", 1))
    return ServingTiming(batch_size, iterations, float(report.seconds), latency, replicas)
