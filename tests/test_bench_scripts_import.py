"""Every script in bench/ imports as ``python bench/<script>.py`` would run it.

The bench scripts are run by hand (their figures go to bench/results/), so nothing else would
notice a script whose imports broke, for instance when a module it reaches through ``sys.path``
moves. Each script is loaded in a fresh interpreter, from a directory outside the repository,
with only its own directory on ``sys.path`` (as ``python <path>`` sets it up) and a run name
other than ``__main__``, so its imports and module-level set-up run but not its benchmark.
Scripts that import TensorFlow at module level run only in the separate TensorFlow environment
and are left out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "bench").rglob("*.py") if "results" not in p.parts)

_LOAD = """
import runpy, sys
script = sys.argv[1]
sys.path[0] = sys.argv[2]
runpy.run_path(script, run_name="bench_import_check")
"""


def _imports_tensorflow_at_module_level(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "tensorflow" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tensorflow":
            return True
    return False


def test_the_bench_folder_has_scripts() -> None:
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_bench_script_imports(script: Path, tmp_path: Path) -> None:
    if _imports_tensorflow_at_module_level(script):
        pytest.skip(f"{script.name} imports TensorFlow (it runs in the TensorFlow environment)")
    result = subprocess.run(
        [sys.executable, "-c", _LOAD, str(script), str(script.parent)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
