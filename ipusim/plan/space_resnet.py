"""ResNet-50's configuration space: data parallel over every IPU, micro-batch and accumulation
for the global batch, and recomputation checkpoints as a Sequential pipeline whose stages all map
to the replica's one IPU (Graphcore's ResNet-50 recipe for recomputation in IPU TensorFlow).

There is no cheap memory estimate for ResNet yet: each candidate's ``memory`` is its
micro-batch relative to the largest (monotone in the activations the memory check measures, so
a refusal by the check rules out the larger micro-batches of the same family) and the simulator
decides what fits.
"""

from __future__ import annotations

import itertools
from typing import Any

from ipusim.plan.partition import best_splits
from ipusim.plan.space import Candidate

__all__ = ["resnet_candidates"]

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
#: Micro-batch at which the tiles run half as efficiently as at large micro-batches (E).
HALF_EFFICIENCY_BATCH = 4.0


def checkpoint_splits(stages: int) -> list[str]:
    """Block outputs after which ``stages`` recomputation stages start, balancing the stored
    activations (the sum of block output sizes) over the stages."""
    sizes = SIZES[:-1]  # the last block's output ends the model: never a split

    def stored(first: int, stop: int, stage: int) -> float:
        return float(sum(sizes[first:stop]))

    split = best_splits(len(sizes), stages, stored, lambda a, b, s: True, keep=1)[0]
    return [BLOCKS[b - 1] for b in split.bounds[1:-1]]


def resnet_candidates(
    args: dict[str, Any], num_ipus: int, global_batch: int, precision: str
) -> list[Candidate]:
    """ResNet-50 configurations on ``num_ipus`` IPUs, ordered fastest first (estimates)."""
    per_replica, rem = divmod(global_batch, num_ipus)
    if rem:
        return []
    out = []
    mbs = [m for m in range(1, min(per_replica, 64) + 1) if per_replica % m == 0]
    for stages, proportion, mb in itertools.product(STAGE_COUNTS, MEMORY_PROPORTIONS, mbs):
        acc = per_replica // mb
        cand = dict(args)
        cand.update(
            replicas=num_ipus,
            **{"micro-batch": mb, "accumulation": acc, "eight-bit-io": True},
            steps=acc * max(1, 80 // acc),
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
        efficiency = mb / (mb + HALF_EFFICIENCY_BATCH)
        speed = efficiency / (1.0 + 0.05 * (stages > 1))
        gives = "recomputes activations between checkpoints" if stages > 1 else "no recompute"
        out.append(Candidate(cand, mb / 64.0, speed, gives + "; uint8 input cast on the IPU"))
    return sorted(out, key=lambda c: (-c.speed, c.memory, repr(sorted(c.args.items()))))
