"""Pipeline stage balancing: split a sequence of layers into contiguous stages.

The classic pipeline partition problem. A pipelined step runs at the pace of its slowest stage,
so the split to find is the one whose slowest stage is fastest, among the splits whose every
stage fits its IPU's memory. The layers are given only through two callables, so the same
search serves any cost model:

- ``stage_time(first, stop, stage)``: the time of stage ``stage`` holding layers
  ``first .. stop - 1`` (any unit; ipusim's planner passes picoseconds);
- ``stage_fits(first, stop, stage)``: whether that stage fits its IPU. A stage's position
  matters (its activation stash grows with the stages after it), which is why both callables
  take it.

:func:`best_splits` solves it by dynamic programming over (stage, last layer): for ``L`` layers
and ``S`` stages it calls each callable at most ``S * L * (L + 1) / 2`` times and keeps the
``keep`` best partial splits per cell, so the first split returned has the smallest slowest
stage of all splits (ties: the smaller total time, then the earlier boundaries) and the others
are the next best the search met, for the simulator to judge.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable
from dataclasses import dataclass

from ipusim.errors import ConfigurationError

__all__ = ["Split", "StageFits", "StageTime", "best_splits"]

#: ``(first, stop, stage) -> time`` of the stage holding layers ``first .. stop - 1``.
StageTime = Callable[[int, int, int], float]
#: ``(first, stop, stage) -> fits`` for the stage holding layers ``first .. stop - 1``.
StageFits = Callable[[int, int, int], bool]


@dataclass(frozen=True, order=True)
class Split:
    """One way to cut the layers into stages.

    Ordered by the slowest stage, then the total, then the boundaries (best first).

    Attributes:
        bottleneck: the slowest stage's time (the unit of ``stage_time``).
        total: the stages' times summed.
        bounds: the stages' boundaries: stage ``s`` holds layers ``bounds[s] .. bounds[s+1]-1``;
            ``bounds[0] == 0`` and ``bounds[-1]`` is the number of layers.
    """

    bottleneck: float
    total: float
    bounds: tuple[int, ...]

    @property
    def layers_per_stage(self) -> tuple[int, ...]:
        """How many layers each stage holds (BERT-Large on 4 IPUs: e.g. ``(3, 7, 7, 7)``)."""
        return tuple(b - a for a, b in zip(self.bounds, self.bounds[1:]))

    def stage_of_layer(self) -> tuple[int, ...]:
        """The stage of every layer, in order."""
        return tuple(s for s, count in enumerate(self.layers_per_stage) for _ in range(count))


def _check(layers: int, stages: int, keep: int) -> None:
    for name, value in (("layers", layers), ("stages", stages), ("keep", keep)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(f"{name} must be a positive int, received {value!r}")
    if stages > layers:
        raise ConfigurationError(
            f"cannot split {layers} layers into {stages} stages: every stage needs at least one "
            "layer; use fewer stages or split the model at finer boundaries"
        )


def _search(
    layers: int,
    stages: int,
    stage_time: StageTime,
    stage_fits: StageFits,
    keep: int,
    limit: float | None,
) -> list[tuple[float, float, tuple[int, ...]]]:
    """Dynamic programming over (stage, stop): the ``keep`` best partial splits per cell.

    Without ``limit`` a cell is ranked by (bottleneck, total, bounds); with it, stages slower
    than ``limit`` are left out and a cell is ranked by (total, bounds), which makes the
    single best exact (a sum ranks prefixes the way it ranks their extensions).
    """
    best: dict[int, list[tuple[float, float, tuple[int, ...]]]] = {0: [(0.0, 0.0, (0,))]}
    for stage in range(stages):
        later = stages - stage - 1  # stages still to place, each needs a layer
        nxt: dict[int, list[tuple[float, float, tuple[int, ...]]]] = {}
        for stop in range(stage + 1, layers - later + 1):
            if stage == stages - 1 and stop != layers:
                continue
            found = []
            for first, partial in best.items():
                if first >= stop or not stage_fits(first, stop, stage):
                    continue
                time = float(stage_time(first, stop, stage))
                if limit is not None and time > limit:
                    continue
                found += [(max(b, time), t + time, bounds + (stop,)) for b, t, bounds in partial]
            if found:
                rank = (lambda e: e) if limit is None else (lambda e: (e[1], e[2]))
                nxt[stop] = heapq.nsmallest(keep, found, key=rank)
        best = nxt
    return best.get(layers, [])


def best_splits(
    layers: int,
    stages: int,
    stage_time: StageTime,
    stage_fits: StageFits,
    keep: int = 1,
) -> list[Split]:
    """The best ways to split ``layers`` layers into ``stages`` non-empty contiguous stages.

    Two passes: the first finds the smallest bottleneck (exact: a max ranks prefixes the way it
    ranks their extensions) and keeps ``keep`` candidates per cell as alternatives; the second
    finds, among the splits whose stages are all within that bottleneck, the one with the
    smallest total (then the earliest boundaries).

    Args:
        layers: number of layers (in order).
        stages: number of pipeline stages.
        stage_time: ``(first, stop, stage) -> time`` of one stage (see the module docstring).
        stage_fits: ``(first, stop, stage) -> bool``: the stage fits its IPU.
        keep: how many splits to return at most.

    Returns:
        Up to ``keep`` distinct splits, best first; empty when no split fits. The first is the
        best of all fitting splits by (bottleneck, total, bounds); the others are the next best
        the search met, not necessarily the exact runners-up.

    Raises:
        ConfigurationError: a count is not a positive int, or there are more stages than layers.
    """
    _check(layers, stages, keep)
    cached_time = functools.cache(stage_time)
    cached_fits = functools.cache(stage_fits)
    candidates = _search(layers, stages, cached_time, cached_fits, keep, None)
    if not candidates:
        return []
    exact = _search(layers, stages, cached_time, cached_fits, 1, candidates[0][0])
    chosen = {entry[2]: entry for entry in [*exact, *candidates]}
    return sorted(Split(*entry) for entry in chosen.values())[:keep]
