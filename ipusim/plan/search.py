"""``ipusim.plan``: search a workload's configurations for the one that fits and runs fastest.

Memory first: :mod:`ipusim.plan.space` lists the candidates, prunes those whose cheap memory
estimate is far over the budget and orders the rest by an estimated throughput. Then the
simulator judges the finalists in that order, each run timing-only exactly as
``validation/run.py`` runs a row, until the budget (seconds or candidates) is spent. Only runs
that pass the simulator's memory check are returned as plans.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ipusim.errors import ConfigurationError
from ipusim.plan.space import Candidate, bert_candidates
from ipusim.plan.space_resnet import resnet_candidates

__all__ = ["PlanResult", "plan", "sweep_plan"]

#: Workloads the planner can search.
WORKLOADS = ("bert", "resnet50")


class PlanResult:
    """What a search found.

    Attributes:
        table: the simulated candidates, best first (fitting plans before the rest).
        estimated: candidates whose memory and time were estimated.
        simulated: candidates the simulator ran.
        seconds: wall time of the search.
    """

    def __init__(self, table: pd.DataFrame, estimated: int, simulated: int, seconds: float):
        self.table = table
        self.estimated = estimated
        self.simulated = simulated
        self.seconds = seconds

    @property
    def best(self) -> dict[str, Any]:
        """The ``[args]`` of the fastest fitting plan."""
        fitting = self.table[self.table["fits"]]
        if fitting.empty:
            raise ConfigurationError(
                "no simulated configuration fits the memory check; raise --budget-s or "
                "--candidates, or give a smaller global batch"
            )
        return dict(fitting.iloc[0]["args"])


def _candidates(
    workload: str, args: Mapping[str, Any], system: str, global_batch: int, precision: str
) -> list[Candidate]:
    from ipusim.hardware import load_system

    if workload not in WORKLOADS:
        raise ConfigurationError(
            f"ipusim plan searches the workloads {list(WORKLOADS)}; got {workload!r}"
        )
    if global_batch < 1:
        raise ConfigurationError(f"global_batch must be a positive integer, got {global_batch}")
    num_ipus = load_system(system).num_ipus
    base = {"system": system, **dict(args)}
    if workload == "resnet50":
        return resnet_candidates(base, num_ipus, global_batch, precision)
    return bert_candidates(base, num_ipus, global_batch, precision)


def simulate(workload: str, args: Mapping[str, Any], items_per_sample: float = 1.0) -> Any:
    """Run one configuration timing-only as ``validation/run.py`` runs a row; its Outcome."""
    from validation.rows import Row
    from validation.run import run_row

    row = Row(
        id="plan",
        title="planner candidate",
        measured=math.nan,
        flag="E",
        source="ipusim plan",
        workload=workload,
        args=dict(args),
        items_per_sample=items_per_sample,
    )
    return run_row(row)


def sweep_plan(config: Mapping[str, Any]) -> dict[str, Any]:
    """The sweep workload of a planner's ``plans.toml``: simulate ``config["args"]`` of
    ``config["workload"]`` as :func:`simulate` does; one row of figures."""
    out = simulate(str(config["workload"]), dict(config["args"]))
    return {
        "throughput": out.predicted,
        "memory_used": out.memory_used,
        "fits": bool(out.memory_fits),
        "bottleneck": out.bound,
    }


def plan(
    workload: str,
    system: str,
    global_batch: int,
    workload_args: Mapping[str, Any] | None = None,
    precision: str = "fp16.16",
    budget_s: float = 60.0,
    candidates: int | None = None,
    seed: int = 0,
    output: str | os.PathLike[str] | None = None,
    progress: bool = True,
    processes: int = 1,
    dask: Any = None,
) -> PlanResult:
    """Search ``workload``'s configurations on ``system`` for the fastest that fits.

    Args:
        workload: a registered workload (``"bert"``).
        system: a system preset (``"POD16"``, ``"Bow-POD16"`` ...).
        global_batch: samples per weight update (micro-batch x accumulation x replicas).
        workload_args: the arguments that fix the model (``{"size": "large", "sequence": 128}``).
        precision: ``"fp32"``, ``"fp16.16"`` or ``"fp16.32"``.
        budget_s: stop simulating new finalists after this many seconds of search.
        candidates: at most this many simulations (default: the time budget alone).
        seed: breaks ties among equally estimated candidates (the search is deterministic).
        output: a folder for ``plans.csv``, ``best.toml`` and ``best.py``.
        progress: print the candidates estimated and a line per simulated finalist (best so far,
            seconds left) on stderr.
        processes: simulate this many finalists at once on local worker processes.
        dask: a Dask scheduler address (or ``distributed.Client``) to simulate finalists on
            instead (as many at once as the cluster has worker threads).

    Returns:
        A :class:`PlanResult`; its ``table`` lists the simulated candidates best first.
    """
    start = time.perf_counter()
    cands = _candidates(workload, dict(workload_args or {}), system, global_batch, precision)
    cands = _seeded(cands, seed)
    rows = _judge_all(workload, cands, start, budget_s, candidates, progress, processes, dask)
    table = _rank(rows)
    result = PlanResult(table, len(cands), len(rows), time.perf_counter() - start)
    if output is not None:
        from ipusim.plan.output import write_outputs

        write_outputs(result, workload, Path(output))
    return result


def _seeded(cands: list[Candidate], seed: int) -> list[Candidate]:
    """Ties in the estimate broken by a seeded permutation (stable otherwise)."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(len(cands))
    return [c for _, c in sorted(zip(order, cands), key=lambda oc: (-oc[1].speed, oc[0]))]


def _judge_all(
    workload: str,
    cands: list[Candidate],
    start: float,
    budget_s: float,
    limit: int | None,
    progress: bool,
    processes: int = 1,
    dask: Any = None,
) -> list[dict[str, Any]]:
    """Simulate the finalists in order within the budget (see :class:`ipusim.plan.judge.Judge`),
    in this process, on ``processes`` local worker processes or on the Dask cluster ``dask``."""
    from ipusim.plan.judge import Judge

    judge = Judge(workload, _describe, processes, dask, progress)
    return judge.all(cands, start, budget_s, limit)


def _describe(cand: Candidate) -> dict[str, Any]:
    a = cand.args
    stages = a.get("layers-per-ipu") or a.get("split") or []
    summary = (
        f"replicas {a['replicas']} x stages {a['stages']} {list(stages)} mb {a['micro-batch']} "
        f"acc {a['accumulation']} recompute {bool(a.get('recompute'))} "
        f"amp {a.get('memory-proportion')}"
    )
    return {
        "summary": summary,
        "replicas": a["replicas"],
        "stages": a["stages"],
        "layers_per_ipu": " ".join(str(s) for s in a.get("layers-per-ipu") or []),
        "splits": " ".join(str(s) for s in a.get("split") or []),
        "micro_batch": a["micro-batch"],
        "accumulation": a["accumulation"],
        "recompute": bool(a.get("recompute")),
        "memory_proportion": a.get("memory-proportion"),
        "estimated_memory": cand.memory,
        "gives_up": cand.gives_up,
        "args": dict(a),
    }


def _rank(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Fitting plans first, fastest first; ties by the summary (deterministic)."""
    if not rows:
        return pd.DataFrame(columns=["throughput", "fits", "summary", "args"])
    table = pd.DataFrame(rows)
    table = table.sort_values(
        ["fits", "throughput", "summary"], ascending=[False, False, True], kind="stable"
    )
    return table.reset_index(drop=True)
