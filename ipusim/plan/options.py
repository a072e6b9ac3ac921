"""The options every planner space shares beyond stages and micro-batches, and what each does to
an estimate (arithmetic on a profile, no simulation of its own):

- **Optimizer state** (``offload``, ``sharded-optimizer-state``): on chip the state takes
  ``slots x 4`` bytes per trainable element (the memory plan's figure,
  ``ipusim.lowering.memory``), divided over the replicas when sharded; offloaded it takes none,
  but the weight update loads and stores it from Streaming Memory. The update's collectives and
  Streaming Memory traffic are the simulator's own (:meth:`Distribution.update_instructions`,
  cached per setting), so a candidate's estimate is its profile's step minus the profiled
  setting's transfers plus its own.
- **I/O tiles** (``io-tiles``): the simulator overlaps the infeed copies with compute (no
  ``infeed copy`` on the IPU's timeline) for a single IPU or the Grouped schedule, and maps the
  compute graph to the tiles left (:func:`compute_share`); an estimate takes the profile's
  infeed copy seconds per micro-batch off the step, slows the rest down by
  :func:`io_slowdown` and divides the IPU's bytes by the smaller budget, its busiest tile
  keeping what it held (M: within 1% on the test models).
- **Schedule** (``schedule``): per schedule the micro-batches each stage holds
  (``in_flight`` of the lowering) and the step: the lowering's own time steps
  (``time_steps``), each as long as its busiest IPU, then its longest copy and the sync
  (:mod:`ipusim.plan.steps`; :func:`schedule_seconds` with one overhead per stage and
  micro-batch in place of the copies): Grouped runs ``M + S - 1`` forward steps and as many
  backward steps, Interleaved ``2 (M + S - 1)`` steps mixing the stages' forward and backward
  passes, Sequential every stage one after the other, ``M`` times.
- **availableMemoryProportion** (``memory-proportion``): the spaces profile two values; the
  values between them are interpolated linearly in the proportion (E: PopLibs picks a matmul
  plan per proportion, so seconds and temporaries move in steps, not lines).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ipusim.lowering.schedules import depth_multiple
from ipusim.plan.steps import StageCosts, run_seconds

__all__ = [
    "IO_TILES",
    "Evaluated",
    "bracket",
    "compute_share",
    "counted",
    "interpolated",
    "io_slowdown",
    "data_parallel_variants",
    "gives_up",
    "io_options",
    "setting_args",
    "stage_share",
    "state_variants",
    "undominated",
    "optimizer_slots",
    "schedule_seconds",
    "schedules",
    "state_bytes",
    "state_options",
    "update_transfer_s",
]

#: I/O tiles tried besides none (E: the count ipusim's advice suggests, ipusim.session.advice).
IO_TILES = 32


class Evaluated(list[Any]):
    """Candidates kept, with ``evaluated``: how many candidates were estimated (kept or pruned)."""

    evaluated: int = 0


def counted(kept: list[Any], evaluated: int) -> Evaluated:
    """``kept`` (in order) as an :class:`Evaluated` of ``evaluated`` estimates."""
    out = Evaluated(kept)
    out.evaluated = evaluated
    return out


def state_options(replicas: int, fixed: tuple[str, bool] | None = None) -> list[tuple[str, bool]]:
    """``(offload, sharded)`` choices: offloaded or on chip, sharded only over 2+ replicas
    (``fixed``: that one only, as the workload's arguments ask)."""
    if fixed is not None:
        return [(fixed[0], fixed[1] and replicas > 1)]
    shards = (True, False) if replicas > 1 else (False,)
    return [(offload, shard) for offload in ("on", "off") for shard in shards]


def io_options(overlapping: bool) -> tuple[int, ...]:
    """I/O tile counts worth trying: none, and :data:`IO_TILES` where the simulator overlaps
    the infeed with compute (a single IPU or the Grouped schedule)."""
    return (0, IO_TILES) if overlapping else (0,)


@functools.cache
def compute_share(system: str, io_tiles: int) -> float:
    """The share of an IPU's tiles the compute graph keeps with ``io_tiles`` I/O tiles, as the
    simulator reserves them (:func:`~ipusim.session.plan.reserved_io_tiles`); 1 without."""
    if not io_tiles:
        return 1.0
    from ipusim.hardware import load_system
    from ipusim.session.plan import reserved_io_tiles

    tiles = load_system(system).ipu.tiles
    return (tiles - reserved_io_tiles(io_tiles, tiles)) / tiles


def stage_share(share: float, stage: int, stages: int) -> float:
    """The compute share of ``stage`` of a pipeline of ``stages`` stages on distinct IPUs, I/O
    tiles leaving the compute graph ``share``: the IPUs with host I/O (the first stage's
    infeed, the last's outfeed) keep ``share``, the others all their tiles, as the simulator
    (:attr:`~ipusim.lowering.PipelineSpec.io_ipus`) and IPU TensorFlow reserve them."""
    return share if stage in (0, stages - 1) else 1.0


#: Share of a micro-batch's seconds (its infeed copies aside) that grows in proportion to
#: ``1 / compute_share``: little, as most matmul and convolution plans split their work over
#: whole partitions that fit on the tiles left (M: the simulator with and without 32 I/O tiles
#: on an M2000, fp16.16, one IPU: 0.033 for the BERT-Base of tests/plan/test_options.py at
#: micro-batch 2, 0.032 for ResNet-50 at 224x224, micro-batch 1, 0.002 at 32x32).
TILE_BOUND_SHARE = 0.03


def io_slowdown(share: float) -> float:
    """How much longer a micro-batch's compute takes with ``share`` of the tiles (>= 1)."""
    return 1.0 + TILE_BOUND_SHARE * (1.0 / share - 1.0)


def schedules(stages: int, ipus: int) -> tuple[str, ...]:
    """Schedules of a pipeline of ``stages`` stages over ``ipus`` distinct IPUs: Interleaved
    refuses two stages on one IPU."""
    if stages == 1:
        return ("grouped",)
    return ("grouped", "interleaved", "sequential") if stages == ipus else ("grouped", "sequential")


def accumulation_ok(schedule: str, stages: int, ipus: int, acc: int) -> bool:
    """The pipeline depth rule of IPU TensorFlow (``depth_multiple`` of the lowering)."""
    if stages == 1:
        return True
    need = depth_multiple(schedule, stages, True, ipus)
    return acc >= need and acc % need == 0


def schedule_seconds(
    schedule: str, acc: int, passes: list[tuple[float, float]], overhead: float, stages: int = 0
) -> float:
    """Seconds of ``acc`` micro-batches through stages whose forward and backward passes
    (recomputation included) take ``passes`` seconds, with ``overhead`` seconds of exchange and
    syncs per stage and micro-batch as a Sequential run measures them (two steps: a forward and
    a backward), see the module docstring. Steps run in lock step: a step lasts as long as its
    slowest item. With ``stages`` (more stages than IPUs, some sharing one; not Interleaved),
    ``passes`` are per IPU: the engine runs an IPU's items of a step one after the other.
    One stage per IPU: the lowering's own time steps (:func:`~ipusim.plan.steps.run_seconds`)."""
    stages = stages or len(passes)
    if stages == len(passes):
        no_copies = ((0.0, 0.0),) * stages
        costs = StageCosts(tuple(passes), tuple(range(stages)), no_copies, overhead / 2)
        return run_seconds(schedule, acc, costs)
    fwd, bwd = [f for f, _ in passes], [b for _, b in passes]
    if schedule == "sequential":
        return acc * (sum(fwd) + sum(bwd) + stages * overhead)
    # Grouped: acc + S - 1 forward steps and as many backward steps; a step of the ramp up or
    # down runs only the IPUs that hold a micro-batch (the first or last k; all of them for
    # the ramp's steps beyond the IPUs, when some hold two stages).
    ramp = sum(
        sum(itertools.accumulate(p[:-1], max))
        + sum(itertools.accumulate(p[:0:-1], max))
        + 2 * (stages - len(p)) * max(p)
        for p in (fwd, bwd)
    )
    return (acc - stages + 1) * (max(fwd) + max(bwd)) + ramp + (acc + stages - 1) * overhead


def optimizer_slots(optimizer: object) -> int:
    """Slot arrays per variable of an optimizer, given as a workload's ``--optimizer`` name or
    as an optimizer object (Adam: 2; ``optimizer_cost`` of the graph's update ops)."""
    from ipusim.graph.ops.update import optimizer_cost

    if isinstance(optimizer, str):
        from workloads.common import OPTIMIZERS

        make: Callable[[], object] = OPTIMIZERS[optimizer]  # its lambdas are unannotated
        optimizer = make()
    return optimizer_cost(optimizer)[0]


def state_bytes(elements: float, slots: int, offload: str, shard: bool, replicas: int) -> float:
    """On-chip optimizer-state bytes of ``elements`` trainable elements (fp32 slots, as the
    memory plan holds them): none when offloaded, a replica's share when sharded."""
    if offload == "on":
        return 0.0
    return slots * 4.0 * elements / (replicas if shard else 1)


@functools.cache
def update_transfer_s(
    system: str,
    replicas: int,
    ipr: int,
    setting: tuple[str, bool],
    elements: int,
    sizes: tuple[int, int],
) -> float:
    """Seconds of the collectives and Streaming Memory transfers around one IPU's weight update
    of ``elements`` trainable elements, as the lowering adds them
    (:meth:`~ipusim.lowering.distribution.Distribution.update_instructions`); ``sizes``:
    (slots per variable, bytes per element), ``setting``: (offload, sharded)."""
    from ipusim.hardware import load_system
    from ipusim.lowering.distribution import Distribution, DistributionSpec

    offload, shard = setting[0] == "on", setting[1] and replicas > 1
    if offload and load_system(system).streaming_memory is None:
        return math.inf  # the workload refuses it: no Streaming Memory to offload to
    spec = DistributionSpec(replicas, offload, shard)
    dist = Distribution(spec, load_system(system), ipr, offload, shard)
    slots, element = sizes
    before, after = dist.update_instructions(
        elements * element, slots * 4 * elements, elements * element
    )
    return sum(t.duration_ps for t in (*before, *after)) * 1e-12


def interpolated(
    values: tuple[float, ...], extra: tuple[float, ...], ends: tuple[float, ...] = ()
) -> Iterator[tuple[float, float, float, float]]:
    """``(proportion, low, high, weight)`` for every proportion of ``values`` (profiled) and of
    ``extra`` strictly between the lowest and highest of ``ends`` (default: ``values``),
    interpolated between those two with ``weight`` on the highest."""
    for v in values:
        yield v, v, v, 0.0
    lo, hi = min(ends or values), max(ends or values)
    for v in extra:
        if lo < v < hi:
            yield v, lo, hi, (v - lo) / (hi - lo)


def lerp(low: Iterable[float], high: Iterable[float], w: float) -> tuple[float, ...]:
    """``low`` moved ``w`` of the way to ``high``, element by element (``w`` from
    :func:`interpolated`: 0 gives ``low``, 1 ``high``)."""
    return tuple((1 - w) * a + w * b for a, b in zip(low, high))


def state_variants(
    system: str,
    replicas: int,
    ipr: int,
    reference: tuple[str, bool] | None,
    weight_bytes: float,
    sizes: tuple[int, int],
    fixed: tuple[str, bool] | None = None,
) -> Iterator[tuple[tuple[str, bool], float, float]]:
    """Per optimizer-state setting ``(offload, sharded)``: the bytes and the seconds per weight
    update it adds to the IPU holding ``weight_bytes`` of weights, against the ``reference``
    setting its profile ran (None: the whole bytes and seconds; ``sizes``: slots per variable,
    bytes per element)."""
    slots, element = sizes
    elements = int(weight_bytes / element)

    def cost(s: tuple[str, bool]) -> tuple[float, float]:
        held = state_bytes(elements, slots, s[0], s[1] and replicas > 1, replicas)
        return held, update_transfer_s(system, replicas, ipr, s, elements, sizes)

    ref_bytes, ref_s = cost(reference) if reference is not None else (0.0, 0.0)
    for setting in state_options(replicas, fixed):
        held, seconds = cost(setting)
        if math.isfinite(seconds):
            yield setting, held - ref_bytes, seconds - ref_s


def setting_args(args: dict[str, Any], setting: tuple[str, bool], io_tiles: int) -> dict[str, Any]:
    """``args`` with an optimizer-state setting and I/O tile count (flags left out when off)."""
    out = {**args, "offload": setting[0]}
    out.pop("sharded-optimizer-state", None)
    out.pop("io-tiles", None)
    if setting[1]:
        out["sharded-optimizer-state"] = True
    if io_tiles:
        out["io-tiles"] = io_tiles
    return out


def gives_up(setting: tuple[str, bool], io_tiles: int) -> list[str]:
    """What an optimizer-state setting and I/O tiles trade away, in words."""
    on = setting[0] == "on"
    parts = ["optimizer state streamed from Streaming Memory" if on else "optimizer state on chip"]
    if setting[1]:
        parts.append("optimizer state sharded over the replicas (reduce-scatter, all-gather)")
    if io_tiles:
        parts.append(f"{io_tiles} tiles per IPU reserved for I/O")
    return parts


def data_parallel_variants(
    figures: tuple[float, ...],
    acc: int,
    system: str,
    replicas: int,
    reference: tuple[str, bool],
    sizes: tuple[int, int],
    fixed: tuple[str, bool] | None = None,
    pipelined: bool = False,
) -> Iterator[tuple[tuple[str, bool], int, float, float]]:
    """A single-IPU replica's settings from its profiled ``figures`` (:func:`~ipusim.plan.
    profile.one_ipu`'s, at the ``reference`` setting): ``(setting, io_tiles, seconds per weight
    update, IPU bytes)`` for every optimizer-state setting and I/O tile count (with I/O tiles,
    bytes that give ``Candidate.of`` the larger of the IPU's bytes over the compute tiles'
    budget and its busiest tile, unchanged). Without
    accumulation or pipeline (``acc == 1``, not ``pipelined``) the workloads set no
    optimizer-state option: the state stays on chip, unsharded (IPU TensorFlow's default), as
    profiled. A ``pipelined`` replica (stages all on its IPU) takes the options at any
    accumulation, and its default (the ``reference``) offloads wherever there is Streaming
    Memory (``Distribution.resolve``), with accumulation or not."""
    used, ratio, per_mb, update, _, weights, infeed = figures
    if acc == 1 and not pipelined:
        reference = fixed = ("off", False)
    variants = state_variants(system, replicas, 1, reference, weights, sizes, fixed)
    for setting, more_bytes, more_s in variants:
        for io in io_options(True):
            share = compute_share(system, io)
            step = acc * (per_mb - (infeed if io else 0.0)) * io_slowdown(share)
            held = (used + more_bytes) * max(1.0 / share, ratio) / max(1.0, ratio)
            yield setting, io, step + update + more_s, held


def bracket(value: float, profiled: tuple[float, ...]) -> tuple[float, float, float]:
    """``(low, high, weight)``: the profiled values ``value`` is interpolated between, with
    ``weight`` on ``high`` (a profiled value: itself, weight 0)."""
    if value in profiled:
        return value, value, 0.0
    lo, hi = min(profiled), max(profiled)
    return lo, hi, (value - lo) / (hi - lo)


#: The arguments :func:`undominated` compares siblings over, with how much each asks of the
#: user (fewer wins a tie).
_OPTION_KEYS = ("offload", "sharded-optimizer-state", "io-tiles")


def undominated(cands: list[Any]) -> list[Any]:
    """``cands`` but those another candidate of the same plan (the same arguments but the
    optimizer-state and I/O tile options) dominates: estimated at least as fast with at most
    as much memory, and strictly better in one or asking fewer options (E: the siblings'
    estimates differ only by the arithmetic of this module, which the simulator follows
    within a few percent; an estimate tie is the simulator's too)."""
    groups: dict[str, list[Any]] = {}
    for c in cands:
        groups.setdefault(_plan_key(c), []).append(c)

    def rank(c: Any) -> tuple[float, float, int]:
        return c.speed, -c.memory, -sum(bool(c.args.get(k)) for k in _OPTION_KEYS[1:])

    def beaten(c: Any) -> bool:
        return any(
            d.speed >= c.speed and d.memory <= c.memory and rank(d) > rank(c)
            for d in groups[_plan_key(c)]
        )

    return [c for c in cands if not beaten(c)]


def _plan_key(c: Any) -> str:
    """A candidate's arguments but its optimizer-state and I/O tile options."""
    return repr(sorted((k, v) for k, v in c.args.items() if k not in _OPTION_KEYS))
