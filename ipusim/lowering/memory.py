"""The memory plan of an IPU: what it holds, spread over its tiles, against its SRAM."""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ipusim.cost import constants as C
from ipusim.errors import OutOfMemoryError, OutOfMemoryWarning
from ipusim.kernels.tilemap import spread_over_tiles
from ipusim.lowering.liveness import IPULiveness
from ipusim.lowering.program import IPUMemoryPlan, MemoryItem
from ipusim.lowering.tile_mapping import uniform


def build_plan(
    ipu: int,
    items: list[MemoryItem],
    tiles: int,
    sram_bytes_per_tile: int,
    liveness: IPULiveness | None = None,
    working_upper_bound: bool = False,
) -> IPUMemoryPlan:
    """Wrap ``items`` in a plan; its per-tile bytes are ``liveness``'s map at the worst tile's
    worst program step, or (without a liveness analysis) every item spread evenly over tiles."""
    if liveness is not None:
        per_tile = liveness.tile_bytes
    else:
        sizes = np.array([item.bytes for item in items], dtype=np.int64)
        per_tile = spread_over_tiles(sizes, tiles, C.TILE_MAPPING_GRAIN_BYTES)
    return IPUMemoryPlan(
        ipu=ipu,
        items=tuple(items),
        budget_bytes=tiles * sram_bytes_per_tile,
        tile_bytes=tuple(int(b) for b in per_tile),
        tile_budget_bytes=sram_bytes_per_tile,
        liveness=liveness,
        working_upper_bound=working_upper_bound,
    )


_LOWER_PROPORTION = (
    "lower availableMemoryProportion of matmuls and convolutions "
    "(IPUConfig.matmuls.poplar_options / IPUConfig.convolutions.poplar_options, e.g. "
    "{'availableMemoryProportion': '0.2'}: smaller temporaries for more cycles)"
)
_RECOMPUTE = "recompute activations (allow_recompute with a recomputation mode)"
_SMALLER_BATCH = "use a smaller micro-batch"
_MORE_STAGES = "pipeline the model over more stages (more IPUs)"

#: What to change, by the category of what fills a tile, most effective first.
_ADVICE = {
    "temporaries": (_LOWER_PROPORTION,),
    "activations": (_RECOMPUTE, _SMALLER_BATCH, _MORE_STAGES),
    "stash": (
        _RECOMPUTE,
        "offload activations to Streaming Memory (offload_activations)",
        _SMALLER_BATCH,
    ),
    "weights": (_MORE_STAGES, "use fp16"),
    "optimizer-state": ("offload optimizer state to Streaming Memory", _MORE_STAGES),
    "gradient-accumulators": ("offload the gradient accumulation buffers", _MORE_STAGES),
    "code": (_MORE_STAGES,),
    "exchange-buffers": (_MORE_STAGES,),
}


def _advice(categories: Sequence[str]) -> str:
    ordered = [*categories, "temporaries", "activations", "weights"]
    phrases = [p for c in ordered for p in _ADVICE.get(c, ())]
    return ", or ".join(dict.fromkeys(phrases))


def check_fits(plan: IPUMemoryPlan) -> None:
    """Raise :class:`OutOfMemoryError` when the IPU's total or its fullest tile is over budget.

    The message names the IPU and its total against the budget; when a tile overflows, the tile,
    the program point, the largest items on that tile and what to change.
    """
    max_tile = max(plan.tile_bytes, default=0)
    if plan.total_bytes <= plan.budget_bytes and max_tile <= plan.tile_budget_bytes:
        return
    try:
        _raise_out_of_memory(plan, max_tile)
    except OutOfMemoryError as error:
        if not plan.working_upper_bound or not _resident_fits(plan):
            raise
        warnings.warn(
            f"{error} This IPU runs a recomputing pipeline stage, whose working activations are "
            "an upper bound here (its ops run in graph order, not in the memory-aware order "
            "Poplar schedules, and only the recomputation checkpoints the model declares are "
            "used): what is live throughout fits, so the program may fit on the real system.",
            OutOfMemoryWarning,
            stacklevel=3,
        )


def _resident_fits(plan: IPUMemoryPlan) -> bool:
    """Whether what is live over the whole program fits (the lower bound of the plan)."""
    live = plan.liveness
    resident = sum(i.bytes for i in plan.items if not i.name.endswith("working activations"))
    tiles = 0 if live is None or live.resident_tile_bytes is None else live.resident_tile_bytes
    return resident <= plan.budget_bytes and int(np.max(tiles)) <= plan.tile_budget_bytes


def _raise_out_of_memory(plan: IPUMemoryPlan, max_tile: int) -> None:
    mib = 1024 * 1024
    live = plan.liveness
    if plan.total_bytes <= plan.budget_bytes and live is not None and live.peak_tile >= 0:
        on_tile = ", ".join(
            f"{name} ({category}, {b / 1024:.1f} KiB)"
            for name, category, b in live.peak_tile_items[:5]
        )
        raise OutOfMemoryError(
            f"Out of memory on IPU {plan.ipu}, tile {live.peak_tile}: at program point "
            f"{live.step_label(live.tile_peak_step)} the tile needs {max_tile / 1024:.1f} KiB "
            f"but has {plan.tile_budget_bytes / 1024:.0f} KiB, although the IPU as a whole "
            f"needs only {plan.total_bytes / mib:.1f} of {plan.budget_bytes / mib:.1f} MiB. "
            f"Largest items on tile {live.peak_tile}: {on_tile}. To fit, "
            f"{_advice([c for _, c, _ in live.peak_tile_items[:3]])}."
        )
    largest = ", ".join(
        f"{item.name} ({item.category}, {item.bytes / mib:.1f} MiB)" for item in plan.largest(5)
    )
    by_cat = ", ".join(f"{cat} {b / mib:.1f} MiB" for cat, b in plan.by_category().items() if b)
    where = ""
    if live is not None and live.peak_tile >= 0:
        where = f" on tile {live.peak_tile}"
    raise OutOfMemoryError(
        f"Out of memory on IPU {plan.ipu}: the program needs {plan.total_bytes / mib:.1f} MiB "
        f"(busiest tile {max_tile / 1024:.1f} KiB{where}) but the IPU has "
        f"{plan.budget_bytes / mib:.1f} MiB ({plan.tile_budget_bytes / 1024:.0f} KiB per tile). "
        f"By category: {by_cat}. Largest items: {largest}. To fit, "
        f"{_advice([item.category for item in plan.largest(3)])}."
    )


def code_tiles(supersteps: Sequence[Any], tiles: int) -> np.ndarray:
    """Per tile, the code and vertex state of each distinct compute set on the tiles it runs on.

    A compute set on every tile holds code on every tile. One on ``k`` fewer tiles runs where
    its op's tensors are mapped, and IPU TensorFlow's linear mapping rotates the start tile from
    tensor to tensor, so such compute sets do not all begin at tile 0: each starts at a tile
    derived from the op (CRC-32 of its key, so the same program always maps the same way).
    """
    out = np.zeros(tiles, dtype=np.int64)
    for key, s in _distinct_compute_sets(supersteps).items():
        k = min(s.tiles, tiles)
        if k >= tiles:
            out += C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
            out[0] += (s.tiles - k) * C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
        elif k > 0:
            start = zlib.crc32(repr(key).encode()) % tiles
            out[(start + np.arange(k)) % tiles] += C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
    return out


def _distinct_compute_sets(supersteps: Sequence[Any]) -> dict[tuple, Any]:
    """The first superstep of each distinct (op, phase, tiles, work), by that key: Poplar
    outlines identical sub-graphs (``optimizations.enable_graph_outlining``, on by default), so
    compute sets that do the same work on the same tiles (the layers of a transformer, say)
    share their code."""
    distinct: dict[tuple, Any] = {}
    for s in supersteps:
        distinct.setdefault((s.op, s.phase, s.tiles, s.compute_ps, s.exchange_ps, s.flops), s)
    return distinct


def exchange_tiles(supersteps: Sequence[Any], tiles: int) -> np.ndarray:
    """Per tile, the receive buffers of the largest exchange: per tile what it receives, capped by
    ``EXCHANGE_BUFFER_BYTES_PER_TILE`` (bigger exchanges stream through in passes)."""
    largest, per_tile, used = 0, 0, 0
    for s in supersteps:
        if s.tiles and s.exchange_bytes:
            each = min(-(-s.exchange_bytes // s.tiles), C.EXCHANGE_BUFFER_BYTES_PER_TILE)
            if each * s.tiles > largest:
                largest, per_tile, used = each * s.tiles, each, s.tiles
    out = np.zeros(tiles, dtype=np.int64)
    if used:
        k = min(used, tiles)
        out[:k] = uniform(per_tile, k)
        out[0] += (used - k) * per_tile
    return out


def code_bytes(supersteps: Sequence[Any]) -> int:
    """Code and vertex state of a program's compute sets, with graph outlining (each distinct
    compute set counted once, on the tiles it runs on): the total of :func:`code_tiles`."""
    return sum(
        s.tiles * C.CODE_BYTES_PER_COMPUTE_SET_PER_TILE
        for s in _distinct_compute_sets(supersteps).values()
    )
