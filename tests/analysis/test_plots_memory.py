"""memory_by_category() and tile_histogram(): bars by category, the SRAM lines, bytes per tile."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from matplotlib.lines import Line2D

from analysis import memory_by_category, tile_histogram
from analysis.memory import BUDGET_GID
from ipusim.lowering.program import IPUMemoryPlan, MemoryItem
from ipusim.trace import Report

MIB = 1 << 20


def _lines(fig) -> list[Line2D]:
    return [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == BUDGET_GID]


def _bar_heights(fig) -> dict[str, list[tuple[float, float]]]:
    """Category → (bottom, height) of its bar per IPU."""
    ax = fig.axes[-1]
    return {c.get_label(): [(p.get_y(), p.get_height()) for p in c.patches] for c in ax.containers}


def _legend(fig) -> list[str]:
    return [t.get_text() for t in fig.legends[0].get_texts()]


def _plan(ipu: int, mib: dict[str, float], budget_mib: float, **kw) -> IPUMemoryPlan:
    items = tuple(MemoryItem(c, c, int(v * MIB)) for c, v in mib.items())
    return IPUMemoryPlan(ipu=ipu, items=items, budget_bytes=int(budget_mib * MIB), **kw)


def test_report_memory_with_broken_axis_budget(report_2ipu, tmp_path, check_files) -> None:
    fig = memory_by_category(report_2ipu, tmp_path / "m.png")
    memory_by_category(report_2ipu, tmp_path / "m.svg")
    check_files(tmp_path / "m.png", tmp_path / "m.svg")
    table = report_2ipu.memory
    budget = table.budget_bytes.iloc[0] / MIB
    # The models use < 1 % of SRAM: a short axis above the bars holds the budget line.
    assert len(fig.axes) == 2
    (line,) = _lines(fig)
    assert list(line.get_ydata()) == pytest.approx([budget, budget])
    lo, hi = line.axes.get_ylim()
    assert lo < budget < hi
    data_ax = fig.axes[1]
    assert [t.get_text() for t in data_ax.get_xticklabels()] == ["IPU 0", "IPU 1"]
    assert data_ax.get_ylabel() == "memory (MiB)"
    heights = _bar_heights(fig)
    for category, bars in heights.items():
        column = category.replace("-", "_") + "_bytes"
        assert [h for _, h in bars] == pytest.approx(list(table[column] / MIB))
    assert set(_legend(fig)) == {*heights, line.get_label()}


def test_stacking_and_single_budget_line() -> None:
    plans = [
        _plan(0, {"weights": 3, "activations": 1}, 6),
        _plan(1, {"weights": 1, "code": 2}, 6),
    ]
    fig = memory_by_category(plans)
    assert len(fig.axes) == 1  # 4 of 6 MiB: no break
    assert _bar_heights(fig) == {
        "weights": [(0.0, 3.0), (0.0, 1.0)],
        "activations": [(3.0, 1.0), (1.0, 0.0)],
        "code": [(4.0, 0.0), (1.0, 2.0)],
    }
    (line,) = _lines(fig)
    assert line.get_label() == "SRAM budget (6 MiB)"
    assert list(line.get_ydata()) == [6.0, 6.0]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["4.00 MiB (66.7%)", "3.00 MiB (50%)"]


def test_unequal_budgets_get_one_segment_per_ipu() -> None:
    plans = [_plan(0, {"weights": 3}, 4), _plan(1, {"weights": 3}, 5)]
    fig = memory_by_category(plans)
    segments = _lines(fig)
    assert [list(s.get_ydata()) for s in segments] == [[4.0, 4.0], [5.0, 5.0]]
    assert [list(s.get_xdata()) for s in segments] == [[-0.4, 0.4], [0.6, 1.4]]


def test_tile_histogram_from_a_run(report_2ipu, tmp_path, check_files) -> None:
    fig = tile_histogram(report_2ipu, ipu=1, path=tmp_path / "tiles.png")
    tile_histogram(report_2ipu, ipu=1, path=tmp_path / "tiles.svg")
    check_files(tmp_path / "tiles.png", tmp_path / "tiles.svg")
    plan = report_2ipu.memory_plans[1]
    budget_kib = plan.tile_budget_bytes / 1024
    (line,) = _lines(fig)
    assert list(line.get_xdata()) == pytest.approx([budget_kib, budget_kib])
    data_ax = fig.axes[0]
    assert data_ax.get_xlabel() == "memory per tile (KiB)"
    assert data_ax.get_ylabel() == "tiles"
    assert sum(p.get_height() for p in data_ax.patches) == len(plan.tile_bytes)
    assert fig.get_suptitle() == "Memory per tile, IPU 1"


def test_tile_histogram_counts_by_hand() -> None:
    plan = _plan(0, {"weights": 1}, 1, tile_bytes=(1024, 1024, 1024, 2048), tile_budget_bytes=4096)
    fig = tile_histogram(plan, bins=4)
    ax = fig.axes[0]
    assert len(fig.axes) == 1  # 2 of 4 KiB: no break
    # Bins of 0.5 KiB from 0 to 2 KiB: three tiles of 1 KiB, one of 2 KiB (in the last bin).
    assert [p.get_height() for p in ax.patches] == [0, 0, 3, 1]
    assert [p.get_x() for p in ax.patches] == [0.0, 0.5, 1.0, 1.5]
    (line,) = _lines(fig)
    assert line.get_label() == "per-tile SRAM (4 KiB)"
    assert ax.get_xlim()[1] >= 4.0
    assert "fullest 2.00 KiB (50% of SRAM)" in ax.texts[0].get_text()


def test_tile_histogram_errors(report_2ipu, saved_report_dir, tmp_path) -> None:
    with pytest.raises(ValueError, match=r"ipu=7 has no memory plan.*\[0, 1\]"):
        tile_histogram(report_2ipu, ipu=7)
    old_folder = tmp_path / "old"  # saved before reports kept the tile map
    shutil.copytree(saved_report_dir, old_folder)
    (old_folder / "tiles.csv").unlink()
    with pytest.raises(ValueError, match="no tiles.csv"):
        tile_histogram(Report.load(old_folder))
    with pytest.raises(ValueError, match="no per-tile bytes"):
        tile_histogram(_plan(0, {"weights": 1}, 1))
    with pytest.raises(TypeError, match="trace holds no memory"):
        memory_by_category(report_2ipu.trace)


def test_saved_report_memory_matches_the_live_one(report_2ipu, saved_report_dir) -> None:
    live = _bar_heights(memory_by_category(report_2ipu))
    saved = _bar_heights(memory_by_category(saved_report_dir))
    assert saved.keys() == live.keys()
    for key in live:
        assert np.allclose(saved[key], live[key])
