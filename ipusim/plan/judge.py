"""The planner's judging loop: the simulator runs the finalists in order, in this process or in
waves on ipusim.sweep's executors (local processes with per-worker thread budgets, or Dask).

A wave takes the next finalists the rules admit (at most one per worker) and simulates them at
once; its rows are then replayed in estimate order under the same rules as a serial search, so a
finalist a refusal earlier in its own wave rules out is dropped. With a candidate budget the
table is therefore the serial one; with a time budget a wider search simply reaches further.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.plan.space import Candidate

__all__ = ["Judge", "judge_row"]


def judge_row(workload: str, args: dict[str, Any]) -> dict[str, Any]:
    """Simulate one configuration (the task sent to workers); its measured figures and seconds."""
    from ipusim.plan.search import simulate

    t0 = time.perf_counter()
    try:
        out = simulate(workload, args)
        row = {
            "throughput": out.predicted,
            "memory_used": out.memory_used,
            "fits": bool(out.memory_fits),
            "bottleneck": out.bound,
            "error": "",
        }
    except Exception as exc:  # a configuration the workload refuses is a candidate that fails
        row = {
            "throughput": 0.0,
            "memory_used": math.nan,
            "fits": False,
            "bottleneck": "",
            "error": f"{type(exc).__name__}: {exc}"[:200],
        }
    row["seconds"] = time.perf_counter() - t0
    return row


def _failed(exc: BaseException) -> dict[str, Any]:
    """The row of a finalist whose worker died or could not be reached."""
    return {
        "throughput": 0.0,
        "memory_used": math.nan,
        "fits": False,
        "bottleneck": "",
        "error": f"{type(exc).__name__}: {exc}"[:200],
        "seconds": 0.0,
    }


def _family(cand: Candidate) -> tuple[Any, ...]:
    """Candidates whose memory estimates are comparable: same IPUs per replica and options."""
    a = cand.args
    return (a["stages"], bool(a.get("recompute")), a.get("offload"), a.get("memory-proportion"))


class Judge:
    """Simulates finalists within a budget (see :func:`ipusim.plan.search.plan`).

    Two rules keep the budget for candidates that can win: a candidate whose estimated memory
    is at least that of one of its family the memory check already refused is skipped (the
    estimate grows with what the check measures: micro-batch, layers, stash), and a candidate
    whose expected simulation time (seconds per accumulated micro-batch seen so far) would
    overrun the budget is skipped, not started.
    """

    def __init__(
        self,
        workload: str,
        describe: Callable[[Candidate], dict[str, Any]],
        processes: int = 1,
        dask: Any = None,
        progress: bool = True,
    ) -> None:
        from ipusim.sweep import pools

        if not isinstance(processes, int) or isinstance(processes, bool) or processes < 1:
            raise ConfigurationError(
                f"processes must be a positive int (worker processes); got {processes!r}"
            )
        self.workload, self.describe, self.progress = workload, describe, progress
        self.width, self.run = 1, pools.run_serial
        self._client, self._own = None, False
        if dask is not None:
            client_class, _ = pools._dask()
            self._own = not isinstance(dask, client_class)
            self._client = client_class(dask) if self._own else dask
            self.width = max(1, sum(self._client.nthreads().values()))
            self.run = lambda task, items: pools.run_dask(task, items, self._client)
        elif processes > 1:
            self.width = processes
            self.run = lambda task, items: pools.run_local(task, items, processes)
        self.refused: dict[tuple[Any, ...], float] = {}
        self.per_step = 0.0

    def _admits(self, cand: Candidate, rows: int, elapsed: float, budget_s: float) -> bool:
        if cand.memory >= self.refused.get(_family(cand), float("inf")):
            return False
        return not (rows and elapsed + self.per_step * cand.args["accumulation"] > budget_s)

    def all(
        self, cands: list[Candidate], start: float, budget_s: float, limit: int | None
    ) -> list[dict[str, Any]]:
        """The rows of the finalists judged, in estimate order."""
        if not cands:
            raise ConfigurationError(
                "no candidate configuration for this global batch: micro-batch x accumulation x "
                "replicas must equal it (pipelines want an accumulation that is a multiple of "
                "twice the stages); give a global batch with more factors, e.g. a multiple of 80"
            )
        rows: list[dict[str, Any]] = []
        pos = 0
        if self.progress:
            print(f"plan: {len(cands)} candidates estimated", file=sys.stderr)
        while pos < len(cands) and (limit is None or len(rows) < limit):
            elapsed = time.perf_counter() - start
            if rows and elapsed > budget_s:
                break
            wave: list[int] = []
            while pos < len(cands) and len(wave) < self.width:
                if limit is not None and len(rows) + len(wave) >= limit:
                    break
                if self._admits(cands[pos], len(rows), elapsed, budget_s):
                    wave.append(pos)
                pos += 1
            if not wave:
                continue
            items = [(i, (self.workload, dict(cands[i].args))) for i in wave]
            got = {i: (v if ok else _failed(v)) for i, ok, v in self.run(judge_row, items)}
            for i in wave:  # replay in order: what a serial search would have kept
                if not self._admits(cands[i], 0, 0.0, budget_s):
                    continue
                rows.append(self._keep(cands[i], got[i], i, len(cands), rows, start, budget_s))
        if self._own and self._client is not None:
            self._client.close()
        return rows

    def _keep(
        self,
        cand: Candidate,
        row: dict[str, Any],
        i: int,
        n: int,
        rows: list[dict[str, Any]],
        start: float,
        budget_s: float,
    ) -> dict[str, Any]:
        """Record a judged finalist: refusals, pace, its table row and progress line."""
        seconds = row.pop("seconds")
        self.per_step = max(self.per_step, seconds / cand.args["accumulation"])
        if not row["fits"] and (row["error"].startswith("OutOfMemory") or not row["error"]):
            key = _family(cand)
            self.refused[key] = min(self.refused.get(key, float("inf")), cand.memory)
        row.update(self.describe(cand))
        if self.progress:
            fit = [r["throughput"] for r in [*rows, row] if r["fits"]]
            best = max(fit, default=0.0)
            left = max(0.0, budget_s - (time.perf_counter() - start))
            print(
                f"plan finalist {len(rows) + 1} (candidate {i + 1}/{n}) {row['summary']}: "
                f"{row['throughput']:.1f} samples/s, memory {row['memory_used']:.2f}, fits "
                f"{row['fits']} ({seconds:.1f} s); best so far {best:.1f} samples/s, "
                f"{left:.0f} s left",
                file=sys.stderr,
            )
        return row
