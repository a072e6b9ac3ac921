"""ResNet-50's configuration space: data parallel over every IPU, micro-batch and accumulation
for the global batch, and recomputation checkpoints as a Sequential pipeline whose stages all map
to the replica's one IPU (Graphcore's ResNet-50 recipe for recomputation in IPU TensorFlow).

Estimates come from :class:`~ipusim.plan.profile.Profile` s of ipusim's own lowering: per
(checkpoint count, availableMemoryProportion) setting, the configuration itself at two
micro-batches (:data:`REFERENCE_BATCHES`, the real replicas and global batch). A candidate's
IPU bytes, busiest tile and seconds per micro-batch are interpolated linearly in the
micro-batch between them (extrapolated outside, E); its step is ``accumulation`` micro-batches
plus the weight update and all-reduce measured in the reference, which do not depend on the
micro-batch.
"""

from __future__ import annotations

import itertools
from typing import Any

from ipusim.lowering.supersteps import element_bytes
from ipusim.plan import options, profile
from ipusim.plan.partition import best_splits
from ipusim.plan.space import Candidate, fastest_first

__all__ = ["resnet_candidates", "resnet_group"]

#: The bottleneck blocks of ResNet-50 (Keras names) with their output's size per sample
#: (height x width x channels at 224 x 224 input; S: He et al. 2016, table 1).
BLOCKS = [
    *(f"conv2_block{i}_out" for i in (1, 2, 3)),
    *(f"conv3_block{i}_out" for i in (1, 2, 3, 4)),
    *(f"conv4_block{i}_out" for i in (1, 2, 3, 4, 5, 6)),
    *(f"conv5_block{i}_out" for i in (1, 2, 3)),
]
SIZES = [56 * 56 * 256] * 3 + [28 * 28 * 512] * 4 + [14 * 14 * 1024] * 6 + [7 * 7 * 2048] * 3
#: Recomputation stage counts tried (1 = no recomputation checkpoints).
STAGE_COUNTS = (1, 4, 7)
#: availableMemoryProportion values tried (E: the IPU default 0.6 and the low end Graphcore's
#: CNN and BERT configs use, which leaves room for larger micro-batches).
MEMORY_PROPORTIONS = (0.15, 0.6)
#: availableMemoryProportion values estimated by interpolating the profiled ones (E).
EXTRA_PROPORTIONS = (0.3,)
#: Estimates above this multiple of the budget are pruned (E: the estimates track the memory
#: check within a few percent on tests/plan/test_profile.py's sample, 15% there at most).
PRUNE_FACTOR = 1.15
#: Micro-batches of the two reference runs per setting (E: small enough to fit without
#: recomputation at 224 x 224, far enough apart to give the slope).
REFERENCE_BATCHES = (4, 16)


def checkpoint_splits(stages: int) -> list[str]:
    """Block outputs after which ``stages`` recomputation stages start, balancing the stored
    activations (the sum of block output sizes) over the stages."""
    sizes = SIZES[:-1]  # the last block's output ends the model: never a split

    def stored(first: int, stop: int, stage: int) -> float:
        return float(sum(sizes[first:stop]))

    split = best_splits(len(sizes), stages, stored, lambda a, b, s: True, keep=1)[0]
    return [BLOCKS[b - 1] for b in split.bounds[1:-1]]


def resnet_group(layer: str) -> str | None:
    """The profile group of a ResNet-50 Keras layer: its block (``conv3_block2``), ``stem``
    or ``head``."""
    if layer.startswith(("conv1", "pool1")):
        return "stem"
    if layer.startswith(("avg_pool", "predictions")):
        return "head"
    parts = layer.split("_")
    return "_".join(parts[:2]) if len(parts) > 1 and parts[1].startswith("block") else None


def _args(
    base: dict[str, Any],
    replicas: int,
    mb: int,
    acc: int,
    stages: int,
    proportion: float,
    precision: str,
    steps: int,
) -> dict[str, Any]:
    """A configuration's ``[args]``."""
    cand = dict(base)
    cand.update(
        replicas=replicas,
        **{"micro-batch": mb, "accumulation": acc, "eight-bit-io": True},
        steps=steps,
        precision=precision,
        offload="off",
        stages=1,
        **{"memory-proportion": proportion},
    )
    if stages > 1:
        cand.update(
            stages=stages,
            split=checkpoint_splits(stages),
            **{"device-mapping": [0] * stages},
            schedule="sequential",
            recompute=True,
        )
    return cand


def _executions(accumulation: int) -> int:
    """Weight updates a candidate runs (about 80 micro-batches, as the validation rows)."""
    return max(1, 80 // accumulation)


def resnet_candidates(
    args: dict[str, Any], num_ipus: int, global_batch: int, precision: str
) -> list[Candidate]:
    """ResNet-50 configurations on ``num_ipus`` IPUs estimated to fit within
    :data:`PRUNE_FACTOR`, ordered fastest first (estimates): per
    recomputation setting and availableMemoryProportion (profiled, or interpolated between the
    profiled ones), every micro-batch, optimizer-state setting and (without recomputation
    stages, whose Sequential schedule the simulator does not overlap) I/O tile count."""
    per_replica, rem = divmod(global_batch, num_ipus)
    if rem:
        return []
    out = []
    mbs = [m for m in range(1, min(per_replica, 64) + 1) if per_replica % m == 0]

    def figures(stages: int, proportion: float) -> dict[int, tuple[float, ...]]:
        setting = _args(args, num_ipus, 1, 1, stages, proportion, precision, 1)
        return profile.per_micro_batch(
            "resnet50", setting, resnet_group, mbs, per_replica, REFERENCE_BATCHES, _executions
        )

    spread = options.interpolated(MEMORY_PROPORTIONS, EXTRA_PROPORTIONS)
    for stages, (proportion, lo, hi, w) in itertools.product(STAGE_COUNTS, list(spread)):
        low, high = figures(stages, lo), figures(stages, hi)
        for mb in sorted(set(low) & set(high)):
            fig = options.lerp(low[mb], high[mb], w)
            out += _variants(args, num_ipus, global_batch, precision, stages, proportion, mb, fig)
    kept = [c for c in options.undominated(out) if c.memory <= PRUNE_FACTOR]
    return options.counted(fastest_first(kept), len(out))


def _variants(
    args: dict[str, Any],
    num_ipus: int,
    global_batch: int,
    precision: str,
    stages: int,
    proportion: float,
    mb: int,
    fig: tuple[float, ...],
) -> list[Candidate]:
    """One setting's candidates at micro-batch ``mb`` from its figures ``fig``
    (:func:`~ipusim.plan.profile.one_ipu`'s), for every optimizer-state and I/O tile option."""
    acc = global_batch // (num_ipus * mb)
    cand = _args(args, num_ipus, mb, acc, stages, proportion, precision, acc * _executions(acc))
    gives = "recomputes activations between checkpoints" if stages > 1 else "no recompute"
    sizes = (options.optimizer_slots(args.get("optimizer", "momentum")), element_bytes(precision))
    variants = options.data_parallel_variants(
        fig, acc, str(args["system"]), num_ipus, ("off", False), sizes
    )
    return [
        Candidate.of(
            options.setting_args(cand, state, io),
            global_batch / step,
            "; ".join([gives, *options.gives_up(state, io), "uint8 input cast on the IPU"]),
            used,
            fig[4],
            fig[1],
        )
        for state, io, step, used in variants
        if not (io and stages > 1)
    ]
