"""availableMemoryProportion for a user model's pipelines: a reference run per profiled
proportion, the others interpolated between them (as the data-parallel plans are, with
ResNet-50's :data:`~ipusim.plan.space_resnet.MEMORY_PROPORTIONS` and
:data:`~ipusim.plan.space_resnet.EXTRA_PROPORTIONS`).

The proportion bounds the temporary memory of each matmul and convolution plan per tile
(:func:`ipusim.cost.amp.plan_conv`; the lowering holds at most that share of a tile,
``ipusim/lowering/tile_mapping.py``), so it changes a layer's seconds and working bytes only
where the default plan's temporaries would pass the bound: a step in the proportion, not a
slope. Measured (M) on tests/plan/_models.py's dense models: products up to 4096 wide run
alike from 0.15 to 0.6 at every micro-batch the planner tries (up to 64), and change below
0.15 at micro-batches 32 and 64 (at 0.05: a fifth to a half less live activations, and an 8%
slower forward at 64); 3 x 3 convolutions of 64 to 128 channels at 32 x 32 run alike from 0.15
to 0.6 at micro-batches 1 and 4. So the default's reference is run first and another
proportion's is kept only when it differs: otherwise that proportion's plans are the default's
and the search would simulate duplicates. Interpolating a step is rough in between (E); the
profiled ends are each a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from typing import Any, TypeVar

from ipusim.cost.amp_problem import DEFAULT_MEMORY_PROPORTION
from ipusim.plan import options
from ipusim.plan.space_resnet import EXTRA_PROPORTIONS, MEMORY_PROPORTIONS

__all__ = ["blend", "proportion_references"]

R = TypeVar("R")

#: availableMemoryProportion values profiled for pipelines (as the data-parallel plans).
PROFILED = MEMORY_PROPORTIONS
#: availableMemoryProportion values interpolated between the profiled ones.
INTERPOLATED = EXTRA_PROPORTIONS


def blend(low: R, high: R, w: float) -> R:
    """The dataclass ``low`` with every float field, and every tuple of floats in a dict field,
    moved ``w`` of the way to ``high``'s (the others, such as the system, are ``low``'s)."""
    out: dict[str, Any] = {}
    for f in fields(low):  # type: ignore[arg-type]
        a, b = getattr(low, f.name), getattr(high, f.name)
        if isinstance(a, float):
            out[f.name] = (1 - w) * a + w * b
        elif isinstance(a, dict):
            out[f.name] = {k: options.lerp(v, b[k], w) for k, v in a.items()}
    return replace(low, **out)  # type: ignore[type-var]


def proportion_references(
    run: dict[str, Any], reference: Callable[[dict[str, Any]], R | None]
) -> Iterator[tuple[float, R]]:
    """``(proportion, reference)`` pairs for the pipeline ``run``: ``reference(args)`` of
    ``run`` at each profiled proportion that fits (the default first) and, where both ends fit
    and differ, the interpolated ones. A proportion whose reference equals the default's is left
    out (its plans are the default's)."""
    default = DEFAULT_MEMORY_PROPORTION
    refs = {default: reference({**run, "memory-proportion": default})}
    for p in sorted(set(PROFILED) - {default}):
        ref = reference({**run, "memory-proportion": p})
        refs[p] = None if ref == refs[default] else ref
    for p, ref in refs.items():
        if ref is not None:
            yield p, ref
    for p, lo, hi, w in options.interpolated(PROFILED, INTERPOLATED):
        low, high = refs.get(lo), refs.get(hi)
        if lo != hi and low is not None and high is not None:
            yield p, blend(low, high, w)
