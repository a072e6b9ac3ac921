"""Pipeline stage balancing against an exhaustive search over every split."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipusim.errors import ConfigurationError
from ipusim.plan.partition import Split, best_splits


def _all_splits(layers: int, stages: int) -> list[tuple[int, ...]]:
    """Every split as its boundaries, by brute force."""
    return [(0, *cuts, layers) for cuts in itertools.combinations(range(1, layers), stages - 1)]


def _model(times: list[int], sizes: list[int], stash: list[int], capacity: int, receive: list[int]):
    """Stage time = the layers' times plus receiving the activation at its first boundary (so
    the total depends on the split); memory = weights + the activation stash times the number
    of stages after it plus one (a stage early in the pipeline keeps more micro-batches)."""

    def stage_time(first: int, stop: int, stage: int) -> float:
        return float(sum(times[first:stop]) + (receive[first] if first else 0))

    def make_fits(stages: int):
        def fits(first: int, stop: int, stage: int) -> bool:
            depth = stages - stage
            return sum(sizes[first:stop]) + depth * sum(stash[first:stop]) <= capacity

        return fits

    return stage_time, make_fits


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    layers=st.integers(1, 9),
    capacity=st.integers(5, 120),
)
def test_the_best_split_is_the_exhaustive_optimum(data, layers: int, capacity: int) -> None:
    stages = data.draw(st.integers(1, layers))
    times = data.draw(st.lists(st.integers(0, 50), min_size=layers, max_size=layers))
    sizes = data.draw(st.lists(st.integers(0, 20), min_size=layers, max_size=layers))
    stash = data.draw(st.lists(st.integers(0, 5), min_size=layers, max_size=layers))
    receive = data.draw(st.lists(st.integers(0, 30), min_size=layers, max_size=layers))
    stage_time, make_fits = _model(times, sizes, stash, capacity, receive)
    fits = make_fits(stages)
    feasible = []
    for bounds in _all_splits(layers, stages):
        parts = list(zip(bounds, bounds[1:]))
        if all(fits(a, b, s) for s, (a, b) in enumerate(parts)):
            spans = [stage_time(a, b, s) for s, (a, b) in enumerate(parts)]
            feasible.append((max(spans), sum(spans), bounds))
    found = best_splits(layers, stages, stage_time, fits, keep=3)
    if not feasible:
        assert found == []
        return
    assert found[0].bottleneck == min(f[0] for f in feasible)
    assert (found[0].bottleneck, found[0].total, found[0].bounds) == min(feasible)
    assert best_splits(layers, stages, stage_time, fits, keep=1) == found[:1]
    # Every split returned is a real, fitting split, with its own figures, best first.
    assert found == sorted(found)
    assert len({s.bounds for s in found}) == len(found) <= min(3, len(feasible))
    for split in found:
        entry = next(f for f in feasible if f[2] == split.bounds)
        assert (split.bottleneck, split.total) == entry[:2]


def test_layers_per_stage_and_stage_of_layer() -> None:
    split = Split(bottleneck=7.0, total=24.0, bounds=(0, 3, 10, 17, 24))
    assert split.layers_per_stage == (3, 7, 7, 7)
    assert split.stage_of_layer()[:4] == (0, 0, 0, 1)
    assert len(split.stage_of_layer()) == 24


def test_balances_a_uniform_model_with_a_heavy_first_layer() -> None:
    # An embedding as heavy as four encoder layers shares IPU 0 with fewer encoders (the shape
    # of Graphcore's hand-tuned BERT-Large split: fewer layers on the embedding's IPU).
    times = [4.0] + [1.0] * 24
    found = best_splits(25, 4, lambda a, b, s: sum(times[a:b]), lambda a, b, s: True)
    assert found[0].bottleneck == 7.0
    assert found[0].layers_per_stage[0] == 4  # the embedding and three encoders


def test_nothing_fits_gives_no_split() -> None:
    # Stages of at most two layers: 4 layers in 2 stages only as 2 + 2; 5 layers not at all.
    assert best_splits(4, 2, lambda a, b, s: 1.0, lambda a, b, s: b - a <= 2, keep=5) == [
        Split(1.0, 2.0, (0, 2, 4))
    ]
    assert best_splits(5, 2, lambda a, b, s: 1.0, lambda a, b, s: b - a <= 2) == []


@pytest.mark.parametrize(
    ("layers", "stages", "keep"), [(3, 4, 1), (0, 1, 1), (3, 0, 1), (3, 1, 0), (True, 1, 1)]
)
def test_bad_counts_are_refused(layers, stages, keep) -> None:
    with pytest.raises(ConfigurationError):
        best_splits(layers, stages, lambda a, b, s: 0.0, lambda a, b, s: True, keep=keep)
