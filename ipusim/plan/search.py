"""``ipusim.plan``: search a workload's configurations for the one that fits and runs fastest.

Memory first: :mod:`ipusim.plan.space` lists the candidates, prunes those whose cheap memory
estimate is far over the budget and orders the rest by an estimated throughput. Then the
simulator judges the finalists in that order, each run timing-only exactly as
``validation/run.py`` runs a row, until the budget (seconds or candidates) is spent. Only runs
that pass the simulator's memory check are returned as plans.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ipusim.errors import ConfigurationError
from ipusim.plan.inference import (
    inference_candidates,
    inference_kind,
    latency_rows,
    within_latency,
)
from ipusim.plan.options import counted
from ipusim.plan.space import Candidate, bert_candidates
from ipusim.plan.space_model import model_candidates
from ipusim.plan.space_resnet import resnet_candidates

__all__ = ["PlanResult", "measure", "plan", "sweep_plan"]

#: Workloads the planner can search (``keras_model``: a user's model, ``[args]`` ``model``).
WORKLOADS = ("bert", "keras_model", "resnet50")


@dataclass(eq=False)
class PlanResult:
    """What a search found.

    Attributes:
        table: the simulated candidates, best first (fitting plans before the rest).
        estimated: candidates whose memory and time were estimated.
        simulated: candidates the simulator ran.
        seconds: wall time of the search.
    """

    table: pd.DataFrame
    estimated: int
    simulated: int
    seconds: float

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
    workload: str,
    args: Mapping[str, Any],
    system: str,
    global_batch: int,
    precision: str,
    inference: bool | str = False,
    samples: int | None = None,
    max_latency_s: float | None = None,
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
    if inference:
        kind = inference_kind(inference)
        return inference_candidates(
            workload, base, num_ipus, global_batch, precision, kind, samples, max_latency_s
        )
    if workload == "resnet50":
        return resnet_candidates(base, num_ipus, global_batch, precision)
    if workload == "keras_model":
        return model_candidates(base, num_ipus, global_batch, precision)
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
    figures = _figures(simulate(str(config["workload"]), dict(config["args"])))
    return {k: figures[k] for k in ("throughput", "memory_used", "fits", "bottleneck")}


def plan(
    workload: str | Callable[[], Any] | Any,
    system: str,
    global_batch: int | Iterable[int],
    workload_args: Mapping[str, Any] | None = None,
    precision: str = "fp16.16",
    budget_s: float = 60.0,
    candidates: int | None = None,
    seed: int = 0,
    output: str | os.PathLike[str] | None = None,
    progress: bool = True,
    jobs: int = 1,
    scheduler: Any = None,
    inference: bool | str = False,
    samples: int | None = None,
    max_latency_s: float | None = None,
) -> PlanResult:
    """Search ``workload``'s configurations on ``system`` for the fastest that fits.

    Args:
        workload: what to plan: a registered workload (``"bert"``, ``"resnet50"``), a Keras
            model (built in an ``IPUStrategy`` scope and compiled), a function of no arguments
            returning one, or such a function as ``"module:function"`` (which ``best.toml``
            and ``best.py`` can name again in another process).
        system: a system preset (``"POD16"``, ``"Bow-POD16"`` ...).
        global_batch: samples per weight update (micro-batch x accumulation x replicas), or
            several (a list or range): each is searched and all are ranked together, the
            table's ``global_batch`` column telling them apart.
        workload_args: the arguments that fix the model (``{"size": "large", "sequence": 128}``).
        precision: ``"fp32"``, ``"fp16.16"`` or ``"fp16.32"``.
        budget_s: stop simulating new finalists after this many seconds of search.
        candidates: at most this many simulations (default: the time budget alone).
        seed: breaks ties among equally estimated candidates (the search is deterministic).
        output: a folder for ``plans.csv``, ``best.toml`` and ``best.py``.
        progress: print a line per simulated finalist on stderr.
        jobs: finalists simulated at once, on ``ipusim.sweep``'s local worker processes when
            more than one (a model given as an object or function, known only to this
            process, is simulated here).
        scheduler: a Dask scheduler address (``"tcp://HOST:PORT"``) or ``distributed.Client``
            to simulate the finalists on, ``jobs`` at a time.
        inference: plan ``model.predict`` (forward only: no accumulation, optimizer state or
            recomputation; :mod:`ipusim.plan.inference`); ``global_batch`` is then the samples
            of one device step over all replicas (micro-batch x replicas); ``"evaluate"``:
            ``model.evaluate``. ``samples`` / ``max_latency_s``: the dataset's samples, bounding
            the device iterations searched, and the most seconds an execution may take.

    Returns:
        A :class:`PlanResult`; its ``table`` lists the simulated candidates best first.
    """
    start = time.perf_counter()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigurationError(f"jobs must be a positive int (finalists at once); got {jobs!r}")
    workload, workload_args = _what(workload, workload_args)
    batches = [global_batch] if isinstance(global_batch, int) else list(global_batch)
    if not batches:
        raise ConfigurationError("global_batch: give at least one global batch size")
    infer = (inference, samples, max_latency_s)
    spaces = [_candidates(workload, workload_args, system, gb, precision, *infer) for gb in batches]
    cands = [c for space in spaces for c in space]
    # Candidates estimated, those pruned by memory included (a space that counts them says so).
    evaluated = sum(getattr(space, "evaluated", len(space)) for space in spaces)
    if not cands:
        raise _no_configuration(workload, system, batches, inference)
    cands = counted(_seeded(cands, seed), evaluated)
    if workload == "keras_model" and ":" not in str(workload_args["model"]):
        jobs, scheduler = 1, None  # a model registered in this process only
    # Inference: a plan over max_latency_s is not a plan, so it sets no bar for the others.
    counts = functools.partial(within_latency, max_latency_s=max_latency_s if inference else None)
    rows = _judge_all(
        workload, cands, start, budget_s, candidates, progress, jobs, scheduler, counts
    )
    rows = latency_rows(rows, max_latency_s) if inference else rows
    table = _rank(rows)
    result = PlanResult(table, evaluated, len(rows), time.perf_counter() - start)
    if output is not None:
        from ipusim.plan.output import write_outputs

        write_outputs(result, workload, Path(output))
    return result


def _no_configuration(
    workload: str, system: str, batches: list[int], inference: bool | str
) -> ConfigurationError:
    """The error for global batches that no configuration of ``workload`` takes, with the rule."""
    rule = (
        "micro-batch (inference: with device steps that fill a pipeline's depth, "
        "and within max_latency_s)"
        if inference
        else "micro-batch x accumulation (with a Grouped pipeline, an accumulation that is a "
        "multiple of twice the stages)"
    )
    return ConfigurationError(
        f"no configuration of {workload} on {system} takes the global batch {batches}: "
        f"it must split over the replicas into {rule}; give a multiple of the system's "
        "IPU count"
    )


def _what(target: Any, args: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The workload and ``[args]`` that plan ``target`` (see :func:`plan`). A model function
    is registered for this process with fresh layer-name counters around every build, so
    auto-named layers (``dense_1`` ...) have the same names in every candidate's run."""
    args = dict(args or {})
    if isinstance(target, str) and ":" not in target:
        return target, args
    from workloads.keras_model import builder, register

    if isinstance(target, str):
        # the loss is checked where the model is used (training needs one, predict not)
        reference, build = target, builder(target, needs_loss=False)
    else:
        build = target if callable(target) and not hasattr(target, "fit") else lambda: target
        reference = f"plan-{id(target):x}"
    register(reference, functools.partial(_with_fresh_names, build))
    return "keras_model", {**args, "model": reference}


def _with_fresh_names(build: Callable[[], Any]) -> Any:
    """``build()`` with Keras' layer-name counters starting afresh, the caller's restored after."""
    from ipusim.keras import backend

    with backend._lock:
        saved = dict(backend._name_counts)
        backend._name_counts.clear()
    try:
        return build()
    finally:
        with backend._lock:
            backend._name_counts.clear()
            backend._name_counts.update(saved)


def _seeded(cands: list[Candidate], seed: int) -> list[Candidate]:
    """Estimated to fit first, then fastest first; ties broken by a seeded permutation."""
    import numpy as np

    order = np.random.default_rng(seed).permutation(len(cands))
    ranked = sorted(zip(order, cands), key=lambda oc: (oc[1].memory > 1.0, -oc[1].speed, oc[0]))
    return [c for _, c in ranked]


def _family(cand: Candidate) -> tuple[Any, ...]:
    """Candidates whose memory estimates are comparable: same IPUs per replica and options."""
    a = cand.args
    recompute = bool(a.get("recompute")), a.get("recomputation-mode")
    return (a["stages"], recompute, a.get("offload"), a.get("memory-proportion"))


def _judge_all(
    workload: str,
    cands: list[Candidate],
    start: float,
    budget_s: float,
    limit: int | None,
    progress: bool,
    jobs: int = 1,
    scheduler: Any = None,
    counts: Callable[[dict[str, Any]], bool] = within_latency,
) -> list[dict[str, Any]]:
    """Simulate the finalists in order within the budget, ``jobs`` at a time (on local worker
    processes, or on the Dask cluster at ``scheduler``, when more than one).

    Two rules keep the budget for candidates that can win: a candidate whose estimated memory
    is at least that of one of its family the memory check already refused is skipped (the
    estimate grows with what the check measures: micro-batch, layers, stash), and a candidate
    whose expected simulation time (seconds per accumulated micro-batch seen so far) would
    overrun the budget is skipped, not started. A candidate is hopeless only beside fitting
    rows that ``counts`` (inference: those within the latency bound). The rules see the results
    of the batches before and are replayed over each batch in candidate order, so a search with
    a candidate limit gives the serial table whatever ``jobs``.
    """
    rows: list[dict[str, Any]] = []
    refused: dict[tuple[Any, ...], float] = {}
    per_step, pos = 0.0, 0
    if progress:
        estimated = getattr(cands, "evaluated", len(cands))  # those pruned by estimates too
        print(f"plan: {estimated} candidates estimated, {len(cands)} kept", file=sys.stderr)
    while pos < len(cands) and (limit is None or len(rows) < limit):
        batch: list[tuple[int, Candidate]] = []
        while pos < len(cands) and len(batch) < jobs:
            if limit is not None and len(rows) + len(batch) >= limit:
                break  # this one is left for a later batch, if a replay drops a finalist
            i, cand = pos, cands[pos]
            pos += 1
            elapsed = time.perf_counter() - start
            if rows and elapsed > budget_s:
                pos = len(cands)
                break
            if _ruled_out(cand, rows, refused, counts):
                continue
            if rows and elapsed + per_step * cand.args["accumulation"] > budget_s:
                continue
            batch.append((i, cand))
        if not batch:
            break
        t0 = time.perf_counter()
        measured = _measure_batch(workload, [c.args for _, c in batch], jobs, scheduler)
        seconds = time.perf_counter() - t0
        per_step = max(per_step, seconds / max(c.args["accumulation"] for _, c in batch))
        for (i, cand), figures in zip(batch, measured):
            # Replay in candidate order: a finalist a refusal (or a better plan) earlier in
            # its own batch rules out is dropped, so the table is the serial search's.
            if _ruled_out(cand, rows, refused, counts):
                continue
            row = {**figures, **_describe(cand)}
            if progress:
                best = max((r["throughput"] for r in [*rows, row] if r["fits"]), default=0.0)
                print(
                    f"plan finalist {len(rows) + 1} (candidate {i + 1}/{len(cands)}) "
                    f"{row['summary']}: {row['throughput']:.1f} samples/s, memory "
                    f"{row['memory_used']:.2f}, fits {row['fits']} ({seconds:.1f} s); best so "
                    f"far {best:.1f} samples/s, "
                    f"{max(0.0, budget_s - time.perf_counter() + start):.0f} s left",
                    file=sys.stderr,
                )
            if not row["fits"] and (row["error"].startswith("OutOfMemory") or not row["error"]):
                key = _family(cand)
                refused[key] = min(refused.get(key, float("inf")), cand.memory)
            rows.append(row)
    return rows


#: A candidate whose estimated throughput is below this share of the best simulated fitting
#: plan's is not simulated (E: BERT's estimates are within 5% of the simulator's throughput in
#: tests/plan/test_profile.py, the options' within 10% in test_options.py; the margin keeps the
#: near misses).
HOPELESS = 0.85


def _ruled_out(
    cand: Candidate,
    rows: list[dict[str, Any]],
    refused: dict[tuple[Any, ...], float],
    counts: Callable[[dict[str, Any]], bool],
) -> bool:
    """``cand`` needs no simulation: its family's memory check refused no more memory than
    its estimate, or it is :func:`_hopeless`."""
    return cand.memory >= refused.get(_family(cand), float("inf")) or _hopeless(cand, rows, counts)


def _hopeless(
    cand: Candidate,
    rows: list[dict[str, Any]],
    counts: Callable[[dict[str, Any]], bool] = within_latency,
) -> bool:
    """The estimate says ``cand`` cannot beat the best fitting plan of its global batch
    simulated so far (each global batch of a range keeps its own best) that ``counts``."""
    a = cand.args
    batch = a["micro-batch"] * a["accumulation"] * a["replicas"]
    best = max(
        (r["throughput"] for r in rows if r["fits"] and r["global_batch"] == batch and counts(r)),
        default=0.0,
    )
    return cand.speed < HOPELESS * best


def measure(workload: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Simulate one configuration (in this process or a worker's); its figures, or the error
    that kept it from running (a configuration the workload refuses is one that fails)."""
    try:
        out = simulate(workload, args)
    except Exception as exc:
        return _failed(exc)
    return _figures(out)


def _figures(out: Any) -> dict[str, Any]:
    """A simulated configuration's figures, from its Outcome."""
    return {
        "throughput": out.predicted,
        "memory_used": out.memory_used,
        "ipu_bytes": out.ipu_bytes,
        "tile_used": out.tile_used,
        "fits": bool(out.memory_fits),
        "bottleneck": out.bound,
        "error": "",
    }


def _measure_batch(
    workload: str, batch: list[dict[str, Any]], jobs: int, scheduler: Any
) -> list[dict[str, Any]]:
    """:func:`measure` of every configuration of ``batch``, in order: in this process, on
    ``ipusim.sweep``'s local worker processes, or on its Dask cluster."""
    if jobs == 1 and scheduler is None:
        return [measure(workload, args) for args in batch]
    from ipusim.sweep.pools import run_dask, run_local

    items = [(k, (workload, args)) for k, args in enumerate(batch)]
    runs = run_dask(measure, items, scheduler) if scheduler else run_local(measure, items, jobs)
    out: list[dict[str, Any]] = [{}] * len(batch)
    for k, ok, value in runs:
        out[k] = value if ok else _failed(value)  # a worker that died, or could not be sent
    return out


def _failed(exc: BaseException) -> dict[str, Any]:
    return {
        "throughput": 0.0,
        "memory_used": math.nan,
        "fits": False,
        "bottleneck": "",
        "error": f"{type(exc).__name__}: {exc}"[:200],
    }


def _describe(cand: Candidate) -> dict[str, Any]:
    a = cand.args
    stages = a.get("layers-per-ipu") or a.get("split") or []
    summary = (
        f"replicas {a['replicas']} x stages {a['stages']} {list(stages)} mb {a['micro-batch']} "
        f"acc {a['accumulation']} recompute {bool(a.get('recompute'))} "
        f"amp {a.get('memory-proportion')}"
    )
    for key, text in (
        ("schedule", "{}"),
        ("offload", "offload {}"),
        ("io-tiles", "io-tiles {}"),
        ("steps-per-execution", "device iterations {}"),
    ):
        if a.get(key) not in (None, "grouped"):
            summary += " " + text.format(a[key])
    if a.get("inference") == "evaluate":
        summary += " evaluate"
    if a.get("recomputation-mode") == "auto" and a["stages"] > 1:  # BERT's, no checkpoints
        summary += " no checkpoints"
    if a.get("ffn-per-ipu"):
        summary += f" ffn {list(a['ffn-per-ipu'])}"
    if a.get("device-mapping") and list(a["device-mapping"]) != list(range(a["stages"])):
        summary += f" mapping {list(a['device-mapping'])}"
    if a.get("sharded-optimizer-state"):
        summary += " sharded"
    return {
        "summary": summary,
        "global_batch": a["micro-batch"] * a["accumulation"] * a["replicas"],
        "replicas": a["replicas"],
        "stages": a["stages"],
        "layers_per_ipu": " ".join(str(s) for s in a.get("layers-per-ipu") or []),
        "ffn_per_ipu": " ".join(str(s) for s in a.get("ffn-per-ipu") or []),
        "splits": " ".join(str(s) for s in a.get("split") or []),
        "micro_batch": a["micro-batch"],
        "accumulation": a["accumulation"],
        "recompute": bool(a.get("recompute")),
        "inference": bool(a.get("inference")),
        "steps_per_execution": a.get("steps-per-execution", a.get("steps")),
        "memory_proportion": a.get("memory-proportion"),
        "estimated_memory": cand.memory,
        "estimated_ipu_bytes": cand.ipu_bytes,
        "estimated_ipu_used": cand.ipu_used,
        "estimated_tile_used": cand.tile_used,
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
