"""The core packages, and plan, sweep and config, type-check under ``mypy --strict`` (issue 25).

The packages and flags are ``[tool.mypy]`` of pyproject.toml, so this test and a developer's
plain ``mypy`` run check the same thing.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ("session", "lowering", "cost", "engine", "trace", "hardware", "graph")
#: Typed as strictly as the core since: the planner, the studies and the IPU configuration.
ALSO_STRICT = ("plan", "sweep", "config")


def test_the_mypy_configuration_covers_the_core_packages_strictly() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert sorted(config["files"]) == sorted(f"ipusim/{name}" for name in CORE + ALSO_STRICT)


def test_the_core_packages_have_no_type_errors(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the [test] extra; install it to type-check")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout
