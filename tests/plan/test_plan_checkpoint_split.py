"""Why a user's model with many layers gets only the even checkpoint split, not one balancing
its layers' activations (space_model_recompute's docstring): on tests/plan/_hourglass.py's
model (one GC200, micro-batch 64) every split of 2 and 3 recomputation stages is simulated.
The split whose largest stage holds the fewest of the profile's per-layer activations (the
classic partition, :func:`~ipusim.plan.partition.best_splits`) takes more memory than the even
split: the simulator's peak is the largest stage's working activations plus the stashed
checkpoints, and a cut after a wide layer stashes a wide tensor; the profile shares an IPU's
activations over its layers by forward time, not by what each layer keeps."""

from __future__ import annotations

import itertools

import pytest

from ipusim.plan import profile
from ipusim.plan.partition import best_splits
from ipusim.plan.search import measure
from ipusim.plan.space_model import layer_names
from ipusim.plan.space_model_recompute import even_split

MODEL = "tests.plan._hourglass:hourglass"
BASE = {"system": "IPU", "model": MODEL, "precision": "fp16.16", "replicas": 1}
BASE |= {"micro-batch": 64, "accumulation": 2, "steps": 16, "offload": "off"}
BASE |= {"memory-proportion": 0.15, "stages": 1}


def _bytes(split: list[str]) -> float:
    """Simulated bytes of the one IPU with recomputation stages cut after ``split``."""
    stages = len(split) + 1
    args = BASE | {"stages": stages, "split": split, "device-mapping": [0] * stages}
    result = measure("keras_model", args | {"schedule": "sequential", "recompute": True})
    assert result["error"] == ""
    return result["ipu_bytes"]


@pytest.mark.parametrize("stages", [2, 3])
def test_balancing_the_profiled_activations_is_no_better_than_the_even_split(stages):
    names = layer_names(MODEL)
    assert len(names) > 5  # more cuts than SPLITS_TRIED at 2 and 3 stages
    # the profile the data-parallel space runs: no checkpoints, one group per layer
    run = profile.from_report(profile.workload_report("keras_model", BASE), lambda n: n)
    acts = [run.groups[n].activation_bytes for n in names]
    top = best_splits(len(names), stages, lambda a, b, s: sum(acts[a:b]), lambda *_: True)[0]
    balanced = [names[b - 1] for b in top.bounds[1:-1]]
    cuts = itertools.combinations(range(1, len(names)), stages - 1)
    simulated = {tuple(names[c - 1] for c in cut): 0.0 for cut in cuts}
    for split in simulated:
        simulated[split] = _bytes(list(split))
    even = simulated[tuple(even_split(names, stages))]
    assert simulated[tuple(balanced)] > even
    # the smallest cuts after a narrow layer (d3: 16 units), keeping both wide layers together
    assert min(simulated, key=simulated.__getitem__)[0] == "d3"
