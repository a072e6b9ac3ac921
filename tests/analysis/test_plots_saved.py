"""A saved report keeps what the memory figures need: the plans rebuilt from a folder hold the
run's per-tile bytes and liveness, and ipusim plot draws every figure from the folder."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from analysis import plot_report
from analysis.saved import saved_plans
from ipusim.trace import Report
from workloads import mnist_pipelined


@pytest.fixture(scope="module")
def run_and_folder(tmp_path_factory):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        report = mnist_pipelined.main(["--timing-only", "--steps", "16"])
    folder = report.save(tmp_path_factory.mktemp("r") / "report")
    return report, folder


def test_plans_rebuilt_from_a_folder_are_the_runs(run_and_folder):
    report, folder = run_and_folder
    rebuilt = {p.ipu: p for p in saved_plans(Report.load(folder))}
    original = {p.ipu: p for p in report.memory_plans if p.tile_bytes}
    assert sorted(rebuilt) == sorted(original) == [0, 1]
    for ipu, plan in original.items():
        again = rebuilt[ipu]
        assert again.tile_bytes == tuple(plan.tile_bytes)
        assert again.tile_budget_bytes == plan.tile_budget_bytes
        assert again.budget_bytes == plan.budget_bytes
        assert again.total_bytes == plan.total_bytes
        live, back = plan.liveness, again.liveness
        assert back.step_names == live.step_names and back.peak_step == live.peak_step
        assert back.tile_peak_step == live.tile_peak_step
        for category, series in live.by_category.items():
            np.testing.assert_array_equal(back.by_category[category], series)


def test_plot_draws_every_figure_from_a_folder(run_and_folder, tmp_path):
    _, folder = run_and_folder
    written = plot_report(folder, tmp_path, formats=("png",))
    assert set(written) == {"timeline", "utilisation", "memory", "tile_memory", "liveness"}
    for paths in written.values():
        assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
