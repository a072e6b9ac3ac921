"""An inference plan over the latency bound sets no bar for the plans after it.

The search skips a finalist whose estimate is below HOPELESS times the best fitting plan
simulated so far; a simulated plan whose execution is over ``max_latency_s`` is not a plan
(``latency_rows`` drops it), so it must not make a slower plan within the bound hopeless.
"""

from __future__ import annotations

import functools
import math

from ipusim.plan import search
from ipusim.plan.inference import latency_rows, within_latency
from ipusim.plan.space import Candidate


def _inference(replicas: int, steps_per_execution: int, speed: float) -> Candidate:
    """An inference candidate of the global batch 8 (micro-batch ``8 / replicas``)."""
    args = {
        "replicas": replicas,
        "stages": 1,
        "micro-batch": 8 // replicas,
        "accumulation": 1,
        "steps": 4,
        "steps-per-execution": steps_per_execution,
        "inference": "predict",
    }
    return Candidate(args, memory=0.5, speed=speed, gives_up="")


def _simulated(throughputs: dict[int, float]):
    """A stand-in for the simulator: each candidate's throughput by its replicas."""

    def measure_batch(workload, batch, jobs, scheduler):
        return [
            {
                "throughput": throughputs[a["replicas"]],
                "memory_used": 0.5,
                "ipu_bytes": 1.0,
                "tile_used": 0.5,
                "fits": True,
                "bottleneck": "compute",
                "error": "",
            }
            for a in batch
        ]

    return measure_batch


def test_a_plan_over_the_bound_does_not_make_one_within_it_hopeless(monkeypatch):
    # The same global batch, 8. One replica, 2 device iterations per execution: 16 samples at
    # 1,000 samples/s, 16 ms. Two replicas, one iteration: 8 samples at 600 samples/s, 13.3 ms.
    fast = _inference(replicas=1, steps_per_execution=2, speed=1000.0)
    slow = _inference(replicas=2, steps_per_execution=1, speed=600.0)
    monkeypatch.setattr(search, "_measure_batch", _simulated({1: 1000.0, 2: 600.0}))
    bound = 0.015  # 15 ms: the fast plan's 16 ms is over it, the slow one's 13.3 ms within
    counts = functools.partial(within_latency, max_latency_s=bound)
    rows = search._judge_all("bert", [fast, slow], 0.0, math.inf, None, False, counts=counts)
    assert [r["args"]["replicas"] for r in rows] == [1, 2]
    kept = latency_rows(rows, bound)
    assert [r["args"]["replicas"] for r in kept] == [2]
    assert kept[0]["latency_s"] == 8 / 600.0


def test_without_a_bound_the_slower_estimate_is_still_hopeless(monkeypatch):
    # 600 < 0.85 x 1,000: with no bound the first plan sets the bar and the second is skipped.
    fast = _inference(replicas=1, steps_per_execution=2, speed=1000.0)
    slow = _inference(replicas=2, steps_per_execution=1, speed=600.0)
    monkeypatch.setattr(search, "_measure_batch", _simulated({1: 1000.0, 2: 600.0}))
    rows = search._judge_all("bert", [fast, slow], 0.0, math.inf, None, False)
    assert [r["args"]["replicas"] for r in rows] == [1]
