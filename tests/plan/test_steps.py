"""The planner's pipeline seconds (ipusim/plan/steps.py) against hand-counted timelines, and its
extrapolation against the full walk (against the simulator: tests/plan/test_bert_estimates.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipusim.plan.steps import StageCosts, _walk, copy_seconds, run_seconds


def test_interleaved_by_hand():
    """Two stages on two IPUs, two micro-batches, Interleaved, counted from the schedule's rule (stage s runs F((u - s) / 2) or B((u - 2S + 1 + s) / 2)):
    u0: s0 F0; u1: s1 F0; u2: s0 F1, s1 B0; u3: s0 B0, s1 F1; u4: s1 B1; u5: s0 B1."""
    f, b = (1.0, 2.0), (3.0, 5.0)  # forward, backward of stage 0 / 1
    send = ((0.25, 0.0), (0.0, 0.5))  # stage 0 sends forward 0.25, stage 1 returns 0.5
    costs = StageCosts(((f[0], b[0]), (f[1], b[1])), (0, 1), send, 0.125, 0.0625, 0.03125)
    infeed, outfeed, sync = 0.0625, 0.03125, 0.125
    want = [
        f[0] + infeed + 0.25,  # u0: F0 on s0, copy forward
        f[1],  # u1: s1's forward; nothing to copy (the last stage)
        max(f[0] + infeed, b[1] + outfeed) + 0.5,  # u2: the two copies, the longer waited for
        max(b[0], f[1]),  # u3: s0's backward sends nothing (the first stage)
        b[1] + outfeed + 0.5,  # u4
        b[0],  # u5
    ]
    assert _walk("interleaved", 2, costs) == pytest.approx(sum(want) + 6 * sync, rel=1e-12)


def test_stages_sharing_an_ipu_run_one_after_the_other():
    """Sequential, three stages, the last back on IPU 0: its copies to and from IPU 1 are
    paid, a stage's items on its IPU add up; no copy between stages on one IPU."""
    passes = ((1.0, 2.0), (3.0, 4.0), (0.5, 0.75))
    sends = ((0.1, 0.0), (0.2, 0.3), (0.0, 0.4))
    costs = StageCosts(passes, (0, 1, 0), sends, sync_s=0.01)
    per_micro_batch = sum(f + b for f, b in passes) + 0.1 + 0.2 + 0.3 + 0.4 + 6 * 0.01
    assert run_seconds("sequential", 5, costs) == pytest.approx(5 * per_micro_batch)


def test_copy_seconds_as_the_engine_prices_them():
    """The pair (2r, 2r + 1) at its own bandwidth, other IPUs at a neighbour link's, plus the
    latency; nothing on one IPU."""
    link = (10.0, 40.0, 0.5)
    assert copy_seconds(80.0, 2, 3, link) == 80.0 / 40.0 + 0.5
    assert copy_seconds(80.0, 1, 2, link) == 80.0 / 10.0 + 0.5
    assert copy_seconds(80.0, 1, 1, link) == 0.0
    assert copy_seconds(80.0, 0, 1, (10.0, 0.0, 0.0)) == 8.0


_SECONDS = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.sampled_from(["grouped", "interleaved", "sequential"]),
    st.lists(st.tuples(_SECONDS, _SECONDS, _SECONDS, _SECONDS), min_size=1, max_size=5),
    st.integers(1, 40),
    _SECONDS,
)
def test_a_long_run_is_extrapolated_exactly(schedule, stages, micro_batches, sync):
    """Beyond 2 S + 2 micro-batches the seconds are extrapolated from two walks: the full walk
    gives the same."""
    costs = StageCosts(
        tuple((f, b) for f, b, _, _ in stages),
        tuple(range(len(stages))),
        tuple((s, r) for _, _, s, r in stages),
        sync,
        0.01,
        0.02,
    )
    full = _walk(schedule, micro_batches, costs)
    assert run_seconds(schedule, micro_batches, costs) == pytest.approx(full, rel=1e-9, abs=1e-12)
