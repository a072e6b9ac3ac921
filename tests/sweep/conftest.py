"""Fixtures shared by the sweep tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def markers(tmp_path, monkeypatch):
    """A folder where every toy workload call leaves a file (see _workloads.py), named by
    ``SWEEP_TEST_MARKERS`` for this test."""
    folder = tmp_path / "markers"
    folder.mkdir()
    monkeypatch.setenv("SWEEP_TEST_MARKERS", str(folder))
    return folder
