"""ipusim type-checks under ``mypy --strict`` (issue 25), all of it but the Numba kernels.

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


def test_the_mypy_configuration_is_strict_on_all_of_ipusim_but_the_kernels() -> None:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["files"] == ["ipusim"]
    silenced = [o["module"] for o in mypy["overrides"] if o.get("ignore_errors")]
    assert silenced == [["ipusim.kernels.*"]]


def test_ipusim_has_no_type_errors(tmp_path: Path) -> None:
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
