"""A pipeline run's seconds from the lowering's own time steps, as the engine runs them.

:func:`run_seconds` walks ``ipusim.lowering.schedules.time_steps`` the way the pipeline driver
(``ipusim.engine.pipeline``) runs each step: every IPU runs its items one after the other (the
first stage's forward pass after its infeed copy, the last stage's last pass before its
outfeed copy), the step lasting as long as its busiest IPU; then the step's copies between
IPUs cross the links (copies between different IPU pairs in parallel: the step waits for the
longest); then every IPU syncs. A ramp step holds only the stages with a micro-batch, and an
Interleaved step copies activations forwards and gradients backwards at once, so both cost
what the engine charges them (the planner's earlier closed forms priced a ramp step as a full
one and spread one Sequential run's copies evenly over the stages: up to 9% fast on BERT).

Beyond ``2 S + 1`` micro-batches every added micro-batch adds the same steady cycle (its
forward and backward steps hold the same items), so a long run is walked at ``2 S + 1`` and
``2 S + 2`` micro-batches and extrapolated exactly (tests/plan/test_steps.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ipusim.lowering.program import copy_bandwidth
from ipusim.lowering.schedules import time_steps

__all__ = ["StageCosts", "copy_seconds", "run_seconds"]


@dataclass(frozen=True)
class StageCosts:
    """What each pipeline stage costs per micro-batch, in seconds.

    Attributes:
        passes: per stage, its forward and backward passes (a recomputed forward included).
        ipus: per stage, the IPU it runs on (stages on one IPU run one after the other).
        sends: per stage, the copy of its forward output to the next stage and of its
            gradients to the previous one (0 for a copy that stays on one IPU).
        sync_s: the sync ending every step.
        infeed_s: the first stage's infeed copy before each forward pass.
        outfeed_s: the last stage's outfeed copy after each of its backward passes.
    """

    passes: tuple[tuple[float, float], ...]
    ipus: tuple[int, ...]
    sends: tuple[tuple[float, float], ...]
    sync_s: float = 0.0
    infeed_s: float = 0.0
    outfeed_s: float = 0.0


def copy_seconds(nbytes: float, src: int, dst: int, link: tuple[float, float, float]) -> float:
    """Seconds of a copy of ``nbytes`` from IPU ``src`` to ``dst`` as the engine prices it
    (``engine/tables.py``): at :func:`~ipusim.lowering.program.copy_bandwidth`, plus the link
    latency; ``link``: neighbour and pair bandwidth (bytes/s, pair 0 meaning the neighbour's)
    and latency (s). 0 on one IPU."""
    if src == dst or nbytes <= 0:
        return 0.0
    neighbour, pair, latency = link
    return nbytes / copy_bandwidth(src, dst, neighbour, pair) + latency


def run_seconds(schedule: str, micro_batches: int, costs: StageCosts) -> float:
    """Seconds of one training pipeline run of ``micro_batches`` micro-batches under
    ``schedule`` (``"grouped"``, ``"interleaved"`` or ``"sequential"``)."""
    stages = len(costs.passes)
    steady = 2 * stages + 1
    if micro_batches <= steady + 1:
        return _walk(schedule, micro_batches, costs)
    low, high = _walk(schedule, steady, costs), _walk(schedule, steady + 1, costs)
    return low + (micro_batches - steady) * (high - low)


def _walk(schedule: str, micro_batches: int, costs: StageCosts) -> float:
    """Every time step of the run, summed."""
    return sum(
        _step_seconds(items, costs) for items in _steps(schedule, len(costs.passes), micro_batches)
    )


@functools.lru_cache(maxsize=4096)
def _steps(
    schedule: str, stages: int, micro_batches: int
) -> tuple[tuple[tuple[int, str], ...], ...]:
    """The run's time steps, each item as (stage, pass): the micro-batch does not change a
    step's cost."""
    return tuple(
        tuple((s, kind) for s, kind, _ in items)
        for items in time_steps(schedule, stages, micro_batches, True)
    )


def _step_seconds(items: tuple[tuple[int, str], ...], costs: StageCosts) -> float:
    """One step: its busiest IPU's items, its longest copy and the sync."""
    last = len(costs.passes) - 1
    busy: dict[int, float] = {}
    copy = 0.0
    for stage, kind in items:
        forward = kind == "F"
        seconds = costs.passes[stage][0 if forward else 1]
        if forward and stage == 0:
            seconds += costs.infeed_s
        if not forward and stage == last:
            seconds += costs.outfeed_s
        ipu = costs.ipus[stage]
        busy[ipu] = busy.get(ipu, 0.0) + seconds
        if (stage < last) if forward else (stage > 0):
            copy = max(copy, costs.sends[stage][0 if forward else 1])
    return max(busy.values()) + copy + costs.sync_s
