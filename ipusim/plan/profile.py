"""Per-layer costs for the planner, read from one simulated run of the model (its own lowering).

A :class:`Profile` holds, for each *group* of Keras layers (an encoder layer, the embedding, the
head, a ResNet block: any grouping the caller gives as a function of the layer name), a
:class:`GroupCost`:

- ``forward_s`` / ``backward_s``: seconds per micro-batch on its IPU: the mean duration of each
  of its compute sets' compute and exchange records (and sync records, when
  asked), summed (a recomputed forward is left out:
  :meth:`Profile.seconds` adds it back when asked);
- ``weight_bytes`` / ``state_bytes``: its variables, and their optimizer state plus gradient
  accumulators, as the memory plan holds them (replica 0's copy);
- ``activation_bytes``: its share of its IPU's live activations, apportioned over the groups of
  that IPU by forward time (a rough split; per IPU, ``ipu_activations`` is exact);

and per IPU of the run: code and exchange-buffer bytes, live activations, the busiest tile's
fullness over the IPU's; per run: the budget, the update's and the host I/O's seconds and the
simulated seconds per sample. Everything is read through the run's public
:class:`~ipusim.trace.Report` (trace records, ``memory``, ``memory_items``, ``liveness`` for the
phase of each compute set, ``utilisation``), so a profile agrees with the memory check and the
timing of the run it came from. A planner combines groups arithmetically
(:meth:`Profile.seconds`, :meth:`Profile.variable_bytes`); :func:`per_micro_batch` gives a
data-parallel configuration's figures at any micro-batch from two profiled ones.

Use: for any Keras model run by ipusim (``model.fit`` timing-only), ``from_report(
model.last_simulation, group)``, with ``group = lambda name: name`` for one group per layer or a
map from layer names to stages; ``profile.cached(key, lambda: report_of_a_run(), group)`` with ``key`` the settings that
change a layer's cost (micro-batch, availableMemoryProportion, precision, recomputation), so one
lowering serves every candidate that shares them; :func:`workload_report` runs a workload
quietly as a validation row; :func:`profile_seconds` is what the misses cost. The trace must
keep every record (a run short enough for the ``trace_records`` budget).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ipusim.errors import ConfigurationError, OutOfMemoryError
from ipusim.plan.options import lerp
from ipusim.trace import HOST_ROUND_TRIP_WORK

__all__ = [
    "GroupCost",
    "Profile",
    "cached",
    "from_report",
    "profile_seconds",
    "workload_report",
]

#: Maps a Keras layer name to its group, or None to leave the layer out (optimizer, loss).
Grouping = Callable[[str], "str | None"]


@dataclass(frozen=True)
class GroupCost:
    """One group's costs per micro-batch (seconds) and bytes on its IPU."""

    forward_s: float = 0.0
    backward_s: float = 0.0
    weight_bytes: float = 0.0
    state_bytes: float = 0.0
    activation_bytes: float = 0.0
    ipu: int = 0


@dataclass(frozen=True)
class Profile:
    """A run's per-group costs and per-IPU figures (see the module docstring).

    Attributes:
        groups: per group, its :class:`GroupCost`.
        budget_bytes: an IPU's memory budget, bytes.
        update_s: the weight update's seconds (slowest IPU), per weight update.
        ipu_fixed: per IPU of the run, its code and exchange-buffer bytes.
        ipu_activations: per IPU of the run, its live activation bytes (peak).
        ipu_tile_ratio: per IPU of the run, its busiest tile's fraction of the tile budget over
            the IPU's fraction of its budget (how much fuller the fullest tile is).
        sample_s: the run's simulated seconds per sample (all replicas'), all costs included.
        host_s: the slowest IPU's seconds of host I/O and Streaming Memory traffic in the run
            (weight read-back, offloaded optimizer state: per execution, not per micro-batch).
        infeed_s: the slowest IPU's seconds of infeed copies in the run (what I/O tiles
            overlap with compute).
        outfeed_s: the slowest IPU's seconds of outfeed copies in the run.
        link_s: the run's inter-IPU syncs (the slowest IPU's) and copies between IPUs (per
            step, the longest; collectives are not copies), seconds.
        ipu_stash: per IPU of the run, the share of its live activations that is the
            pipeline's stash (0 to 1).
        update_traffic_s: the slowest IPU's seconds of the traffic around the weight updates
            in the run: Streaming Memory transfers (offloaded optimizer state) and collectives
            (the gradients' all-reduce), so per weight update, unlike ``host_s``'s infeed and
            outfeed copies (per micro-batch).
        copies: the run's first copies between IPUs that cross one IPU pair, in time order, as
            (source IPU, destination IPU, bytes) (a Sequential run's are all such: each step
            copies one stage's output or gradients; at most :data:`COPIES_KEPT`).
        execution_s: the host's per-execution work in the run (execution overhead, weight
            read-back, callbacks, outfeed drain: ``HOST_ROUND_TRIP_WORK`` of the trace).
    """

    groups: dict[str, GroupCost]
    budget_bytes: float
    update_s: float
    ipu_fixed: dict[int, float]
    ipu_activations: dict[int, float]
    ipu_tile_ratio: dict[int, float]
    sample_s: float = math.nan
    host_s: float = 0.0
    infeed_s: float = 0.0
    execution_s: float = 0.0
    outfeed_s: float = 0.0
    link_s: float = 0.0
    ipu_stash: dict[int, float] = field(default_factory=dict)
    update_traffic_s: float = 0.0
    copies: tuple[tuple[int, int, float], ...] = ()

    def seconds(self, names: Iterable[str], recompute: bool = False) -> float:
        """Seconds per micro-batch of a stage holding ``names``: forward, backward and (when
        recomputing) the forward again."""
        fwd = sum(self.groups[n].forward_s for n in names)
        bwd = sum(self.groups[n].backward_s for n in names)
        return fwd * (2.0 if recompute else 1.0) + bwd

    def variable_bytes(self, names: Iterable[str]) -> float:
        """Weights, optimizer state and gradient accumulators of the groups ``names``."""
        return sum(self.groups[n].weight_bytes + self.groups[n].state_bytes for n in names)


def _side(name: str, op: str, phases: dict[str, str]) -> str:
    """``fwd``, ``bwd`` (with gradient accumulation), ``update`` or ``skip`` (a recomputed
    forward op: the planner adds the forward again when it recomputes)."""
    if name.startswith("recompute "):
        return "skip"
    if op == "weight_update":
        return "update"
    if op == "accumulate":
        return "bwd"
    return phases.get(name, "bwd" if "_grad" in op or "_grad" in name else "fwd")


def _per_record(records: Any, tracks: tuple[str, ...]) -> Any:
    """Per (IPU, compute set): its layer, op and mean seconds per execution (its records of
    ``tracks``, each averaged over the records the trace kept)."""
    records = records[records.track.isin(tracks)]
    mean = records.groupby(["ipu", "name", "track"], sort=False).agg(
        layer=("layer", "first"), op=("op", "first"), seconds=("duration_s", "mean")
    )
    return mean.groupby(level=["ipu", "name"], sort=False).agg(
        layer=("layer", "first"), op=("op", "first"), seconds=("seconds", "sum")
    )


def _copies_s(records: Any, name: str) -> float:
    """The slowest IPU's seconds of ``name`` records (``infeed copy``: the IPU copying a staged
    element in; ``outfeed copy``: its results out)."""
    copies = records[records.name == name]
    return float(copies.groupby("ipu").duration_s.sum().max()) if len(copies) else 0.0


def _times(
    report: Any, records: Any, group: Grouping, tracks: tuple[str, ...]
) -> tuple[dict[str, dict[str, float]], dict[str, int], float]:
    """Per group, forward and backward seconds per micro-batch; each group's IPU; the update's
    seconds (the slowest IPU's)."""
    phases = dict(zip(report.liveness.name, report.liveness.phase))
    sides: dict[str, dict[str, float]] = {"fwd": {}, "bwd": {}}
    where: dict[str, int] = {}
    update: dict[int, float] = {}
    for (ipu, op_name), row in _per_record(records, tracks).iterrows():
        side = _side(str(op_name), str(row.op), phases)
        if side == "update":
            update[int(ipu)] = update.get(int(ipu), 0.0) + float(row.seconds)
            continue
        name = group(str(row.layer)) if row.layer else None
        if side == "skip" or name is None:
            continue
        sides[side][name] = sides[side].get(name, 0.0) + float(row.seconds)
        where.setdefault(name, int(ipu))
    return sides, where, max(update.values(), default=0.0)


#: Trace tracks a compute set's seconds are read from by default; with its ``sync`` too, a
#: group's seconds include the syncs of its compute sets (BSP: a compute set's sync runs
#: between its compute and its exchange, so it grows with the layers of a stage).
TRACKS = ("compute", "exchange")


def from_report(report: Any, group: Grouping, tracks: tuple[str, ...] = TRACKS) -> Profile:
    """The :class:`Profile` of a simulated run (a :class:`~ipusim.trace.Report`).

    Args:
        report: the run's report (timing-only is enough).
        group: maps a layer name to its group (None: not part of any group).
        tracks: the trace tracks of a compute set's records that make its seconds.
    """
    kept = str(report.figures().get("trace_detail", ""))
    if "every record" not in kept:
        raise ConfigurationError(
            f"a profile needs every record of the run's compute sets, but its trace kept "
            f"{kept!r}; profile a shorter run (fewer micro-batches) or raise "
            "IPUConfig.ipusim.trace_records"
        )
    records = report.trace.to_dataframe()
    on_ipus = records[records.ipu >= 0]  # the host's records aside
    sides, where, update_s = _times(report, on_ipus, group, tracks)
    fwd, bwd = sides["fwd"], sides["bwd"]
    weights: dict[str, float] = {}
    state: dict[str, float] = {}
    for item in report.memory_items.itertuples():
        name = group(str(item.name).split("/", 1)[0])
        if name is None or item.ipu != where.get(name, item.ipu):  # replica 0's copy only
            continue
        target = weights if item.category == "weights" else state
        if item.category in ("weights", "optimizer-state", "gradient-accumulators"):
            target[name] = target.get(name, 0.0) + float(item.bytes)
    memory = report.memory
    acts = {int(r.ipu): float(r.activations_bytes) for r in memory.itertuples()}
    share = _apportion(fwd, where, acts)
    names = sorted(set(fwd) | set(bwd) | set(weights))
    groups = {
        n: GroupCost(
            fwd.get(n, 0.0),
            bwd.get(n, 0.0),
            weights.get(n, 0.0),
            state.get(n, 0.0),
            share.get(n, 0.0),
            where.get(n, 0),
        )
        for n in names
    }
    ipus = [int(i) for i in memory.ipu]
    fixed = (memory.code_bytes + memory.exchange_buffers_bytes).astype(float)
    ratio = memory.fraction_of_tile_budget / memory.fraction_of_budget.clip(lower=1e-12)
    return Profile(
        groups,
        float(memory.budget_bytes.max()),
        update_s,
        dict(zip(ipus, fixed)),
        acts,
        dict(zip(ipus, ratio.astype(float))),
        1.0 / float(report.throughput_samples_per_s),
        float((report.utilisation.host_io_s + report.utilisation.remote_s).max()),
        _copies_s(on_ipus, "infeed copy"),
        float(records[records.name.isin(HOST_ROUND_TRIP_WORK)].duration_s.sum()),
        _copies_s(on_ipus, "outfeed copy"),
        _links_s(on_ipus),
        _stash_shares(report, acts),
        _update_traffic_s(on_ipus),
        _pair_copies(on_ipus),
    )


def _update_traffic_s(records: Any) -> float:
    """The slowest IPU's seconds of Streaming Memory transfers and collectives (the ``remote``
    and ``link`` tracks but the syncs and copies between pipeline stages)."""
    sync, copy = _between_stages(records)
    moved = records[(records.track == "remote") | ((records.track == "link") & ~(sync | copy))]
    return float(moved.groupby("ipu").duration_s.sum().max()) if len(moved) else 0.0


def _between_stages(records: Any) -> tuple[Any, Any]:
    """Masks of ``records``' inter-IPU syncs and of its copies between pipeline stages (the
    names the engine gives them)."""
    return records.name == "inter-IPU sync", records.name.str.startswith("copy IPU")


#: Copies :attr:`Profile.copies` keeps (E: a Sequential reference's micro-batch copies
#: ``2 (S - 1)``, 14 for BERT-Large's 8 stages).
COPIES_KEPT = 64
_ONE_PAIR = re.compile(r"copy IPU (\d+) -> IPU (\d+)$")


def _pair_copies(records: Any) -> tuple[tuple[int, int, float], ...]:
    """The run's first copies between one pair of IPUs, in time order (each is recorded on
    both its IPUs, at one start)."""
    copies = records[_between_stages(records)[1]].drop_duplicates("start_ps")
    out = []
    for row in copies.sort_values("start_ps").head(COPIES_KEPT).itertuples():
        pair = _ONE_PAIR.match(str(row.name))
        if pair:
            out.append((int(pair[1]), int(pair[2]), float(row.bytes)))
    return tuple(out)


def _links_s(records: Any) -> float:
    """The slowest IPU's inter-IPU sync seconds plus, per step, its longest copy between IPUs
    (every IPU syncs at every step; a copy is recorded on both of its IPUs)."""
    sync, copy = _between_stages(records)
    syncs = records[sync].groupby("ipu").duration_s.sum()
    copies = records[copy]
    longest = copies.groupby("start_ps").duration_s.max().sum() if len(copies) else 0.0
    return float(syncs.max() if len(syncs) else 0.0) + float(longest)


def _stash_shares(report: Any, acts: dict[int, float]) -> dict[int, float]:
    """Per IPU, the share of its live activations (``acts``, bytes) that is the stash."""
    items = report.memory_items
    stash = items[items.name.str.contains(" stash ")].groupby("ipu").bytes.sum()
    return {i: float(stash.get(i, 0.0)) / max(a, 1.0) for i, a in acts.items()}


def _apportion(
    fwd: dict[str, float], where: dict[str, int], acts: dict[int, float]
) -> dict[str, float]:
    """Each IPU's live activations shared over its groups in proportion to forward time."""
    totals: dict[int, float] = {}
    for name, ipu in where.items():
        totals[ipu] = totals.get(ipu, 0.0) + fwd.get(name, 0.0)
    return {
        name: acts.get(ipu, 0.0) * fwd.get(name, 0.0) / totals[ipu]
        for name, ipu in where.items()
        if totals[ipu] > 0
    }


def workload_report(workload: str, args: dict[str, Any]) -> Any:
    """Run a workload (``workloads/NAME.py``) timing-only with the ``[args]`` of a validation
    row, quietly and with its settings restored after, as ``validation/run.py`` runs a row;
    its :class:`~ipusim.trace.Report`."""
    import importlib

    from validation.rows import Row
    from validation.run import quiet_workload

    row = Row(
        id="profile",
        title="planner profile",
        measured=float("nan"),
        flag="E",
        source="ipusim plan",
        workload=workload,
        args=args,
    )
    module = importlib.import_module(f"workloads.{workload}")
    with quiet_workload():
        return module.main(row.argv())


#: Micro-batches per weight update a data-parallel profile runs at most (E: a steady state long
#: before; the trace keeps every record of such a run).
MAX_PROFILE_ACCUMULATION = 256


def one_ipu(
    workload: str,
    args: dict[str, Any],
    group: Grouping,
    mb: int,
    per_replica: int,
    executions: Callable[[int], int] = lambda acc: 1,
) -> tuple[float, ...] | None:
    """A data-parallel configuration (one IPU per replica, ``args["replicas"]`` replicas)
    profiled at micro-batch ``mb`` with ``per_replica`` samples per weight update: its IPU
    bytes, busiest tile over IPU fullness, seconds per micro-batch, seconds per weight update
    besides the micro-batches (update, all-reduce, Streaming Memory traffic), the IPU's budget,
    its weight bytes, its infeed copy seconds per micro-batch and the host's seconds per
    execution; None if it does not fit. The run has ``executions(accumulation)`` weight
    updates, as the candidates (one execution: ``steps_per_execution`` is the run's steps)."""
    # A long accumulation is profiled over its first MAX_PROFILE_ACCUMULATION micro-batches:
    # the per-micro-batch and per-update figures do not depend on the count, and a run of
    # thousands would outgrow the trace's record budget.
    acc = min(per_replica // mb, MAX_PROFILE_ACCUMULATION)
    runs = executions(per_replica // mb)
    run = {**args, "micro-batch": mb, "accumulation": acc, "steps": acc * runs}
    key = (workload, repr(sorted(run.items())))
    p = cached(key, lambda: workload_report(workload, run), group)
    if p is None:
        return None
    total = p.ipu_fixed[0] + p.variable_bytes(p.groups) + p.ipu_activations[0]
    step = p.sample_s * mb * acc * args["replicas"]
    # Three kinds of cost, each scaled as it grows: per micro-batch (the groups' passes, their
    # exchange and syncs, the infeed and outfeed copies: linear in the micro-batch, E), per
    # weight update (the update, its all-reduce and Streaming Memory traffic: fixed) and per
    # execution (the host's round trip: a candidate's step has 1 / executions of it).
    update = min(p.update_s + p.update_traffic_s / runs, step)
    per_run = min(p.execution_s, (step - update) * runs)
    weights = sum(g.weight_bytes for g in p.groups.values())
    per_mb = (step - update - per_run / runs) / acc
    infeed = p.infeed_s / (acc * runs)
    return total, p.ipu_tile_ratio[0], per_mb, update, p.budget_bytes, weights, infeed, per_run


def per_micro_batch(
    workload: str,
    args: dict[str, Any],
    group: Grouping,
    mbs: list[int],
    per_replica: int,
    targets: tuple[int, ...],
    executions: Callable[[int], int] = lambda acc: 1,
) -> dict[int, tuple[float, ...]]:
    """:func:`one_ipu`'s figures for every micro-batch of ``mbs`` (the host's per-execution
    seconds folded into the per-update ones, at that micro-batch's executions): profiled at
    those closest to ``targets`` (or, if one is closest to all, it and its neighbour in
    ``mbs``), the per-micro-batch bytes and seconds interpolated linearly in the micro-batch
    between the two profiled around it (extrapolated from the nearest two outside, E), the
    per-update and per-execution ones too (E: the same at every micro-batch but for the
    update's working memory); with one fitting reference, bytes and seconds per micro-batch
    proportional to it (E); empty when no reference fits. A micro-batch with no gradient
    accumulation is profiled on its own (the optimizer state is then not offloaded: another
    memory plan)."""

    def folded(mb: int, f: tuple[float, ...]) -> tuple[float, ...]:
        return (*f[:3], f[3] + f[7] / executions(per_replica // mb), *f[4:7])

    whole = {}
    if per_replica in mbs:
        mbs = [m for m in mbs if m != per_replica]
        alone = one_ipu(workload, args, group, per_replica, per_replica, executions)
        whole = {per_replica: folded(per_replica, alone)} if alone is not None else {}
    if not mbs:
        return whole
    refs = sorted({min(mbs, key=lambda m: (abs(m - t), m)) for t in targets})
    if len(refs) == 1 and len(mbs) > 1:  # both targets nearest one: profile its neighbour too
        i = mbs.index(refs[0])
        refs = sorted({*refs, mbs[i + 1] if i + 1 < len(mbs) else mbs[i - 1]})
    points = [
        (m, f) for m in refs if (f := one_ipu(workload, args, group, m, per_replica, executions))
    ]
    if not points:
        return whole
    out = dict(whole)
    for mb in mbs:
        if len(points) == 1:
            (m0, f0), k = points[0], mb / points[0][0]
            out[mb] = folded(mb, (f0[0] * k, f0[1], f0[2] * k, *f0[3:6], f0[6] * k, f0[7]))
            continue
        # the two references around mb (the two nearest outside them)
        i = min(max(sum(m <= mb for m, _ in points) - 1, 0), len(points) - 2)
        (m0, f0), (m1, f1) = points[i], points[i + 1]
        out[mb] = folded(mb, lerp(f0, f1, (mb - m0) / (m1 - m0)))
    return out


_CACHE: dict[Hashable, Profile | None] = {}
_SECONDS: list[float] = [0.0]


def cached(
    key: Hashable, run: Callable[[], Any], group: Grouping, tracks: tuple[str, ...] = TRACKS
) -> Profile | None:
    """The profile for ``key`` (the settings that change a layer's cost; with ``group`` and
    ``tracks``, :func:`from_report`'s), simulating ``run()`` (which returns a Report) only the
    first time the key is seen in this process; None when that run does not pass the memory
    check (an :class:`~ipusim.errors.OutOfMemoryError`)."""
    if key not in _CACHE:
        t0 = time.perf_counter()
        try:
            _CACHE[key] = from_report(run(), group, tracks)
        except OutOfMemoryError:
            _CACHE[key] = None
        _SECONDS[0] += time.perf_counter() - t0
    return _CACHE[key]


def profile_seconds() -> float:
    """Seconds this process spent building profiles (the cost of :func:`cached` misses)."""
    return _SECONDS[0]
