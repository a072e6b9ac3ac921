"""The planner's figure: every simulated plan drawn where its table row says, the best starred."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.plan import plan_figure


def _offsets(ax, label):
    (points,) = [c for c in ax.collections if c.get_label() == label]
    return np.asarray(points.get_offsets())


def test_points_follow_the_table():
    table = pd.DataFrame(
        {
            "throughput": [900.0, 700.0, 0.0],
            "fits": [True, True, False],
            "ipus_per_replica": [4, 1, 8],
            "memory_used": [0.9, 0.5, 1.2],
        }
    )
    by_ipus, by_headroom = plan_figure(table).axes
    np.testing.assert_allclose(_offsets(by_ipus, "fits"), [[4, 900], [1, 700]])
    np.testing.assert_allclose(_offsets(by_ipus, "refused"), [[8, 0]])
    np.testing.assert_allclose(_offsets(by_headroom, "fits"), [[0.1, 900], [0.5, 700]])
    np.testing.assert_allclose(_offsets(by_headroom, "refused"), [[-0.2, 0]])
    np.testing.assert_allclose(_offsets(by_headroom, "best"), [[0.1, 900]])
    assert [t.get_text() for t in by_ipus.get_xticklabels()] == ["1", "4", "8"]


def test_no_best_when_nothing_fits():
    table = pd.DataFrame(
        {"throughput": [0.0], "fits": [False], "ipus_per_replica": [2], "memory_used": [1.5]}
    )
    (by_ipus, _) = plan_figure(table).axes
    assert "best" not in [c.get_label() for c in by_ipus.collections]
