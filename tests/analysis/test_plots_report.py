"""plot_report(), loading sources, the shared style, and no pyplot state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from matplotlib.colors import to_rgba

from analysis import load, plot_report, style
from ipusim.lowering.program import MEMORY_CATEGORIES
from ipusim.trace import TRACE_PHASES, Report, Trace
from ipusim.trace.reports import UTILISATION_STATES

ROOT = Path(__file__).resolve().parents[2]


def test_plot_report_of_a_run_writes_every_figure(report_2ipu, tmp_path, check_files) -> None:
    written = plot_report(report_2ipu, tmp_path / "figs")
    assert set(written) == {"timeline", "utilisation", "memory", "tile_memory", "liveness"}
    for name, paths in written.items():
        assert paths == [tmp_path / "figs" / f"{name}.png", tmp_path / "figs" / f"{name}.svg"]
        check_files(*paths)


def test_plot_report_of_a_folder_has_every_figure(saved_report_dir, tmp_path, check_files) -> None:
    """A saved report keeps its tile map and liveness (tiles.csv, liveness.csv)."""
    written = plot_report(saved_report_dir, tmp_path / "out", formats=("png",))
    assert set(written) == {"timeline", "utilisation", "memory", "tile_memory", "liveness"}
    check_files(*(p for paths in written.values() for p in paths))


def test_plot_report_of_a_trace_file(report_1ipu, tmp_path, check_files) -> None:
    path = report_1ipu.trace.save(tmp_path / "trace.npz")
    written = plot_report(path, tmp_path / "t", formats="svg")
    assert set(written) == {"timeline", "utilisation"}
    check_files(*(p for paths in written.values() for p in paths))


def test_plot_report_rejects_unknown_formats(report_1ipu, tmp_path) -> None:
    with pytest.raises(
        ValueError, match=r"formats must be some of \('png', 'svg'\); got \['pdf'\]"
    ):
        plot_report(report_1ipu, tmp_path, formats=("pdf",))


def test_load_reads_folders_and_trace_files(report_1ipu, saved_report_dir, tmp_path) -> None:
    assert isinstance(load(saved_report_dir), Report)
    trace_path = report_1ipu.trace.save(tmp_path / "one.npz")
    assert load(trace_path) == report_1ipu.trace
    assert load(report_1ipu) is report_1ipu
    with pytest.raises(FileNotFoundError, match="no report folder or trace file"):
        load(tmp_path / "missing")
    with pytest.raises(TypeError, match="got int"):
        load(3)
    assert isinstance(load(report_1ipu.trace), Trace)


def test_every_phase_state_and_category_has_its_own_colour() -> None:
    for names, colours in (
        (TRACE_PHASES, style.PHASE_COLOURS),
        (UTILISATION_STATES, style.STATE_COLOURS),
        (MEMORY_CATEGORIES, style.CATEGORY_COLOURS),
    ):
        assert set(names) <= set(colours)
        rgba = [to_rgba(colours[n]) for n in names]
        assert len(set(rgba)) == len(rgba)
    assert set(style.PHASE_LABELS) == set(TRACE_PHASES)


@pytest.mark.parametrize(
    ("span_s", "unit"), [(2.0, "s"), (0.0883, "ms"), (1e-3, "ms"), (5e-5, "µs"), (3e-8, "ns")]
)
def test_time_unit_follows_the_range(span_s: float, unit: str) -> None:
    assert style.time_unit(span_s)[0] == unit


def test_no_module_of_analysis_uses_pyplot() -> None:
    # Figures come from matplotlib.figure.Figure with an Agg canvas: no global pyplot state.
    sources = sorted((ROOT / "analysis").glob("*.py"))
    assert len(sources) >= 8
    for path in sources:
        text = path.read_text(encoding="utf-8")
        assert not re.search(
            r"import\s+matplotlib\.pyplot|from\s+matplotlib\s+import\s+pyplot", text
        )
        assert "matplotlib.use(" not in text, path.name
