"""Recomputation for a user's Keras model beyond on/off: checkpoints, and the recomputation mode.

**Checkpoints.** The planner cannot add ``RecomputationCheckpoint`` layers to a user's model, but
it can cut the model into pipeline stages that all map to the replica's one IPU (stage
assignment, ``device_mapping=[0, ...]``, the Sequential schedule), as ResNet-50's space does
(:mod:`~ipusim.plan.space_resnet`). ipusim's lowering runs those stages one after the other on
IPU 0 and, with ``allow_recompute``, resolves RecomputationMode.Auto for Sequential to
RecomputeAndBackpropagateInterleaved (``ipusim/lowering/recompute.py``): each stage stashes only
its input (the checkpoint) and re-creates its own activations in its backward pass, so at most
one stage's activations are live at once. M (the simulator, tests/plan/_models.py's ``wide`` on
an M2000, 4 replicas, micro-batch 2): 2 checkpoint stages take 9% less memory than no
recomputation, 0.7% slower; 3 and 4 stages a little more memory than 2 and slower again. On the
small ``mlp`` (activations tiny beside the weights) they take more memory, not less; on
``wider`` on one GC200 (no Streaming Memory) they are what makes it fit. So the space tries
:data:`CHECKPOINT_STAGES` stage counts for one IPU per replica, each split profiled as the
data-parallel plans are (the configuration itself at the micro-batches of
:data:`~ipusim.plan.space_model.REFERENCE_BATCHES`): the planner cannot
know the stored activations of a user's layers before a run, so the splits are not balanced
by them as ResNet-50's are, but tried (:data:`SPLITS_TRIED`). Nor after one: the profile shares
an IPU's activations over its layers by forward time, and the simulator's peak with
checkpoints is the largest stage's working activations plus the stashed checkpoints (a cut
after a wide layer stashes a wide tensor). M (tests/plan/_hourglass.py, one GC200,
micro-batch 64, every split simulated): the split balancing the profile's per-layer
activations (:func:`~ipusim.plan.partition.best_splits`) takes 28.3 MB at 2 stages and 31.8 MB
at 3, the even split 25.3 and 27.7 MB, the best 24.1 MB (both cut after a narrow layer); so
a model with more cuts keeps the even split (tests/plan/test_plan_checkpoint_split.py).

**Checkpoints inside a multi-IPU pipeline** (several contiguous stages on one IPU, such as
``device_mapping=[0, 0, 1, 1]``): not searched. M (the simulator, tests/plan/_models.py's models
on an M2000, 2 replicas x 2 IPUs, accumulation 8, recompute on, the stage per layer of
``[0, 0, 1, 1]`` against the same layers as ``[0, 1]``): at micro-batch 16, Grouped, ``wider``
0.4% more bytes and 2.8% slower, ``wide`` 0.7% and 4.3%, ``mlp`` 3.2% and 1.4%; Sequential
``wider`` 0.3% and 1.2%, ``wide`` 0.7% and 1.1%, ``mlp`` 2.3% and 0.9%; at micro-batch 2 the
same signs (``wider`` Sequential 0.05% more bytes, 0.7% slower). Every other split of 3 stages
on 2 IPUs (``[0, 0, 1]``, ``[0, 1, 1]``) likewise takes no fewer bytes than the 2-stage pipeline
holding the same layers per IPU, and is slower. The checkpoint only saves activations, a
small share of these models' IPUs beside their weights, Adam's state and the stashes; an
extra stage adds its own copies and buffers. So stages sharing an IPU take what one stage of
their layers takes, plus 0.05% to 3.2%: :class:`~ipusim.plan.space_model._Pipe` rightly
adds their bytes (one stage's working activations alone would be too few); M (its plans for
4 M2000 IPUs, global batch 64, micro-batch 32, Sequential, recompute on): with stages sharing
IPU 0 (``[0, 1, 0]``) its bytes are 0.74x to 1.01x the simulator's on ``mlp``, 1.01x to 1.07x
on ``wide``, as off as with a stage per IPU (0.79x to 1.10x, 0.99x to 1.08x).
tests/plan/test_plan_model_recompute.py pins that measurement.

**Recomputation mode** (``recomputation-mode``). With the Grouped schedule a pipeline may ask
RecomputeAndBackpropagateInterleaved instead of Auto's RecomputeThenBackpropagate. Without
checkpoints the two stash the same stage inputs and run the same passes; the interleaved mode
recomputes as the backward pass needs its values rather than all at once. M (the simulator,
``mlp`` and ``wide`` on 2 IPUs x 2 replicas, micro-batch 2, accumulation 4): the same
throughput to the last digit and 0.1% (``wide``) to 2.6% (``mlp``) more memory. Never better
on those models, so it is not searched (it would only add dominated plans to simulate);
tests/plan/test_plan_model_recompute.py checks that measurement, so a lowering that makes the
mode differ shows up there.
"""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["CHECKPOINT_STAGES", "checkpoint_gives", "checkpoint_settings", "even_split"]

#: Recomputation stages tried on one IPU per replica. E: 2 and 3 cover the measured gain (see the
#: module docstring); each split tried costs two profile runs per proportion.
CHECKPOINT_STAGES = (2, 3)
#: Splits tried per stage count, at most: every cut of the layers while there are no more, else
#: the even split only (E: M on ``wider``, the cut moves the step by 1.4%, more than the
#: estimates' error; a model with many layers would cost too many profile runs).
SPLITS_TRIED = 4


def checkpoint_settings(names: list[str]) -> list[dict[str, Any]]:
    """The ``[args]`` of a one-IPU replica's recomputation settings: ``{}`` (none), then per
    stage count of :data:`CHECKPOINT_STAGES` (up to the layers) its splits (a stage boundary is
    a checkpoint), the stages all on IPU 0 with the Sequential schedule. With gradient
    accumulation or not: the stages are a pipeline, whose optimizer state is offloaded by
    default wherever there is Streaming Memory and takes the offload and sharding options
    even without accumulation, so the estimate starts from that default
    (``options.data_parallel_variants``' ``pipelined``; M: ``wide`` on an M2000 at
    micro-batch 2 without accumulation, state on chip: 2,508 samples/s estimated against
    2,511 simulated)."""
    out: list[dict[str, Any]] = [{}]
    for stages in (s for s in CHECKPOINT_STAGES if s <= len(names)):
        cuts = list(itertools.combinations(range(1, len(names)), stages - 1))
        splits = [[names[c - 1] for c in cut] for cut in cuts]
        for split in splits if len(splits) <= SPLITS_TRIED else [even_split(names, stages)]:
            out.append(
                {
                    "stages": stages,
                    "split": split,
                    "device-mapping": [0] * stages,
                    "schedule": "sequential",
                    "recompute": True,
                }
            )
    return out


def checkpoint_gives(extra: dict[str, Any]) -> list[str]:
    """The 'gives up' text of a plan with the checkpoint ``[args]`` ``extra``."""
    if not extra:
        return []
    return [f"recomputes activations between {extra['stages'] - 1} checkpoint(s) on one IPU"]


def even_split(names: list[str], stages: int) -> list[str]:
    """Layer names after which ``stages`` stages of equal layer counts start."""
    n = len(names)
    return [names[(n * s) // stages - 1] for s in range(1, stages)]
