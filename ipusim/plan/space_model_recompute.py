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
small ``mlp`` (activations tiny beside the weights) they take more memory, not less. So the
space tries :data:`CHECKPOINT_STAGES` stage counts for one IPU per replica, each profiled as
the data-parallel plans are (the configuration itself at two micro-batches).

**Recomputation mode** (``recomputation-mode``). With the Grouped schedule a pipeline may ask
RecomputeAndBackpropagateInterleaved instead of Auto's RecomputeThenBackpropagate. Without
checkpoints the two stash the same stage inputs and run the same passes; the interleaved mode
recomputes as the backward pass needs its values rather than all at once. M (the simulator,
``mlp`` and ``wide`` on 2 IPUs x 2 replicas, micro-batch 2, accumulation 4): the same
throughput to the last digit and 0.1% (``wide``) to 2.6% (``mlp``) more memory. Never better on those models, so it is not searched (it
would only add dominated plans to simulate); tests/plan/test_plan_model_recompute.py checks
that measurement, so a lowering that makes the mode differ shows up there.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHECKPOINT_STAGES", "checkpoint_args", "checkpoint_gives", "even_split"]

#: Recomputation stages tried on one IPU per replica (0: no checkpoints). E: 2 and 3 cover the
#: measured gain (see the module docstring); each count costs two profile runs per proportion.
CHECKPOINT_STAGES = (0, 2, 3)


def checkpoint_args(names: list[str], stages: int) -> dict[str, Any]:
    """The ``[args]`` running a one-IPU replica as ``stages`` recomputation stages (none for
    0, or when the model has fewer layers): split at even layer counts (E: the layers' stored
    activations are not known before a run; a stage boundary is a checkpoint)."""
    if stages < 2 or stages > len(names):
        return {}
    return {
        "stages": stages,
        "split": even_split(names, stages),
        "device-mapping": [0] * stages,
        "schedule": "sequential",
        "recompute": True,
    }


def checkpoint_gives(extra: dict[str, Any]) -> list[str]:
    """The 'gives up' text of a plan with the checkpoint ``[args]`` ``extra``."""
    if not extra:
        return []
    return [f"recomputes activations between {extra['stages'] - 1} checkpoint(s) on one IPU"]


def even_split(names: list[str], stages: int) -> list[str]:
    """Layer names after which ``stages`` stages of equal layer counts start."""
    n = len(names)
    return [names[(n * s) // stages - 1] for s in range(1, stages)]
